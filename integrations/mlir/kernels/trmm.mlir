// trmm (PolyBench): B = alpha A^T B with A unit lower triangular, M = 36,
// N = 44: the k loop runs from i + 1 to M.
func.func @kernel(%A: memref<36x36xf64>, %B: memref<36x44xf64>)
    attributes {passthrough = ["noinline"]} {
  %alpha = arith.constant 1.5 : f64
  affine.for %i = 0 to 36 {
    affine.for %j = 0 to 44 {
      %b0 = affine.load %B[%i, %j] : memref<36x44xf64>
      %s = affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to 36 iter_args(%acc = %b0) -> (f64) {
        %a = affine.load %A[%k, %i] : memref<36x36xf64>
        %b = affine.load %B[%k, %j] : memref<36x44xf64>
        %p = arith.mulf %a, %b : f64
        %n = arith.addf %acc, %p : f64
        affine.yield %n : f64
      }
      %r = arith.mulf %alpha, %s : f64
      affine.store %r, %B[%i, %j] : memref<36x44xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<36x36xf64>
  %B = memref.alloc() : memref<36x44xf64>
  %a = memref.cast %A : memref<36x36xf64> to memref<?x?xf64>
  %b = memref.cast %B : memref<36x44xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%b, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %B) : (memref<36x36xf64>, memref<36x44xf64>) -> ()
  func.call @check2(%b) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<36x36xf64>
  memref.dealloc %B : memref<36x44xf64>
  return
}
