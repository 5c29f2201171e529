"""What runs on which path: the build's word on the compiler's tensor-core decisions.

Each compile carries the compiler's story (``metadata["explain"]``: a line per ``tl.dot`` saying
what computes it — ``wgmma``, ``mma.sync`` or the CUDA cores —, why not ``wgmma`` on a Hopper
target, and how each operand reaches it). The build prints, for each kernel whose launches fall off
Hopper's fast path, one note with an example and its reason (:func:`notes`); ``mytriton-build
--explain`` prints the whole story of every compile (:func:`story`). Neither is an error.

The launch that matters is the common one: a specialization's specialized variant where the build
made one (aot/variants.py), else the specialization as written; on the ``sm_90a`` target, or on
``sm_90`` where the build has no ``sm_90a`` (then the story says to add it).
"""
from __future__ import annotations

# What a story line says when a dot is off the fast path (dot.explain_dot's wording).
_OFF = ("not wgmma:", "loaded into registers and stored")
_BY_DESIGN = "it is transposed through registers"      # (tf32 and int8 B: wgmma reads them along K only)


def hopper_target(targets) -> str | None:
    """The target whose story tells how Hopper runs the package: sm_90a, else sm_90, else None."""
    return next((t for t in ("sm_90a", "sm_90") if t in targets), None)


def off_path(line: str) -> bool:
    """Whether a story line tells of a dot off Hopper's fast path: not on wgmma, or an operand that
    goes through registers for want of a proof (not by wgmma's design)."""
    return any(any(mark in part for mark in _OFF) and _BY_DESIGN not in part for part in line.split("; "))


def notes(plan, units, results) -> list[str]:
    """One line per kernel of *plan* whose common launches on Hopper are off the fast path."""
    target = hopper_target(plan.targets)
    if target is None:
        return []
    out = []
    for entry in plan.manifest.kernels:
        common = _common_compiles(plan, entry, units, results, target)
        off = [(unit, line) for unit, story in common for line in story if off_path(line)]
        if not off:
            continue
        specs = {unit.spec.id for unit, _ in off}
        unit, line = off[0]
        out.append(f"note: {plan.manifest.package}: {entry.name}: {len(specs)} of {len(entry.specializations)} "
                   f"specializations off Hopper's fast path on {target}, e.g. {unit.spec.label}"
                   f"{' (its specialized variant)' if unit.variant else ''}: {line} (mytriton-build --explain "
                   "says it for every compile)")
    return out


def story(plan, units, results) -> list[str]:
    """Every compile of *plan*, each followed by its story, indented."""
    lines = [f"{plan.manifest.package}:"]
    for unit in units:
        result = results[plan.dest, unit.ident]
        told = getattr(result, "explain", None)
        lines.append(f"  {unit.label}:")
        if told is None:
            lines.append("    (did not compile)")
        else:
            lines += [f"    {line}" for line in told] or ["    (no tl.dot)"]
    return lines


def _common_compiles(plan, entry, units, results, target: str) -> list[tuple]:
    """(unit, story) of the compile each specialization of *entry* launches in the common case on
    *target*: its specialized variant where it has one, else itself."""
    mine = [u for u in units if u.plan is plan and u.entry is entry and u.target == target]
    variants = {u.spec.id for u in mine if u.variant}
    chosen = [u for u in mine if u.variant or u.spec.id not in variants]
    return [(u, getattr(results.get((plan.dest, u.ident)), "explain", ())) for u in chosen]
