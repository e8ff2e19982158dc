// Row sums and row maxima of a 64 x 100 matrix (reductions with iter_args).
func.func @kernel(%A: memref<64x100xf64>, %S: memref<64xf64>, %M: memref<64xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  %low = arith.constant -1.0e300 : f64
  affine.for %i = 0 to 64 {
    %s = affine.for %j = 0 to 100 iter_args(%acc = %zero) -> (f64) {
      %x = affine.load %A[%i, %j] : memref<64x100xf64>
      %n = arith.addf %acc, %x : f64
      affine.yield %n : f64
    }
    affine.store %s, %S[%i] : memref<64xf64>
    %m = affine.for %j = 0 to 100 iter_args(%acc = %low) -> (f64) {
      %x = affine.load %A[%i, %j] : memref<64x100xf64>
      %n = arith.maximumf %acc, %x : f64
      affine.yield %n : f64
    }
    affine.store %m, %M[%i] : memref<64xf64>
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %A = memref.alloc() : memref<64x100xf64>
  %S = memref.alloc() : memref<64xf64>
  %M = memref.alloc() : memref<64xf64>
  %a = memref.cast %A : memref<64x100xf64> to memref<?x?xf64>
  %s = memref.cast %S : memref<64xf64> to memref<?xf64>
  %m = memref.cast %M : memref<64xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %S, %M) : (memref<64x100xf64>, memref<64xf64>, memref<64xf64>) -> ()
  func.call @check1(%s) : (memref<?xf64>) -> ()
  func.call @check1(%m) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<64x100xf64>
  memref.dealloc %S : memref<64xf64>
  memref.dealloc %M : memref<64xf64>
  return
}
