"""Helpers the kernel next to this file imports relatively (`from .relative_helpers`)."""

import pypto
from pypto.operation import op_wrapper

TILE = 4


@op_wrapper
def shifted_exp(t, shift):
    return pypto.exp(t - shift)
