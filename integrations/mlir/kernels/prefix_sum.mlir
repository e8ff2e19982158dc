// Running sums along the rows and then the columns of a 50 x 50 matrix
// (loop-carried through memory: each element reads the one just written).
func.func @kernel(%A: memref<50x50xf64>) attributes {passthrough = ["noinline"]} {
  affine.for %i = 0 to 50 {
    affine.for %j = 1 to 50 {
      %p = affine.load %A[%i, %j - 1] : memref<50x50xf64>
      %c = affine.load %A[%i, %j] : memref<50x50xf64>
      %s = arith.addf %p, %c : f64
      affine.store %s, %A[%i, %j] : memref<50x50xf64>
    }
  }
  affine.for %i = 1 to 50 {
    affine.for %j = 0 to 50 {
      %p = affine.load %A[%i - 1, %j] : memref<50x50xf64>
      %c = affine.load %A[%i, %j] : memref<50x50xf64>
      %s = arith.addf %p, %c : f64
      affine.store %s, %A[%i, %j] : memref<50x50xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %A = memref.alloc() : memref<50x50xf64>
  %a = memref.cast %A : memref<50x50xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A) : (memref<50x50xf64>) -> ()
  func.call @check2(%a) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<50x50xf64>
  return
}
