"""The `pto` ops, one module per family (the same families as `tileir.bindings`).

| module        | ops                                                                 |
|---------------|---------------------------------------------------------------------|
| `base`        | `TileOp`, `OneTileOp`, `TileToTileOp`, `TileResults`; verifier helpers |
| `structure`   | kernel yield loop loop_unroll stage transfer stitch                 |
| `memory`      | tensor view assemble reshape transpose concat unsqueeze expand_clone |
| `elementwise` | cast, unary, binary and compare ops, full where                     |
| `reduce`      | sum amax amin                                                       |
| `matmul`      | matmul                                                              |
| `gather`      | gathermask gather index_select topk                                 |
| `control`     | is_loop_begin is_loop_end set_vec_tile_shapes set_cube_tile_shapes set_semantic_label set_options |

`tileir.dialect.pto` assembles the `Dialect` from them and re-exports every name.
"""
