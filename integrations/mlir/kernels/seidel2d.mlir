// seidel-2d (PolyBench): 4 in-place sweeps of a 9-point stencil, 34 x 34
// (each point reads values written in the same sweep).
func.func @kernel(%A: memref<34x34xf64>) attributes {passthrough = ["noinline"]} {
  %ninth = arith.constant 0.111111 : f64
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 33 {
      affine.for %j = 1 to 33 {
        %a0 = affine.load %A[%i - 1, %j - 1] : memref<34x34xf64>
        %a1 = affine.load %A[%i - 1, %j] : memref<34x34xf64>
        %a2 = affine.load %A[%i - 1, %j + 1] : memref<34x34xf64>
        %a3 = affine.load %A[%i, %j - 1] : memref<34x34xf64>
        %a4 = affine.load %A[%i, %j] : memref<34x34xf64>
        %a5 = affine.load %A[%i, %j + 1] : memref<34x34xf64>
        %a6 = affine.load %A[%i + 1, %j - 1] : memref<34x34xf64>
        %a7 = affine.load %A[%i + 1, %j] : memref<34x34xf64>
        %a8 = affine.load %A[%i + 1, %j + 1] : memref<34x34xf64>
        %s1 = arith.addf %a0, %a1 : f64
        %s2 = arith.addf %s1, %a2 : f64
        %s3 = arith.addf %s2, %a3 : f64
        %s4 = arith.addf %s3, %a4 : f64
        %s5 = arith.addf %s4, %a5 : f64
        %s6 = arith.addf %s5, %a6 : f64
        %s7 = arith.addf %s6, %a7 : f64
        %s8 = arith.addf %s7, %a8 : f64
        %r = arith.mulf %s8, %ninth : f64
        affine.store %r, %A[%i, %j] : memref<34x34xf64>
      }
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %A = memref.alloc() : memref<34x34xf64>
  %a = memref.cast %A : memref<34x34xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A) : (memref<34x34xf64>) -> ()
  func.call @check2(%a) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<34x34xf64>
  return
}
