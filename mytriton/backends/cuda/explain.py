"""The kernel's story of its tensor-core decisions: a line per ``tl.dot`` saying what computes it,
why not Hopper's ``wgmma`` where the target has it, and how each operand reaches it
(``metadata["explain"]``; the build's notes and ``mytriton-build --explain`` read it:
``aot/explain.py``). The reasons are the decisions' own (``passes/layout.wgmma_refusal``,
``dot._wgmma_refusal``, ``dot.copy_refusal``), so the story cannot drift from what was emitted."""
from __future__ import annotations

import os

from ...ir.layout import DotOperandLayout
from ...ir.ssa import Op


def dot(em, op: Op, path: str) -> None:
    """One line of the kernel's story (``metadata["explain"]``): where the dot is, what computes it
    (``path``), why not wgmma where the target has it, and how each operand reaches it."""
    from ...passes.layout import wgmma_refusal
    a, b = op.operands[:2]
    loc = op.loc
    where = f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else "the kernel"
    shape = f"{'x'.join(map(str, a.type.shape))} @ {'x'.join(map(str, b.type.shape))} {a.type.scalar.name}"
    parts = [f"{where}: tl.dot {shape}: {path}"]
    if path != "wgmma" and em.target.startswith("sm_9"):
        why = wgmma_refusal(op, em.fn.num_warps, em.target) or em.wgmma_refusals.get(op)
        if why:
            parts.append(f"not wgmma: {why}")
    for name, x in (("A", a), ("B", b)):
        ring = em.rings.get(x)
        if isinstance(x.layout, DotOperandLayout):
            how = "in registers"
        elif ring is None:
            how = "stored to shared memory each step (not pipelined)"
        elif ring.tma is not None:
            how = f"copied by TMA into a {ring.stages}-buffer ring"
        elif ring.through_registers:
            how = f"loaded into registers and stored into a {ring.stages}-buffer ring: {ring.registers_why}"
        else:
            how = f"copied by cp.async into a {ring.stages}-buffer ring"
        parts.append(f"{name} {how}")
    em.explain.append("; ".join(parts))
