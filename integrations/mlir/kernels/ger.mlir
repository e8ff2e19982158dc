// Rank-1 update and scaling: A += x y^T, then every column scaled by s,
// A is 60 x 75.
func.func @kernel(%A: memref<60x75xf64>, %x: memref<60xf64>, %y: memref<75xf64>, %s: memref<75xf64>)
    attributes {passthrough = ["noinline"]} {
  affine.for %i = 0 to 60 {
    %xi = affine.load %x[%i] : memref<60xf64>
    affine.for %j = 0 to 75 {
      %a = affine.load %A[%i, %j] : memref<60x75xf64>
      %yj = affine.load %y[%j] : memref<75xf64>
      %p = arith.mulf %xi, %yj : f64
      %n = arith.addf %a, %p : f64
      affine.store %n, %A[%i, %j] : memref<60x75xf64>
    }
  }
  affine.for %i = 0 to 60 {
    affine.for %j = 0 to 75 {
      %a = affine.load %A[%i, %j] : memref<60x75xf64>
      %sj = affine.load %s[%j] : memref<75xf64>
      %n = arith.mulf %a, %sj : f64
      affine.store %n, %A[%i, %j] : memref<60x75xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %A = memref.alloc() : memref<60x75xf64>
  %x = memref.alloc() : memref<60xf64>
  %y = memref.alloc() : memref<75xf64>
  %s = memref.alloc() : memref<75xf64>
  %a = memref.cast %A : memref<60x75xf64> to memref<?x?xf64>
  %vx = memref.cast %x : memref<60xf64> to memref<?xf64>
  %vy = memref.cast %y : memref<75xf64> to memref<?xf64>
  %vs = memref.cast %s : memref<75xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill1(%vx, %c2) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vy, %c3) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vs, %c4) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %x, %y, %s) : (memref<60x75xf64>, memref<60xf64>, memref<75xf64>, memref<75xf64>) -> ()
  func.call @check2(%a) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<60x75xf64>
  memref.dealloc %x : memref<60xf64>
  memref.dealloc %y : memref<75xf64>
  memref.dealloc %s : memref<75xf64>
  return
}
