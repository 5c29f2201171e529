"""The optimization pipeline: small passes in order, the verifier between each."""
from __future__ import annotations

from ..ir.ssa import Function
from ..ir.verifier import verify
from .cse import cse
from .dce import dce
from .fold import fold
from .licm import licm

# CSE runs again after LICM: hoisted invariants can then merge with their twins outside the loop
PASSES = [("fold", fold), ("cse", cse), ("licm", licm), ("cse", cse), ("dce", dce)]


def optimize(fn: Function) -> Function:
    verify(fn)
    for _name, run in PASSES:
        fn = run(fn)
        verify(fn)
    return fn
