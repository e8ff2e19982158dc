// heat-3d (PolyBench): 4 time steps of a 7-point stencil on 14^3, A <-> B.
func.func @step(%A: memref<14x14x14xf64>, %B: memref<14x14x14xf64>) {
  %c = arith.constant 0.125 : f64
  %two = arith.constant 2.0 : f64
  affine.for %i = 1 to 13 {
    affine.for %j = 1 to 13 {
      affine.for %k = 1 to 13 {
        %x = affine.load %A[%i, %j, %k] : memref<14x14x14xf64>
        %x2 = arith.mulf %two, %x : f64
        %ip = affine.load %A[%i + 1, %j, %k] : memref<14x14x14xf64>
        %im = affine.load %A[%i - 1, %j, %k] : memref<14x14x14xf64>
        %jp = affine.load %A[%i, %j + 1, %k] : memref<14x14x14xf64>
        %jm = affine.load %A[%i, %j - 1, %k] : memref<14x14x14xf64>
        %kp = affine.load %A[%i, %j, %k + 1] : memref<14x14x14xf64>
        %km = affine.load %A[%i, %j, %k - 1] : memref<14x14x14xf64>
        %a1 = arith.addf %ip, %im : f64
        %a2 = arith.subf %a1, %x2 : f64
        %b1 = arith.addf %jp, %jm : f64
        %b2 = arith.subf %b1, %x2 : f64
        %d1 = arith.addf %kp, %km : f64
        %d2 = arith.subf %d1, %x2 : f64
        %t1 = arith.addf %a2, %b2 : f64
        %t2 = arith.addf %t1, %d2 : f64
        %t3 = arith.mulf %c, %t2 : f64
        %r = arith.addf %t3, %x : f64
        affine.store %r, %B[%i, %j, %k] : memref<14x14x14xf64>
      }
    }
  }
  return
}

func.func @kernel(%A: memref<14x14x14xf64>, %B: memref<14x14x14xf64>)
    attributes {passthrough = ["noinline"]} {
  affine.for %t = 0 to 4 {
    func.call @step(%A, %B) : (memref<14x14x14xf64>, memref<14x14x14xf64>) -> ()
    func.call @step(%B, %A) : (memref<14x14x14xf64>, memref<14x14x14xf64>) -> ()
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %A = memref.alloc() : memref<14x14x14xf64>
  %B = memref.alloc() : memref<14x14x14xf64>
  %a = memref.cast %A : memref<14x14x14xf64> to memref<?x?x?xf64>
  %b = memref.cast %B : memref<14x14x14xf64> to memref<?x?x?xf64>
  func.call @fill3(%a, %c1) : (memref<?x?x?xf64>, index) -> ()
  func.call @fill3(%b, %c1) : (memref<?x?x?xf64>, index) -> ()
  func.call @kernel(%A, %B) : (memref<14x14x14xf64>, memref<14x14x14xf64>) -> ()
  func.call @check3(%a) : (memref<?x?x?xf64>) -> ()
  memref.dealloc %A : memref<14x14x14xf64>
  memref.dealloc %B : memref<14x14x14xf64>
  return
}
