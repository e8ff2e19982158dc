// jacobi-1d (PolyBench): 20 time steps of a 3-point stencil, N = 400.
func.func @kernel(%A: memref<400xf64>, %B: memref<400xf64>)
    attributes {passthrough = ["noinline"]} {
  %third = arith.constant 0.33333 : f64
  affine.for %t = 0 to 20 {
    affine.for %i = 1 to 399 {
      %l = affine.load %A[%i - 1] : memref<400xf64>
      %c = affine.load %A[%i] : memref<400xf64>
      %r = affine.load %A[%i + 1] : memref<400xf64>
      %s1 = arith.addf %l, %c : f64
      %s2 = arith.addf %s1, %r : f64
      %v = arith.mulf %third, %s2 : f64
      affine.store %v, %B[%i] : memref<400xf64>
    }
    affine.for %i = 1 to 399 {
      %l = affine.load %B[%i - 1] : memref<400xf64>
      %c = affine.load %B[%i] : memref<400xf64>
      %r = affine.load %B[%i + 1] : memref<400xf64>
      %s1 = arith.addf %l, %c : f64
      %s2 = arith.addf %s1, %r : f64
      %v = arith.mulf %third, %s2 : f64
      affine.store %v, %A[%i] : memref<400xf64>
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<400xf64>
  %B = memref.alloc() : memref<400xf64>
  %a = memref.cast %A : memref<400xf64> to memref<?xf64>
  %b = memref.cast %B : memref<400xf64> to memref<?xf64>
  func.call @fill1(%a, %c1) : (memref<?xf64>, index) -> ()
  func.call @fill1(%b, %c2) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %B) : (memref<400xf64>, memref<400xf64>) -> ()
  func.call @check1(%a) : (memref<?xf64>) -> ()
  func.call @check1(%b) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<400xf64>
  memref.dealloc %B : memref<400xf64>
  return
}
