"""Hypothesis strategies for tests/test_user_text_property.py (CPU) and tests/test_user_text_gpu.py:
small random elementwise fp32 kernels whose user text is hostile — parameter and kernel names that
are C++ keywords, CUDA built-ins, names the backends generate, or non-ASCII identifiers; comments
with backslashes and any printable character; a string constexpr with newlines — written to a file
(the frontend reads kernels' source) and imported.

The expressions are chosen so that the generated code and the CPU interpreter must agree bit for
bit: + - max min where abs neg are correctly rounded in both, and products are only by powers of
two (exact), so NVRTC's multiply-add contraction cannot change a result. / and sqrt are exact in
the interpreter and in the CPU emulator of the CUDA code, but on the GPU they are Triton's
approximations (div.full, sqrt.approx): ``kernels(exact_on_gpu=True)`` leaves them out."""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import keyword
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

CPP_WORDS = ["int", "new", "this", "template", "class", "float", "double", "return", "auto", "register",
             "signed", "unsigned", "union", "goto", "delete", "friend", "operator", "typename", "volatile",
             "extern", "static", "const", "void", "bool", "char", "long", "short", "struct", "switch", "case",
             "default", "do", "sizeof", "virtual", "namespace", "using", "typedef", "inline", "private",
             "throw", "catch", "try", "asm", "main", "printf", "malloc", "max", "min", "fmax", "exp", "sqrt",
             "__global__", "__device__", "__shared__", "NULL", "nullptr", "INFINITY", "signbit"]
GENERATED_LOOKING = ["r", "s", "q", "j", "w", "t", "v0", "v1", "v12", "v3_next", "buf", "seen", "lane", "warp",
                     "threadIdx", "blockIdx", "gridDim", "blockDim", "mt_add", "mt_smem", "mt_vec", "tid",
                     "tid_i32", "smem", "cst", "c0_i32", "t0", "p_x", "k_main", "px_0000e9", "pxa", "kx"]
NON_ASCII = ["é", "ñ_ptr", "δ", "変数", "Ωmega", "naïve", "ℌx", "ĳ", "ǅ", "x\u0304", "Ä_ptr", "שלום", "π"]
# names the kernel body itself uses, and the launcher's own keywords (other owners' rules)
RESERVED = {"tl", "triton", "offs", "mask", "x", "y", "BLOCK", "LABEL", "num_warps", "stream"}

# Python splits lines on these as well as on \n and \r (str.splitlines), NUL cannot be in source,
# and U+0085 defeats inspect: they are the frontend's concern, not this test's
_NOT_IN_COMMENTS = "\r\n\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _normal(name: str) -> str:
    return unicodedata.normalize("NFKC", name)          # Python's own spelling of an identifier


def _valid(name: str) -> bool:
    n = _normal(name)
    return n.isidentifier() and not keyword.iskeyword(n) and n not in RESERVED and not n.startswith("_d_")


ascii_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)
unicode_names = st.text(st.characters(categories=["Lu", "Ll", "Lo", "Nl"]), min_size=1, max_size=4)
identifiers = st.one_of(st.sampled_from(CPP_WORDS), st.sampled_from(GENERATED_LOOKING), st.sampled_from(NON_ASCII),
                        ascii_names, unicode_names).filter(_valid).map(_normal)

comments = st.one_of(
    st.just(""),
    st.text(st.characters(blacklist_characters=_NOT_IN_COMMENTS, blacklist_categories=["Cs"]), max_size=16),
    st.text(st.sampled_from("\\ ab*/?#\"'é\t"), max_size=8).map(lambda t: t + "\\"),
)
labels = st.text(st.characters(blacklist_categories=["Cs"]), max_size=16) | st.sampled_from(
    ["}\nint injected;", "a\\", "\\\n", "*/ /*", "\u2028\u0085"])

CONSTANTS = [0.0, -0.0, 0.1, 2.5, -1.5, 1e39, -1e39, 1 + 2**-24, 1 + 3 * 2**-24, 3.4028235677973366e38, 1e-45,
             1e-40, 0.5, 7.0, 65504.0, 1e-8]
constants = st.sampled_from(CONSTANTS) | st.floats(allow_nan=False, allow_infinity=False, width=64)
POW2 = [0.25, 0.5, 2.0, 4.0, -2.0, 8.0, -0.5]


@st.composite
def expressions(draw, leaves: list[str], depth: int = 3, exact_on_gpu: bool = False):
    """Source text of an fp32 tensor expression over the tensor leaves (``x``) and scalars."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    sub = expressions(leaves, depth - 1, exact_on_gpu)
    other = st.one_of(sub, constants.map(repr))
    kinds = ["add", "sub", "mul", "div", "rdiv", "max", "min", "where", "abs", "neg", "sqrt"]
    kind = draw(st.sampled_from([k for k in kinds if not (exact_on_gpu and k in ("div", "rdiv", "sqrt"))]))
    a = draw(sub)
    if kind in ("add", "sub"):
        b = draw(other)
        return f"({a} {'+' if kind == 'add' else '-'} {b})" if draw(st.booleans()) else \
            f"({b} {'+' if kind == 'add' else '-'} {a})"
    if kind == "mul":
        return f"({a} * {draw(st.sampled_from(POW2))!r})"
    if kind == "div":
        return f"({a} / {draw(other)})"
    if kind == "rdiv":
        return f"({draw(other)} / {a})"
    if kind in ("max", "min"):
        return f"tl.{'maximum' if kind == 'max' else 'minimum'}({a}, {draw(other)})"
    if kind == "where":
        return f"tl.where({a} > {draw(constants)!r}, {draw(other)}, {draw(sub)})"
    if kind == "neg":
        return f"(-{a})"
    return f"tl.{kind}({a})"


@dataclass
class GeneratedKernel:
    source: str
    kernel_name: str
    params: list[str]                 # in, out, n, s: *fp32, *fp32, i32, fp32
    label: str
    block: int
    num_warps: int
    path: Path = field(default=None)
    fn: object = field(default=None)

    @property
    def signature(self) -> dict:
        return dict(zip(self.params, ["*fp32", "*fp32", "i32", "fp32"]))

    @property
    def constexprs(self) -> dict:
        return {"LABEL": self.label, "BLOCK": self.block}


@st.composite
def kernels(draw, exact_on_gpu: bool = False) -> GeneratedKernel:
    names = draw(st.lists(identifiers, min_size=5, max_size=5, unique=True))
    kname, params = names[0], names[1:]
    src_ptr, dst_ptr, n, s = params
    expr = draw(expressions(["x", "x", s], exact_on_gpu=exact_on_gpu).filter(lambda e: "x" in re.findall(r"\w+", e)))
    other = draw(constants)
    c = [draw(comments) for _ in range(5)]

    def tail(text):
        return f"  # {text}" if text else ""
    source = (
        "import mytriton as triton\nimport mytriton.language as tl\n\n\n@triton.jit\n"
        f"def {kname}({src_ptr}, {dst_ptr}, {n}, {s}, LABEL: tl.constexpr, BLOCK: tl.constexpr):{tail(c[0])}\n"
        f"    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK){tail(c[1])}\n"
        f"    x = tl.load({src_ptr} + offs, mask=offs < {n}, other={other!r}){tail(c[2])}\n"
        f"    y = {expr}{tail(c[3])}\n"
        f"    tl.store({dst_ptr} + offs, y){tail(c[4])}\n")
    return GeneratedKernel(source, kname, params, draw(labels), draw(st.sampled_from([32, 64, 128, 256])),
                           draw(st.sampled_from([1, 2, 4, 8])))


_DIR = None
_COUNTER = itertools.count()


def load(k: GeneratedKernel) -> GeneratedKernel:
    """Write the kernel's source to a file of its own and import it (the frontend reads source)."""
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="mytriton-user-text-"))
        atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
    k.path = _DIR / f"gen_{next(_COUNTER)}.py"
    k.path.write_text(k.source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"mytriton_user_text_{k.path.stem}", k.path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    k.fn = getattr(module, k.kernel_name)
    return k
