// 2-D convolution, 3 x 3 filter, valid padding: 34 x 34 image -> 32 x 32.
func.func @kernel(%I: memref<34x34xf64>, %K: memref<3x3xf64>, %O: memref<32x32xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      %acc = affine.for %p = 0 to 3 iter_args(%a0 = %zero) -> (f64) {
        %row = affine.for %q = 0 to 3 iter_args(%a1 = %a0) -> (f64) {
          %x = affine.load %I[%i + %p, %j + %q] : memref<34x34xf64>
          %w = affine.load %K[%p, %q] : memref<3x3xf64>
          %m = arith.mulf %x, %w : f64
          %s = arith.addf %a1, %m : f64
          affine.yield %s : f64
        }
        affine.yield %row : f64
      }
      affine.store %acc, %O[%i, %j] : memref<32x32xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %I = memref.alloc() : memref<34x34xf64>
  %K = memref.alloc() : memref<3x3xf64>
  %O = memref.alloc() : memref<32x32xf64>
  %i = memref.cast %I : memref<34x34xf64> to memref<?x?xf64>
  %k = memref.cast %K : memref<3x3xf64> to memref<?x?xf64>
  %o = memref.cast %O : memref<32x32xf64> to memref<?x?xf64>
  func.call @fill2(%i, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%k, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%I, %K, %O) : (memref<34x34xf64>, memref<3x3xf64>, memref<32x32xf64>) -> ()
  func.call @check2(%o) : (memref<?x?xf64>) -> ()
  memref.dealloc %I : memref<34x34xf64>
  memref.dealloc %K : memref<3x3xf64>
  memref.dealloc %O : memref<32x32xf64>
  return
}
