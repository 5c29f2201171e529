"""The shipped manifests/elementwise.yaml: every specialization against numpy, in the CPU interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import mytriton
from mytriton.aot import load_manifest
from test_aot_support import REPO, elementwise_args, elementwise_case, elementwise_mismatch

MANIFEST = load_manifest(str(REPO / "manifests" / "elementwise.yaml"))
SPECS = [(entry, spec) for entry in MANIFEST.kernels for spec in entry.specializations]


@pytest.mark.parametrize("entry, spec", SPECS, ids=[f"{e.name}-{s.id}" for e, s in SPECS])
def test_specialization_matches_numpy_in_the_interpreter(entry, spec):
    rng = np.random.default_rng(0)
    block = dict(spec.constexprs)["BLOCK"]
    for n in (3 * block + 17, 5):       # not multiples of BLOCK: the masks matter
        arrays, expected = elementwise_case(entry.name, n, rng, pad=40)
        args = elementwise_args(entry.params, arrays, n)
        entry.jit_fn[(mytriton.cdiv(n, block),)](*args, **dict(spec.constexprs))
        assert elementwise_mismatch(arrays["out_ptr"], expected, n) is None
