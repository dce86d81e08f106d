"""`pypto.gathermask`'s pattern modes, in a module of their own: the dialect's shape
rules and the numpy semantics read the table, and the semantics import no IR (a cached
numpy plan runs without xDSL, see `tileir.backends.numpy.plan_cache`)."""

GATHERMASK_PATTERNS: dict[int, tuple[int, int]] = {
    1: (0, 2),
    2: (1, 2),
    3: (0, 4),
    4: (1, 4),
    5: (2, 4),
    6: (3, 4),
    7: (0, 1),
}
"""`pypto.gathermask` pattern_mode -> (first kept element, step) along the last dim, from
the pypto 0.2.0 `gathermask` docstring: 1/2 = 1st/2nd of every 2, 3..6 = 1st..4th of every
4, 7 = all. The shape rule, the numpy semantics and the interpreter's valid-shape rule all
read this table."""
GATHERMASK_MODES = range(1, 8)
