// syrk (PolyBench): C = alpha A A^T + beta C on the lower triangle (j <= i),
// N = 40, M = 30: trip counts of the j loops depend on i.
func.func @kernel(%A: memref<40x30xf64>, %C: memref<40x40xf64>)
    attributes {passthrough = ["noinline"]} {
  %alpha = arith.constant 1.5 : f64
  %beta = arith.constant 1.2 : f64
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %c = affine.load %C[%i, %j] : memref<40x40xf64>
      %cb = arith.mulf %c, %beta : f64
      affine.store %cb, %C[%i, %j] : memref<40x40xf64>
    }
    affine.for %k = 0 to 30 {
      %aik = affine.load %A[%i, %k] : memref<40x30xf64>
      %aa = arith.mulf %alpha, %aik : f64
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
        %ajk = affine.load %A[%j, %k] : memref<40x30xf64>
        %p = arith.mulf %aa, %ajk : f64
        %c = affine.load %C[%i, %j] : memref<40x40xf64>
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<40x40xf64>
      }
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<40x30xf64>
  %C = memref.alloc() : memref<40x40xf64>
  %a = memref.cast %A : memref<40x30xf64> to memref<?x?xf64>
  %c = memref.cast %C : memref<40x40xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%c, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %C) : (memref<40x30xf64>, memref<40x40xf64>) -> ()
  func.call @check2(%c) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<40x30xf64>
  memref.dealloc %C : memref<40x40xf64>
  return
}
