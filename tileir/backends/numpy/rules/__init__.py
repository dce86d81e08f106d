"""The numpy rules of the `pto` ops that are PyPTO functions, one module per family
(the families of `tileir.bindings`, whose `numpy=` fields point here). A rule lowers one
op into a step over the interpreter's environment; what the op computes is its function in
`tileir.backends.numpy.semantics`, the rules add valid shapes and memory (see
`tileir.backends.numpy.compiler`, the lowering core, and `scalar_rules` / `loops`, the rules
of the IR's own structure).
"""
