"""Helpers a kernel file imports from its own folder (the Gym's `common.py` style)."""

import pypto

ROW_TILE = 4


def row_tiles(rows, tile=ROW_TILE):
    """How many row tiles cover `rows` (a Python int or a run-time index value)."""
    return pypto.ceildiv(rows, tile)


def affine(t, scale, shift):
    return pypto.add(pypto.mul(t, scale), shift)
