"""User text in generated code: the one place that decides how it gets there.

User text reaches the backends' output in two ways, and neither may change the generated code:

- **identifiers** (parameter names, the kernel's name): ``c_identifier`` puts each into a namespace
  of its own, ``<kind>_<name>`` (``p_x_ptr``, ``k_add_kernel``). Generated names (``v7``, ``lane``,
  ``warp``, ``r``, ``mt_*``, MLIR's ``%t3``/``%c0_i32``) never have that shape, C++ keywords and
  CUDA built-ins (``int``, ``threadIdx``, ``main``, ``printf``) no longer collide, and the result is
  ASCII. A non-ASCII Python identifier is spelled ``<kind>x`` followed by its characters, ASCII
  letters and digits as they are and every other character as ``_`` and six hex digits of its code
  point (``é`` → ``px_0000e9``): injective, so two names never meet.
- **comments** (the kernel's source lines, file name, constexpr values): ``comment_text`` keeps
  printable ASCII except the backslash and writes everything else as a Python-style escape
  (``\\x5c``, ``\\n``, ``\\u00e9``), so a comment can neither end early (a newline would let the rest
  be compiled) nor swallow the next generated line (C++ joins a line that ends in a backslash with
  the next one).
- **strings** (``tl.device_print``'s prefix): ``c_string`` writes every byte but ASCII letters,
  digits and spaces as a three-digit octal escape, so no quote, backslash, trigraph or ``%``
  (a printf conversion) survives, and an escape never runs into the next character.
"""
from __future__ import annotations

PARAM = "p"
KERNEL = "k"


def c_identifier(name: str, kind: str) -> str:
    """The spelling of the user identifier ``name`` in generated C++ and MLIR; ``kind`` is
    ``PARAM`` or ``KERNEL``."""
    if name.isascii() and name.isidentifier():
        return f"{kind}_{name}"
    return f"{kind}x" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):06x}" for c in name)


def kernel_symbol(name: str) -> str:
    """The ``extern "C"`` symbol (and MLIR ``gpu.func`` name) of the kernel whose Python name is
    ``name``: what ``metadata["name"]`` holds and what the loaders look up."""
    return c_identifier(name, KERNEL)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\x5c"}


def comment_text(text) -> str:
    """``str(text)`` made safe for a one-line ``//`` comment in generated C++ or MLIR (see the
    module docstring); the result contains no backslash that ends it."""
    out = []
    for c in str(text):
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif " " <= c <= "~":
            out.append(c)
        elif ord(c) <= 0xFF:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out)


def c_string(text: str) -> str:
    """A C string literal of ``text`` (UTF-8 bytes; see the module docstring)."""
    return '"' + "".join(chr(b) if chr(b).isalnum() and b < 128 or b == 32 else f"\\{b:03o}"
                         for b in text.encode()) + '"'


__all__ = ["c_identifier", "kernel_symbol", "comment_text", "c_string", "PARAM", "KERNEL"]
