// 1-D convolution with a 7-tap filter, 1000 outputs, 4 channels summed.
func.func @kernel(%X: memref<4x1006xf64>, %W: memref<4x7xf64>, %Y: memref<1000xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 1000 {
    affine.store %zero, %Y[%i] : memref<1000xf64>
  }
  affine.for %c = 0 to 4 {
    affine.for %i = 0 to 1000 {
      %y = affine.load %Y[%i] : memref<1000xf64>
      %acc = affine.for %k = 0 to 7 iter_args(%a = %y) -> (f64) {
        %x = affine.load %X[%c, %i + %k] : memref<4x1006xf64>
        %w = affine.load %W[%c, %k] : memref<4x7xf64>
        %m = arith.mulf %x, %w : f64
        %s = arith.addf %a, %m : f64
        affine.yield %s : f64
      }
      affine.store %acc, %Y[%i] : memref<1000xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %X = memref.alloc() : memref<4x1006xf64>
  %W = memref.alloc() : memref<4x7xf64>
  %Y = memref.alloc() : memref<1000xf64>
  %x = memref.cast %X : memref<4x1006xf64> to memref<?x?xf64>
  %w = memref.cast %W : memref<4x7xf64> to memref<?x?xf64>
  %y = memref.cast %Y : memref<1000xf64> to memref<?xf64>
  func.call @fill2(%x, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%w, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%X, %W, %Y) : (memref<4x1006xf64>, memref<4x7xf64>, memref<1000xf64>) -> ()
  func.call @check1(%y) : (memref<?xf64>) -> ()
  memref.dealloc %X : memref<4x1006xf64>
  memref.dealloc %W : memref<4x7xf64>
  memref.dealloc %Y : memref<1000xf64>
  return
}
