// mvt (PolyBench): x1 += A y1, x2 += A^T y2, N = 90.
func.func @kernel(%A: memref<90x90xf64>, %x1: memref<90xf64>, %x2: memref<90xf64>,
                  %y1: memref<90xf64>, %y2: memref<90xf64>)
    attributes {passthrough = ["noinline"]} {
  affine.for %i = 0 to 90 {
    affine.for %j = 0 to 90 {
      %a = affine.load %A[%i, %j] : memref<90x90xf64>
      %y = affine.load %y1[%j] : memref<90xf64>
      %x = affine.load %x1[%i] : memref<90xf64>
      %p = arith.mulf %a, %y : f64
      %s = arith.addf %x, %p : f64
      affine.store %s, %x1[%i] : memref<90xf64>
    }
  }
  affine.for %i = 0 to 90 {
    affine.for %j = 0 to 90 {
      %a = affine.load %A[%j, %i] : memref<90x90xf64>
      %y = affine.load %y2[%j] : memref<90xf64>
      %x = affine.load %x2[%i] : memref<90xf64>
      %p = arith.mulf %a, %y : f64
      %s = arith.addf %x, %p : f64
      affine.store %s, %x2[%i] : memref<90xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %A = memref.alloc() : memref<90x90xf64>
  %x1 = memref.alloc() : memref<90xf64>
  %x2 = memref.alloc() : memref<90xf64>
  %y1 = memref.alloc() : memref<90xf64>
  %y2 = memref.alloc() : memref<90xf64>
  %a = memref.cast %A : memref<90x90xf64> to memref<?x?xf64>
  %vx1 = memref.cast %x1 : memref<90xf64> to memref<?xf64>
  %vx2 = memref.cast %x2 : memref<90xf64> to memref<?xf64>
  %vy1 = memref.cast %y1 : memref<90xf64> to memref<?xf64>
  %vy2 = memref.cast %y2 : memref<90xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill1(%vx1, %c2) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vx2, %c3) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vy1, %c4) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vy2, %c5) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %x1, %x2, %y1, %y2) : (memref<90x90xf64>, memref<90xf64>, memref<90xf64>, memref<90xf64>, memref<90xf64>) -> ()
  func.call @check1(%vx1) : (memref<?xf64>) -> ()
  func.call @check1(%vx2) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<90x90xf64>
  memref.dealloc %x1 : memref<90xf64>
  memref.dealloc %x2 : memref<90xf64>
  memref.dealloc %y1 : memref<90xf64>
  memref.dealloc %y2 : memref<90xf64>
  return
}
