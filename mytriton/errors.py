"""The user-facing compile error."""
from __future__ import annotations

from .ir.ssa import Loc


class TritonError(Exception):
    """The base of mytriton's compile errors, under Triton's name (``triton.TritonError``), so that
    code catching Triton's errors catches these."""


class CompilationError(TritonError):
    """A kernel could not be compiled. The message names the kernel's file, line and column, shows
    the source line with a caret, and says what is wrong; it never carries compiler frames."""

    def __init__(self, message: str, loc: Loc | None = None, kernel: str | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            head = f"error: {self.message}"
            return head + (f"\n  in kernel '{self.kernel}'" if self.kernel else "")
        loc = self.loc
        lines = [f"{loc.file}:{loc.line}:{loc.col}: error: {self.message}"]
        if loc.source_line:
            src = loc.source_line.rstrip("\n")
            lines.append(f"    {src}")
            lines.append("    " + "".join(c if c == "\t" else " " for c in src[:max(0, loc.col - 1)]) + "^")
        kernel = self.kernel or loc.function
        if kernel:
            lines.append(f"  in kernel '{kernel}'")
        return "\n".join(lines)


class NVRTCError(CompilationError):
    """NVRTC rejected the generated CUDA C++ (a compiler bug, or an unsupported construct)."""
