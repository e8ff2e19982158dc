// gesummv (PolyBench): y = alpha A x + beta B x, N = 72.
func.func @kernel(%A: memref<72x72xf64>, %B: memref<72x72xf64>, %x: memref<72xf64>, %y: memref<72xf64>)
    attributes {passthrough = ["noinline"]} {
  %alpha = arith.constant 1.5 : f64
  %beta = arith.constant 1.2 : f64
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 72 {
    %r:2 = affine.for %j = 0 to 72 iter_args(%t = %zero, %u = %zero) -> (f64, f64) {
      %a = affine.load %A[%i, %j] : memref<72x72xf64>
      %b = affine.load %B[%i, %j] : memref<72x72xf64>
      %v = affine.load %x[%j] : memref<72xf64>
      %av = arith.mulf %a, %v : f64
      %bv = arith.mulf %b, %v : f64
      %t1 = arith.addf %t, %av : f64
      %u1 = arith.addf %u, %bv : f64
      affine.yield %t1, %u1 : f64, f64
    }
    %at = arith.mulf %alpha, %r#0 : f64
    %bu = arith.mulf %beta, %r#1 : f64
    %s = arith.addf %at, %bu : f64
    affine.store %s, %y[%i] : memref<72xf64>
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %A = memref.alloc() : memref<72x72xf64>
  %B = memref.alloc() : memref<72x72xf64>
  %x = memref.alloc() : memref<72xf64>
  %y = memref.alloc() : memref<72xf64>
  %a = memref.cast %A : memref<72x72xf64> to memref<?x?xf64>
  %b = memref.cast %B : memref<72x72xf64> to memref<?x?xf64>
  %vx = memref.cast %x : memref<72xf64> to memref<?xf64>
  %vy = memref.cast %y : memref<72xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%b, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @fill1(%vx, %c3) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %B, %x, %y) : (memref<72x72xf64>, memref<72x72xf64>, memref<72xf64>, memref<72xf64>) -> ()
  func.call @check1(%vy) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<72x72xf64>
  memref.dealloc %B : memref<72x72xf64>
  memref.dealloc %x : memref<72xf64>
  memref.dealloc %y : memref<72xf64>
  return
}
