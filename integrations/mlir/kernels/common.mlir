// Shared by every kernel (the harness, python/mlbridge/mlir, appends it to
// the kernel's file): deterministic inputs and order-sensitive checksums
// of dynamically shaped f64 buffers, and the report hook the C driver
// (driver.c) defines.

func.func private @report(f64)

// m[i] = ((i * 7 + seed) mod 17) / 17 - 0.5
func.func @fill1(%m: memref<?xf64>, %seed: index) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %m, %c0 : memref<?xf64>
  %c17 = arith.constant 17.0 : f64
  %half = arith.constant 0.5 : f64
  affine.for %i = 0 to %n {
    %v = affine.apply affine_map<(d0)[s0] -> ((d0 * 7 + s0) mod 17)>(%i)[%seed]
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f64
    %x = arith.divf %vf, %c17 : f64
    %y = arith.subf %x, %half : f64
    affine.store %y, %m[%i] : memref<?xf64>
  }
  return
}

// m[i][j] = ((i * 7 + j * 3 + seed) mod 19) / 19 - 0.5
func.func @fill2(%m: memref<?x?xf64>, %seed: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n0 = memref.dim %m, %c0 : memref<?x?xf64>
  %n1 = memref.dim %m, %c1 : memref<?x?xf64>
  %c19 = arith.constant 19.0 : f64
  %half = arith.constant 0.5 : f64
  affine.for %i = 0 to %n0 {
    affine.for %j = 0 to %n1 {
      %v = affine.apply affine_map<(d0, d1)[s0] -> ((d0 * 7 + d1 * 3 + s0) mod 19)>(%i, %j)[%seed]
      %vi = arith.index_cast %v : index to i64
      %vf = arith.sitofp %vi : i64 to f64
      %x = arith.divf %vf, %c19 : f64
      %y = arith.subf %x, %half : f64
      affine.store %y, %m[%i, %j] : memref<?x?xf64>
    }
  }
  return
}

// m[i][j][k] = ((i * 5 + j * 3 + k + seed) mod 23) / 23 - 0.5
func.func @fill3(%m: memref<?x?x?xf64>, %seed: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n0 = memref.dim %m, %c0 : memref<?x?x?xf64>
  %n1 = memref.dim %m, %c1 : memref<?x?x?xf64>
  %n2 = memref.dim %m, %c2 : memref<?x?x?xf64>
  %c23 = arith.constant 23.0 : f64
  %half = arith.constant 0.5 : f64
  affine.for %i = 0 to %n0 {
    affine.for %j = 0 to %n1 {
      affine.for %k = 0 to %n2 {
        %v = affine.apply affine_map<(d0, d1, d2)[s0] -> ((d0 * 5 + d1 * 3 + d2 + s0) mod 23)>(%i, %j, %k)[%seed]
        %vi = arith.index_cast %v : index to i64
        %vf = arith.sitofp %vi : i64 to f64
        %x = arith.divf %vf, %c23 : f64
        %y = arith.subf %x, %half : f64
        affine.store %y, %m[%i, %j, %k] : memref<?x?x?xf64>
      }
    }
  }
  return
}

// Reports sum over i of m[i] * (i mod 13 + 1).
func.func @check1(%m: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %m, %c0 : memref<?xf64>
  %zero = arith.constant 0.0 : f64
  %s = affine.for %i = 0 to %n iter_args(%acc = %zero) -> (f64) {
    %w = affine.apply affine_map<(d0) -> (d0 mod 13 + 1)>(%i)
    %wi = arith.index_cast %w : index to i64
    %wf = arith.sitofp %wi : i64 to f64
    %x = affine.load %m[%i] : memref<?xf64>
    %p = arith.mulf %x, %wf : f64
    %a = arith.addf %acc, %p : f64
    affine.yield %a : f64
  }
  func.call @report(%s) : (f64) -> ()
  return
}

func.func @check2(%m: memref<?x?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n0 = memref.dim %m, %c0 : memref<?x?xf64>
  %n1 = memref.dim %m, %c1 : memref<?x?xf64>
  %lin = memref.collapse_shape %m [[0, 1]] : memref<?x?xf64> into memref<?xf64>
  func.call @check1(%lin) : (memref<?xf64>) -> ()
  return
}

func.func @check3(%m: memref<?x?x?xf64>) {
  %lin = memref.collapse_shape %m [[0, 1, 2]] : memref<?x?x?xf64> into memref<?xf64>
  func.call @check1(%lin) : (memref<?xf64>) -> ()
  return
}
