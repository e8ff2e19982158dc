// bicg (PolyBench): s = r^T A, q = A p, A is 76 x 66.
func.func @kernel(%A: memref<76x66xf64>, %s: memref<66xf64>, %q: memref<76xf64>,
                  %p: memref<66xf64>, %r: memref<76xf64>)
    attributes {passthrough = ["noinline"]} {
  %zero = arith.constant 0.0 : f64
  affine.for %j = 0 to 66 {
    affine.store %zero, %s[%j] : memref<66xf64>
  }
  affine.for %i = 0 to 76 {
    %ri = affine.load %r[%i] : memref<76xf64>
    %qi = affine.for %j = 0 to 66 iter_args(%acc = %zero) -> (f64) {
      %a = affine.load %A[%i, %j] : memref<76x66xf64>
      %sj = affine.load %s[%j] : memref<66xf64>
      %ra = arith.mulf %ri, %a : f64
      %ns = arith.addf %sj, %ra : f64
      affine.store %ns, %s[%j] : memref<66xf64>
      %pj = affine.load %p[%j] : memref<66xf64>
      %ap = arith.mulf %a, %pj : f64
      %n = arith.addf %acc, %ap : f64
      affine.yield %n : f64
    }
    affine.store %qi, %q[%i] : memref<76xf64>
  }
  return
}

func.func @run() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %A = memref.alloc() : memref<76x66xf64>
  %s = memref.alloc() : memref<66xf64>
  %q = memref.alloc() : memref<76xf64>
  %p = memref.alloc() : memref<66xf64>
  %r = memref.alloc() : memref<76xf64>
  %a = memref.cast %A : memref<76x66xf64> to memref<?x?xf64>
  %vs = memref.cast %s : memref<66xf64> to memref<?xf64>
  %vq = memref.cast %q : memref<76xf64> to memref<?xf64>
  %vp = memref.cast %p : memref<66xf64> to memref<?xf64>
  %vr = memref.cast %r : memref<76xf64> to memref<?xf64>
  func.call @fill2(%a, %c1) : (memref<?x?xf64>, index) -> ()
  func.call @fill1(%vp, %c2) : (memref<?xf64>, index) -> ()
  func.call @fill1(%vr, %c3) : (memref<?xf64>, index) -> ()
  func.call @kernel(%A, %s, %q, %p, %r) : (memref<76x66xf64>, memref<66xf64>, memref<76xf64>, memref<66xf64>, memref<76xf64>) -> ()
  func.call @check1(%vs) : (memref<?xf64>) -> ()
  func.call @check1(%vq) : (memref<?xf64>) -> ()
  memref.dealloc %A : memref<76x66xf64>
  memref.dealloc %s : memref<66xf64>
  memref.dealloc %q : memref<76xf64>
  memref.dealloc %p : memref<66xf64>
  memref.dealloc %r : memref<76xf64>
  return
}
