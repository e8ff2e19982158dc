// gemm: C = alpha * A * B + beta * C (PolyBench gemm), 40 x 48 x 36.
func.func @kernel(%A: memref<40x36xf64>, %B: memref<36x48xf64>, %C: memref<40x48xf64>)
    attributes {passthrough = ["noinline"]} {
  %alpha = arith.constant 1.5 : f64
  %beta = arith.constant 1.2 : f64
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 48 {
      %c = affine.load %C[%i, %j] : memref<40x48xf64>
      %cb = arith.mulf %c, %beta : f64
      affine.store %cb, %C[%i, %j] : memref<40x48xf64>
    }
    affine.for %k = 0 to 36 {
      affine.for %j = 0 to 48 {
        %a = affine.load %A[%i, %k] : memref<40x36xf64>
        %aa = arith.mulf %alpha, %a : f64
        %b = affine.load %B[%k, %j] : memref<36x48xf64>
        %p = arith.mulf %aa, %b : f64
        %c = affine.load %C[%i, %j] : memref<40x48xf64>
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<40x48xf64>
      }
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %A = memref.alloc() : memref<40x36xf64>
  %B = memref.alloc() : memref<36x48xf64>
  %C = memref.alloc() : memref<40x48xf64>
  %a = memref.cast %A : memref<40x36xf64> to memref<?x?xf64>
  %b = memref.cast %B : memref<36x48xf64> to memref<?x?xf64>
  %c = memref.cast %C : memref<40x48xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%b, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%c, %c3) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %B, %C) : (memref<40x36xf64>, memref<36x48xf64>, memref<40x48xf64>) -> ()
  func.call @check2(%c) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<40x36xf64>
  memref.dealloc %B : memref<36x48xf64>
  memref.dealloc %C : memref<40x48xf64>
  return
}
