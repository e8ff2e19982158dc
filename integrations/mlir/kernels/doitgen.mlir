// doitgen (PolyBench): A[r][q][:] = A[r][q][:] x C4, R = 10, Q = 8, P = 24.
func.func @kernel(%A: memref<10x8x24xf64>, %C4: memref<24x24xf64>, %sum: memref<24xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  affine.for %r = 0 to 10 {
    affine.for %q = 0 to 8 {
      affine.for %p = 0 to 24 {
        %s = affine.for %s0 = 0 to 24 iter_args(%acc = %zero) -> (f64) {
          %a = affine.load %A[%r, %q, %s0] : memref<10x8x24xf64>
          %c = affine.load %C4[%s0, %p] : memref<24x24xf64>
          %m = arith.mulf %a, %c : f64
          %n = arith.addf %acc, %m : f64
          affine.yield %n : f64
        }
        affine.store %s, %sum[%p] : memref<24xf64>
      }
      affine.for %p = 0 to 24 {
        %v = affine.load %sum[%p] : memref<24xf64>
        affine.store %v, %A[%r, %q, %p] : memref<10x8x24xf64>
      }
    }
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %A = memref.alloc() : memref<10x8x24xf64>
  %C = memref.alloc() : memref<24x24xf64>
  %S = memref.alloc() : memref<24xf64>
  %a = memref.cast %A : memref<10x8x24xf64> to memref<?x?x?xf64>
  %c = memref.cast %C : memref<24x24xf64> to memref<?x?xf64>
  func.call @fill3(%a, %c1) : (memref<?x?x?xf64>, index) -> ()
  func.call @fill2(%c, %c2) : (memref<?x?xf64>, index) -> ()
  func.call @kernel(%A, %C, %S) : (memref<10x8x24xf64>, memref<24x24xf64>, memref<24xf64>) -> ()
  func.call @check3(%a) : (memref<?x?x?xf64>) -> ()
  memref.dealloc %A : memref<10x8x24xf64>
  memref.dealloc %C : memref<24x24xf64>
  memref.dealloc %S : memref<24xf64>
  return
}
