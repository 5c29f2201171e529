"""Triton AOT type strings (``*fp32:16``, ``i32``) and GPU target names (``sm_90``)."""
from __future__ import annotations

import difflib
import re

from ..runtime.driver import DTYPES, dtype_named

SCALAR_TYPES = tuple(DTYPES)

# Compute capabilities NVIDIA has shipped; NVRTC may support only a subset (checked at build time).
KNOWN_ARCHS = (70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)

_TARGET_RE = re.compile(r"sm_(?P<arch>\d+)(?P<suffix>a?)")


def type_error(text: str) -> str | None:
    """Why *text* is not a valid type string, or None when it is (the runtime's grammar: the
    loader checks the same ``:N`` promises at launch)."""
    from ..runtime.driver import parse_type
    if isinstance(text, str) and text.strip().startswith("tensordesc"):
        return (f"type {text!r}: tensor-descriptor parameters are taken by the JIT (TensorDescriptor "
                "arguments), not yet by manifests: pass the base pointer, shape and strides and make the "
                "descriptor in the kernel with tl.make_tensor_descriptor")
    try:
        parse_type(text)
    except ValueError as e:
        return str(e)
    return None


def type_suggestion(text: str) -> str:
    """``"; did you mean '*fp32:16'?"`` for a misspelled type string such as ``*f32:16``, else ``""``."""
    match = re.fullmatch(r"\s*(\*?)\s*([^:\s]*)\s*(:\s*\d+)?\s*", text) if isinstance(text, str) else None
    if not match:
        return ""
    name = match[2].lower()
    # what people write for the type names (numpy, torch, C: the dtype table's spellings); difflib
    # finds plain misspellings
    known = dtype_named(name)
    close = [known] if known else difflib.get_close_matches(name, SCALAR_TYPES, n=1)
    if not close:
        return ""
    guess = match[1] + close[0] + (":" + match[3].lstrip(":").strip() if match[3] else "")
    return f"; did you mean '{guess}'?" if guess != text and type_error(guess) is None else ""


def target_arch(target: str) -> int | None:
    """``sm_90`` and ``sm_90a`` → 90; None for anything that is not a known ``sm_XY`` target (or an
    architecture-specific ``sm_XYa`` of 9.0 and later)."""
    match = _TARGET_RE.fullmatch(target)
    if match and int(match["arch"]) in KNOWN_ARCHS and (not match["suffix"] or int(match["arch"]) >= 90):
        return int(match["arch"])
    return None


def target_error(target: object) -> str | None:
    """Why *target* is not a known target name, or None when it is."""
    if isinstance(target, str) and target_arch(target) is not None:
        return None
    known = ", ".join(f"sm_{arch}" for arch in KNOWN_ARCHS)
    return f"unknown target {target!r} (known targets: {known}; sm_90a and later with an 'a' suffix)"


def sort_targets(targets) -> tuple[str, ...]:
    """Unique targets, oldest architecture first, ``sm_XY`` before ``sm_XYa`` (the first one also
    gets the PTX: an architecture-specific PTX would run on that one GPU generation only)."""
    return tuple(sorted(set(targets), key=lambda t: (target_arch(t), t)))
