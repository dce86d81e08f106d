// The generic form that tileir-opt prints is accepted by the real MLIR (mlir-opt from
// Debian's mlir-22-tools), and what mlir-opt prints back parses again in tileir.
// REQUIRES: mlir-opt
// RUN: tileir-opt %repo/tests/filecheck/dialect/all_ops.mlir --print-op-generic | %mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | tileir-opt | filecheck %repo/tests/filecheck/dialect/all_ops.mlir
