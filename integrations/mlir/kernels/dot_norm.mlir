// Reductions over vectors of 3000: dot product, squared norm, sum of
// absolute differences (one loop each, all with iter_args).
func.func @kernel(%x: memref<3000xf64>, %y: memref<3000xf64>, %out: memref<3xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  %d = affine.for %i = 0 to 3000 iter_args(%acc = %zero) -> (f64) {
    %a = affine.load %x[%i] : memref<3000xf64>
    %b = affine.load %y[%i] : memref<3000xf64>
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %p : f64
    affine.yield %s : f64
  }
  %n = affine.for %i = 0 to 3000 iter_args(%acc = %zero) -> (f64) {
    %a = affine.load %x[%i] : memref<3000xf64>
    %p = arith.mulf %a, %a : f64
    %s = arith.addf %acc, %p : f64
    affine.yield %s : f64
  }
  %l = affine.for %i = 0 to 3000 iter_args(%acc = %zero) -> (f64) {
    %a = affine.load %x[%i] : memref<3000xf64>
    %b = affine.load %y[%i] : memref<3000xf64>
    %df = arith.subf %a, %b : f64
    %ab = math.absf %df : f64
    %s = arith.addf %acc, %ab : f64
    affine.yield %s : f64
  }
  affine.store %d, %out[0] : memref<3xf64>
  affine.store %n, %out[1] : memref<3xf64>
  affine.store %l, %out[2] : memref<3xf64>
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %X = memref.alloc() : memref<3000xf64>
  %Y = memref.alloc() : memref<3000xf64>
  %O = memref.alloc() : memref<3xf64>
  %x = memref.cast %X : memref<3000xf64> to memref<?xf64>
  %y = memref.cast %Y : memref<3000xf64> to memref<?xf64>
  %o = memref.cast %O : memref<3xf64> to memref<?xf64>
  func.call @fill1(%x, %c1) : (memref<?xf64>, index) -> ()
  func.call @fill1(%y, %c2) : (memref<?xf64>, index) -> ()
  func.call @kernel(%X, %Y, %O) : (memref<3000xf64>, memref<3000xf64>, memref<3xf64>) -> ()
  func.call @check1(%o) : (memref<?xf64>) -> ()
  memref.dealloc %X : memref<3000xf64>
  memref.dealloc %Y : memref<3000xf64>
  memref.dealloc %O : memref<3xf64>
  return
}
