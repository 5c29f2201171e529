"""The optimization pipeline: small passes in order, the verifier between each."""
from __future__ import annotations

from ..ir.ssa import Function
from ..ir.verifier import verify
from .combine import combine
from .cse import cse
from .dce import dce
from .fold import fold
from .licm import licm
from .prefetch import prefetch
from .induction import pointer_induction

# ``x + tl.dot(a, b)`` becomes ``tl.dot(a, b, x)`` (combine) before the loop passes see it; CSE
# runs again after LICM: hoisted invariants can then merge with their twins outside the loop;
# after the prefetching of loads (software pipelining), LICM and CSE tidy the new address code;
# pointer tiles carried around loops then become carried offsets (after LICM, which would hoist the
# rebuilt tiles out again), and combine folds the prefetched loads' second advance into the offset
PASSES = [("fold", fold), ("combine", combine), ("cse", cse), ("licm", licm), ("cse", cse),
          ("prefetch", prefetch), ("fold", fold), ("licm", licm), ("cse", cse),
          ("pointer_induction", pointer_induction), ("combine", combine), ("cse", cse), ("dce", dce)]


def optimize(fn: Function) -> Function:
    verify(fn)
    for _name, run in PASSES:
        fn = run(fn)
        verify(fn)
    return fn
