// atax (PolyBench): y = A^T (A x), A is 70 x 84.
func.func @kernel(%A: memref<70x84xf64>, %x: memref<84xf64>, %y: memref<84xf64>, %tmp: memref<70xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  affine.for %j = 0 to 84 {
    affine.store %zero, %y[%j] : memref<84xf64>
  }
  affine.for %i = 0 to 70 {
    %t = affine.for %j = 0 to 84 iter_args(%acc = %zero) -> (f64) {
      %a = affine.load %A[%i, %j] : memref<70x84xf64>
      %v = affine.load %x[%j] : memref<84xf64>
      %p = arith.mulf %a, %v : f64
      %s = arith.addf %acc, %p : f64
      affine.yield %s : f64
    }
    affine.store %t, %tmp[%i] : memref<70xf64>
    affine.for %j = 0 to 84 {
      %a = affine.load %A[%i, %j] : memref<70x84xf64>
      %o = affine.load %y[%j] : memref<84xf64>
      %p = arith.mulf %a, %t : f64
      %s = arith.addf %o, %p : f64
      affine.store %s, %y[%j] : memref<84xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<70x84xf64>
  %x = memref.alloc() : memref<84xf64>
  %y = memref.alloc() : memref<84xf64>
  %t = memref.alloc() : memref<70xf64>
  %a = memref.cast %A : memref<70x84xf64> to memref<?x?xf64>
  %vx = memref.cast %x : memref<84xf64> to memref<?xf64>
  %vy = memref.cast %y : memref<84xf64> to memref<?xf64>
  %vt = memref.cast %t : memref<70xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill1(%vx, %c2) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %x, %y, %t) : (memref<70x84xf64>, memref<84xf64>, memref<84xf64>, memref<70xf64>) -> ()
  func.call @check1(%vy) : (memref<?xf64>) -> ()
  func.call @check1(%vt) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<70x84xf64>
  memref.dealloc %x : memref<84xf64>
  memref.dealloc %y : memref<84xf64>
  memref.dealloc %t : memref<70xf64>
  return
}
