// jacobi-2d (PolyBench): 6 time steps of a 5-point stencil, 42 x 42, A <-> B.
func.func @kernel(%A: memref<42x42xf64>, %B: memref<42x42xf64>)
    attributes {passthrough = ["noinline"]} {
  %fifth = arith.constant 0.2 : f64
  affine.for %t = 0 to 6 {
    affine.for %i = 1 to 41 {
      affine.for %j = 1 to 41 {
        %c = affine.load %A[%i, %j] : memref<42x42xf64>
        %w = affine.load %A[%i, %j - 1] : memref<42x42xf64>
        %e = affine.load %A[%i, %j + 1] : memref<42x42xf64>
        %n = affine.load %A[%i - 1, %j] : memref<42x42xf64>
        %s = affine.load %A[%i + 1, %j] : memref<42x42xf64>
        %s1 = arith.addf %c, %w : f64
        %s2 = arith.addf %s1, %e : f64
        %s3 = arith.addf %s2, %n : f64
        %s4 = arith.addf %s3, %s : f64
        %r = arith.mulf %fifth, %s4 : f64
        affine.store %r, %B[%i, %j] : memref<42x42xf64>
      }
    }
    affine.for %i = 1 to 41 {
      affine.for %j = 1 to 41 {
        %c = affine.load %B[%i, %j] : memref<42x42xf64>
        %w = affine.load %B[%i, %j - 1] : memref<42x42xf64>
        %e = affine.load %B[%i, %j + 1] : memref<42x42xf64>
        %n = affine.load %B[%i - 1, %j] : memref<42x42xf64>
        %s = affine.load %B[%i + 1, %j] : memref<42x42xf64>
        %s1 = arith.addf %c, %w : f64
        %s2 = arith.addf %s1, %e : f64
        %s3 = arith.addf %s2, %n : f64
        %s4 = arith.addf %s3, %s : f64
        %r = arith.mulf %fifth, %s4 : f64
        affine.store %r, %A[%i, %j] : memref<42x42xf64>
      }
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<42x42xf64>
  %B = memref.alloc() : memref<42x42xf64>
  %a = memref.cast %A : memref<42x42xf64> to memref<?x?xf64>
  %b = memref.cast %B : memref<42x42xf64> to memref<?x?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill2(%b, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %B) : (memref<42x42xf64>, memref<42x42xf64>) -> ()
  func.call @check2(%a) : (memref<?x?xf64>) -> ()
  func.call @check2(%b) : (memref<?x?xf64>) -> ()
  memref.dealloc %A : memref<42x42xf64>
  memref.dealloc %B : memref<42x42xf64>
  return
}
