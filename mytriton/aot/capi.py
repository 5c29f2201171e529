"""The C API of a package (``mytriton-build --emit-c``): ``c/<package>.h`` and ``c/<package>.c``.

Plain C11 that needs only ``cuda.h`` (the driver API) and the C standard headers::

    CUresult <package>_load(void);      every specialization in the current context (optional)
    CUresult <package>_unload(void);    every module, in every context it was loaded in
    CUresult <package>_<kernel>_<spec id>(CUstream, unsigned gx, unsigned gy, unsigned gz, <args>);
    CUresult <package>_<kernel>(CUstream, unsigned gx, gy, gz, <args>, <constexprs>, int num_warps);

and for a kernel tuned at build time its configs (``<package>_<kernel>_configs[]``), the tuned choice
for key values (``<package>_<kernel>_best(<key>)``: the Python loader's rule, in C) and
``<package>_<kernel>_launch_config(config, stream, gx, gy, gz, <args>)``.

A specialization with a specialized variant (``aot/variants.py``) launches it from its function
(and so from the dispatcher and ``launch_config``) where the arguments keep every promise of its
signature, and the plain one otherwise, or where the variant's image cannot be loaded in the
context (it is then not tried there again); ``bool <package>_<kernel>_<spec id>_specialized(<args>)``
says whether the arguments keep them.

Each specialization's images (every target's cubin and the PTX) are one fatbin made with nvFatbin
and embedded as bytes, so the driver picks the best image for the GPU. A function is loaded on
first use in the calling thread's current context (one per device with the primary contexts the
CUDA runtime uses), under a lock; later launches find it without locking. Every failure is a
returned ``CUresult``: CUDA_ERROR_INVALID_CONTEXT without a current context, CUDA_ERROR_INVALID_VALUE
for an argument that breaks the signature's promises (alignment, divisibility, ``:1``),
CUDA_ERROR_NOT_FOUND for constexpr values that were not built.

The dispatcher tells constexpr values apart as the Python loader does
(``runtime.driver.constexpr_identity``): by C type (``bool``, ``int64_t``, ``double``, string), a
double by its 64 bits (``0.0`` is not ``-0.0``; a NaN is the NaN of its bits), a string by its
length and bytes (``const char *p_NAME, size_t len_NAME``: UTF-8, NUL bytes included).

A kernel that makes tensor descriptors whose tensor maps the launch encodes (a build with sm_90a:
``frontend/launch_maps.py``) computes them from its arguments in C and encodes them with
``cuTensorMapEncodeTiled`` at each launch; where TMA cannot copy a descriptor (TMA's rules, checked
first), the launch returns CUDA_ERROR_INVALID_VALUE on a GPU of compute capability 9.0 (whose
sm_90a image copies through the map) and passes zeros elsewhere (its image reads memory itself).

User text and what compiles and tuning records say reach the C files only as:

- parameter names, run-time and constexpr, in a namespace of their own: ``p_<name>`` (and
  ``len_<name>`` for a string's length), as the CUDA backend spells them
  (``backends.names.c_identifier``); no identifier of the generated code, of ``cuda.h`` or of C
  has that shape, so a parameter named ``CUDA_SUCCESS``, ``int`` or ``NULL`` means only itself;
- public names (``<package>_<kernel>...``), which the design fixes: checked not to redeclare an
  identifier of ``cuda.h``, of the C standard headers or of the generated code, nor each other
  (:func:`check_public_names`); internal names are by index (``mt_spec_<kernel>_<spec>``);
- values checked to be what they claim (the tensor-map recipes, kernel symbols and shared sizes
  of compile results, which may come from a shared cache; the tuning's key values and choices),
  an AotError naming the kernel and the specialization where one is not;
- escaped comments (``comment``) and string literals (:func:`c_string`).

The build then compiles the C it emits (``$CC``, else ``cc``: ``-std=c11 -fsyntax-only``, about
50 ms a package) before the package is put in place: a failure is an internal error and the
previous output stays. Where no compiler or ``cuda.h`` is found, or with ``MYTRITON_EMIT_C_CHECK=0``,
a note says so and the check is skipped.
"""
from __future__ import annotations

import functools
import math
import os
import re
import reprlib
import shlex
import struct
import subprocess
import tempfile
from pathlib import Path

from ..backends.names import PARAM, c_identifier, comment_text
from ..runtime.driver import _SWIZZLES, DTYPES, parse_type, tma_data_type
from ..frontend.launch_maps import MalformedRecipe, check_recipes
from .errors import AotError

# The C type of a scalar argument: the kernel's parameter type, bit for bit (halves as their bits).
_C_SCALAR = {"i1": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
             "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
             "fp16": "uint16_t", "bf16": "uint16_t", "fp32": "float", "fp64": "double"}
LENGTH = "len"          # the namespace of a string constexpr's length (``len_<name>``)

_shown = reprlib.Repr()         # (what an error message shows of a bad value: short, one line)
_shown.maxlevel, _shown.maxstring, _shown.maxother, _shown.maxlong, _shown.maxlist = 3, 80, 80, 60, 6
shown = _shown.repr


# -- names ----------------------------------------------------------------------------------------

def c_param(name: str) -> str:
    """A kernel parameter's (run-time or constexpr) name in the C API: ``p_<name>``."""
    return c_identifier(name, PARAM)


def c_length(name: str) -> str:
    """The name of a string constexpr's length: ``len_<name>``."""
    return c_identifier(name, LENGTH)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What the C standard headers the files include declare (cuda.h includes stdlib.h and stdint.h),
# and what C11's future library directions reserve for them; public names always hold a '_', so
# only such names are listed.
_C_STANDARD = frozenset("""
    ptrdiff_t size_t max_align_t wchar_t wint_t rsize_t errno_t PTRDIFF_MAX PTRDIFF_MIN SIZE_MAX RSIZE_MAX
    SIG_ATOMIC_MAX SIG_ATOMIC_MIN WCHAR_MAX WCHAR_MIN WINT_MAX WINT_MIN kill_dependency
    float_t double_t HUGE_VAL HUGE_VALF HUGE_VALL MATH_ERRNO MATH_ERREXCEPT math_errhandling
    div_t ldiv_t lldiv_t EXIT_FAILURE EXIT_SUCCESS RAND_MAX MB_CUR_MAX at_quick_exit quick_exit aligned_alloc
    constraint_handler_t set_constraint_handler_s abort_handler_s ignore_handler_s getenv_s bsearch_s qsort_s
    wctomb_s mbstowcs_s wcstombs_s memcpy_s memmove_s memset_s strcpy_s strncpy_s strcat_s strncat_s strtok_s
    strerror_s strerrorlen_s strnlen_s
""".split())
_C_STANDARD_PATTERN = re.compile(r"U?INT\w*_(?:MAX|MIN|C)|u?int\w*_t|atomic_\w+|memory_order\w*|ATOMIC_\w+"
                                 r"|FP_\w+|M_\w+")


@functools.cache
def cuda_include_dir() -> Path | None:
    """The folder of ``cuda.h``: pip's ``nvidia-cuda-runtime`` (``nvidia/cu13/include``), else what
    cuda-pathfinder finds; None where there is none."""
    try:
        import nvidia.cu13
        for folder in nvidia.cu13.__path__:
            if (Path(folder) / "include" / "cuda.h").is_file():
                return Path(folder) / "include"
    except ImportError:
        pass
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        found = find_nvidia_header_directory("cudart")
    except Exception:   # noqa: BLE001 - no pathfinder or no headers
        found = None
    return Path(found) if found and (Path(found) / "cuda.h").is_file() else None


@functools.cache
def _cuda_h_identifiers() -> frozenset[str] | None:
    """Every identifier ``cuda.h`` spells outside comments (None without cuda.h)."""
    folder = cuda_include_dir()
    if folder is None:
        return None
    text = (folder / "cuda.h").read_text(encoding="utf-8", errors="replace")
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    return frozenset(_IDENTIFIER.findall(text))


@functools.cache
def _template_identifiers() -> frozenset[str]:
    """Every identifier the C templates spell themselves (not what they fill in)."""
    from .._paths import templates_dir
    found = set()
    for name in ("package.h.j2", "package.c.j2"):
        text = (templates_dir() / "c" / name).read_text(encoding="utf-8")
        text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|//[^\n]*", " ", text, flags=re.S)
        found.update(_IDENTIFIER.findall(text))
    return frozenset(found)


def _guard(package: str) -> str:
    return f"MYTRITON_{package}_H"


def _internal(kernel: int, spec: int, specialized: bool = False) -> tuple[str, str]:
    """The static names of a specialization's (or its specialized variant's) mt_kernel and image: by
    index, so two kernels never share one."""
    suffix = "_specialized" if specialized else ""
    return f"mt_spec_{kernel}_{spec}{suffix}", f"mt_image_{kernel}_{spec}{suffix}"


def _taken(name: str, internal: set[str]) -> str | None:
    """Why the public name *name* cannot be declared in the C files, or None."""
    if re.match(r"_[_A-Z]", name):
        return "is reserved for the C implementation (it begins with __ or _ and a capital letter)"
    cuda = _cuda_h_identifiers()
    if cuda is None and re.match(r"cu[A-Z]|CU|cuuint", name):
        return "may redeclare an identifier of cuda.h (not found here: its names begin with cu or CU)"
    if cuda is not None and name in cuda:
        return f"would redeclare {name} of cuda.h"
    if name in _C_STANDARD or _C_STANDARD_PATTERN.fullmatch(name):
        return f"would redeclare {name} of the C standard headers"
    if name in internal:
        return f"would redeclare {name} of the generated code"
    return None


def check_public_names(package: str, kernels) -> None:
    """Check the C API's public names of *package* and its *kernels* (``(name, spec ids, tuned)``,
    in manifest order, and optionally the ids of the specializations with a specialized variant):
    none may redeclare an identifier the C files see or declare, nor another public name. AotError
    naming the package, the kernel and the clash otherwise."""
    internal = set(_template_identifiers()) | {_guard(package)}
    internal.update(n for k, (_, ids, *_) in enumerate(kernels) for s in range(len(ids))
                    for twin in (False, True) for n in _internal(k, s, twin))
    owners: dict[str, str] = {}

    def claim(name: str, kernel: str | None, what: str) -> None:
        where = f"package {package}" + (f", kernel {kernel}" if kernel else "")
        if not _IDENTIFIER.fullmatch(name):
            raise AotError(f"--emit-c: {where}: its {what} {shown(name)} is not a C identifier")
        problem = _taken(name, internal)
        if problem is not None:
            rename = "the kernel or the package" if kernel else "the package"
            raise AotError(f"--emit-c: {where}: its {what} {name} {problem}; rename {rename}")
        if name in owners:
            raise AotError(f"--emit-c: {where}: its {what} {name} is also the name of {owners[name]}")
        owners[name] = f"kernel {kernel}'s {what}" if kernel else f"the package's {what}"
    claim(f"{package}_load", None, "load()")
    claim(f"{package}_unload", None, "unload()")
    for kernel, ids, tuned, *twins in kernels:
        claim(f"{package}_{kernel}", kernel, "dispatcher")
        for spec_id in ids:
            claim(f"{package}_{kernel}_{spec_id}", kernel, f"specialization {spec_id}'s function")
        for spec_id in (twins[0] if twins else ()):
            claim(f"{package}_{kernel}_{spec_id}_specialized", kernel, f"specialization {spec_id}'s specialized()")
        if tuned:
            for suffix, what in (("config", "config type"), ("configs", "configs array"), ("best", "best()"),
                                 ("launch_config", "launch_config()")):
                claim(f"{package}_{kernel}_{suffix}", kernel, what)


# -- constants ------------------------------------------------------------------------------------

def c_string(text: str) -> str:
    """A C string literal of *text* (UTF-8), every byte outside printable ASCII as an octal escape."""
    out = []
    for byte in text.encode("utf-8"):
        c = chr(byte)
        if c in '"\\?':
            out.append("\\" + c)
        elif 0x20 <= byte < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_constant(value) -> tuple[str, str]:
    """(C type, C literal) of a constexpr value, exact: floats as hex floats."""
    kind = type(value)
    if kind is bool:
        return "bool", "true" if value else "false"
    if kind is int:
        if not -2**63 <= value < 2**63:
            raise AotError(f"--emit-c: the constexpr value {value} does not fit a C int64_t")
        return "int64_t", f"INT64_C({value})" if value != -2**63 else "INT64_MIN"
    if kind is float:
        if math.isnan(value):
            return "double", "NAN"
        if math.isinf(value):
            return "double", "INFINITY" if value > 0 else "-INFINITY"
        return "double", value.hex()
    if kind is str:
        return "const char *", c_string(value)
    raise AotError(f"--emit-c: the constexpr value {shown(value)} ({kind.__name__}) has no C type "
                   "(a bool, an int, a float or a str has)")


def _condition(name: str, value) -> str:
    """The dispatcher's test that the constexpr argument *name* is *value* (see the module docstring)."""
    ctype, literal = c_constant(value)
    if ctype == "const char *":
        size = len(value.encode("utf-8"))
        if size == 0:
            return f"{c_length(name)} == 0"
        return (f"{c_length(name)} == {size} && {c_param(name)} != NULL && "
                f"memcmp({c_param(name)}, {literal}, {size}) == 0")
    if ctype == "double":
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"mt_double_bits({c_param(name)}) == UINT64_C({bits:#018x}) /* {value!r} */"
    return f"{c_param(name)} == {literal}"


def _double(value, kernel: str, key: str) -> str:
    """An exact C double literal of the tuning's key value *value* (of the key parameter *key*)."""
    if type(value) not in (int, float):
        raise AotError(f"--emit-c: {kernel}: the tuning's key value {shown(value)} of {key} is not a number")
    try:
        number = float(value)
    except OverflowError:
        raise AotError(f"--emit-c: {kernel}: the tuning's key value {shown(value)} of {key} does not fit "
                       "a double") from None
    if math.isnan(number):
        return "NAN"
    return number.hex() if math.isfinite(number) else ("INFINITY" if number > 0 else "-INFINITY")


# -- tensor-map recipes (frontend/launch_maps.py), as compile results record them --------------------

def _c_expr(expr, scope: dict) -> str:
    """C for an expression of a tensor map's recipe (checked by ``launch_maps.check_recipe``): the
    kernel's wrapping integer arithmetic, computed in the unsigned type of its width. *scope*:
    run-time parameter -> (C name, ParamType)."""
    op = expr[0]
    if op == "param":
        return scope[expr[1]][0]
    if op == "const":
        return f"INT64_C({expr[1]})" if expr[1] != -2**63 else "INT64_MIN"
    if op == "cast":
        return f"({_C_SCALAR[expr[1]]})({_c_expr(expr[2], scope)})"
    if op == "addptr":
        return f"((uint64_t)({_c_expr(expr[2], scope)}) + (uint64_t)(int64_t)({_c_expr(expr[3], scope)}) * {expr[1]}u)"
    ctype = _C_SCALAR[expr[1]]
    unsigned = ctype if ctype.startswith("u") else "u" + ctype
    operator = {"add": "+", "sub": "-", "mul": "*"}[op]
    return f"({ctype})(({unsigned})({_c_expr(expr[2], scope)}) {operator} ({unsigned})({_c_expr(expr[3], scope)}))"


def _c_map(r, scope: dict) -> dict:
    """What the C launch computes for one (checked) tensor map: its arguments to
    ``mt_made_tensor_map``, innermost dimension first (TMA's order)."""
    dtype, padding = r["dtype"], r["padding"]
    return {"where": r["where"], "type": f"CU_TENSOR_MAP_DATA_TYPE_{tma_data_type(dtype, padding)}",
            "rank": len(r["shape"]), "elem": DTYPES[dtype].itemsize, "base": _c_expr(r["base"], scope),
            "dims": [_c_expr(e, scope) for e in reversed(r["shape"])],
            "strides": [_c_expr(e, scope) for e in reversed(r["strides"])] or ["0"],
            "box": [str(b) for b in reversed(r["box"])],
            "swizzle": f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[r['swizzle']]}",
            "fill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if padding == "nan"
            else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"}


def _c_maps(recipes, scope: dict, kernel: str, where: str) -> list[dict]:
    """The C of a specialization's tensor maps; AotError where the compile result's recipes are not
    what the frontend records (every value of one reaches the C: a cache entry may hold anything)."""
    if recipes is None:
        return []
    try:
        check_recipes(recipes, {name: t for name, (_, t) in scope.items()}, kernel)
    except MalformedRecipe as exc:
        raise AotError(f"--emit-c: {where}: the compile result's {exc}") from None
    return [_c_map(r, scope) for r in recipes]


# -- the templates' context -----------------------------------------------------------------------

def _launch(record: dict, spec, where: str) -> tuple[str, int, int]:
    """(symbol, shared bytes, threads) of a specialization, checked: they come from compile results."""
    symbol, shared = record.get("symbol"), record.get("shared")
    if not isinstance(symbol, str) or not symbol.isascii() or not _IDENTIFIER.fullmatch(symbol):
        raise AotError(f"--emit-c: {where}: the compile result's kernel symbol {shown(symbol)} is not a C identifier")
    if type(shared) is not int or not 0 <= shared < 2**31:
        raise AotError(f"--emit-c: {where}: the compile result's dynamic shared memory {shown(shared)} is not a "
                       f"number of bytes from 0 to {2**31 - 1}")
    if type(spec.num_warps) is not int or not 1 <= spec.num_warps <= 32:
        raise AotError(f"--emit-c: {where}: num_warps {shown(spec.num_warps)} is not from 1 to 32")
    return symbol, shared, 32 * spec.num_warps


def _constexprs(entry) -> list[dict]:
    """The dispatcher's constexpr arguments of a kernel (one C type each) and the config struct's fields."""
    out = []
    for name in entry.constexpr_names:
        types = {c_constant(dict(spec.constexprs)[name])[0] for spec in entry.specializations}
        if len(types) > 1:
            raise AotError(f"--emit-c: {entry.name}'s constexpr {name} takes values of several C types "
                           f"({', '.join(sorted(types))}); its C dispatcher needs one")
        ctype = types.pop()
        fields = ([f"const char *{c_param(name)}", f"size_t {c_length(name)}"] if ctype == "const char *"
                  else [f"{ctype} {c_param(name)}"])
        out.append({"raw": name, "type": ctype, "decl": ", ".join(fields), "fields": fields})
    return out


def _config_value(value) -> str:
    """A config struct's initializer(s) of a constexpr value (a string: its literal and length)."""
    ctype, literal = c_constant(value)
    return f"{literal}, {len(value.encode('utf-8'))}" if ctype == "const char *" else literal


def _tuned(entry, tuning, params: list[dict]) -> dict:
    """A tuned kernel's configs and choices for the C templates, the tuning's values checked."""
    from . import tuning as _tuning
    table = _tuning.dispatch_table(entry, tuning)
    by_name = {n: p for (n, _), p in zip(entry.params, params)}
    key = table["key"]
    if not isinstance(key, (list, tuple)):
        raise AotError(f"--emit-c: {entry.name}: the tuning's key {shown(key)} is not a list of parameters")
    for name in key:
        if not isinstance(name, str) or name not in by_name:
            raise AotError(f"--emit-c: {entry.name}: the tuning's key {shown(name)} is not a run-time parameter "
                           f"of {entry.name}")
    count, choices = len(entry.specializations), []
    for item in table["choices"]:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise AotError(f"--emit-c: {entry.name}: the tuning's choice {shown(item)} is not [key values, config "
                           "index]")
        values, index = item
        if not isinstance(values, (list, tuple)) or len(values) != len(key):
            raise AotError(f"--emit-c: {entry.name}: the tuning's key values {shown(values)} are not one per key "
                           f"parameter ({', '.join(key)})")
        if type(index) is not int or not 0 <= index < count:
            raise AotError(f"--emit-c: {entry.name}: the tuning's choice {shown(index)} is not a config index "
                           f"(0 to {count - 1})")
        choices.append(([_double(v, entry.name, name) for v, name in zip(values, key)], index))
    return {"key": [by_name[n] for n in key], "choices": choices,
            "values": [[_config_value(dict(s.constexprs)[name]) for name in entry.constexpr_names]
                       for s in entry.specializations]}


def c_context(plan, kernels, artifacts, tuning: dict | None = None) -> dict:
    """What the C templates need: plain data, decided and checked here. A kernel tuned at build
    time also gets its configs and the tuning's choices (*tuning*: the package's record, or None:
    no choices)."""
    from .package import specialized_record
    package = plan.manifest.package
    check_public_names(package, [(entry.name, [s.id for s in entry.specializations], entry.autotune is not None,
                                  [s.id for s, r in zip(entry.specializations, records) if specialized_record(r)])
                                 for entry, records in kernels])
    out, doubles = [], False
    for k, (entry, records) in enumerate(kernels):
        params, scope = [], {}
        for name, type_text in entry.params:
            t = parse_type(type_text)
            ctype = "CUdeviceptr" if t.is_pointer else _C_SCALAR[t.dtype]
            scope[name] = (c_param(name), t)
            params.append({
                "name": c_param(name), "type": ctype, "decl": f"{ctype} {c_param(name)}",
                "passed": not t.one, "one": t.one, "pointer": t.is_pointer,
                "align": t.align if t.align > 1 and (t.is_pointer or DTYPES[t.dtype].kind in ("int", "uint")) else 0,
            })
        constexprs = _constexprs(entry)
        doubles = doubles or any(c["type"] == "double" for c in constexprs)
        specs = []
        for s, (spec, record) in enumerate(zip(entry.specializations, records)):
            where = f"{entry.name} {comment_text(spec.label)}"
            symbol, shared, threads = _launch(record, spec, where)
            maps = _c_maps(record.get("made_tensor_maps"), scope, entry.name, where)
            data = _fatbin_of(plan, artifacts, entry.name, spec.id)
            values = dict(spec.constexprs)
            var, image = _internal(k, s)
            twin = specialized_record(record)
            specs.append({"id": spec.id, "label": spec.label, "var": var, "image": image, "symbol": symbol,
                          "shared": shared, "threads": threads, "num_warps": spec.num_warps,
                          "bytes": byte_lines(data), "size": len(data),
                          "conditions": [_condition(c["raw"], values[c["raw"]]) for c in constexprs], "maps": maps,
                          "twin": None if twin is None else _twin(plan, artifacts, entry, spec, twin, (k, s), where)})
        tuned = _tuned(entry, tuning, params) if entry.autotune is not None else None
        out.append({"name": entry.name, "ref": entry.portable_ref or entry.source.ref, "params": params,
                    "constexprs": constexprs, "specs": specs, "tuned": tuned})
    return {"package": package, "guard": _guard(package), "targets": list(plan.targets),
            "ptx_target": plan.ptx_target, "kernels": out, "double_bits": doubles,
            "made_maps": any(spec["maps"] for kernel in out for spec in kernel["specs"])}


def _fatbin_of(plan, artifacts, kernel: str, ident: str) -> bytes:
    """The fatbin of one compiled variant (``ident``: a spec id, or its specialized variant's)."""
    images = {target: artifacts[kernel, ident, target].cubin for target in plan.targets}
    ptx = artifacts[kernel, ident, plan.ptx_target].ptx.encode("utf-8")
    return fatbin(images, (plan.ptx_target, ptx), f"{kernel}.{ident}")


def _twin(plan, artifacts, entry, spec, record: dict, index: tuple[int, int], where: str) -> dict:
    """What the C templates need of a specialized variant: its kernel, image, the tests of the
    promises it adds to the plain signature (checked: the signature comes from a record) and the
    arguments it takes."""
    from ..runtime.driver import _twin_problem
    where = f"{where} (specialized)"
    symbol, shared, _ = _launch(record, spec, where)
    try:
        plain = [(n, parse_type(t)) for n, t in entry.params]
        twin = [(str(n), parse_type(t)) for n, t in record["signature"]]
    except (TypeError, ValueError) as exc:
        raise AotError(f"--emit-c: {where}: its signature {shown(record.get('signature'))} is not one: {exc}") from None
    problem = _twin_problem(plain, twin)
    if problem is not None:
        raise AotError(f"--emit-c: {where}: the specialized variant {problem}")
    checks = []
    for (name, t), (_, u) in zip(plain, twin):
        if u.one and not t.one:
            checks.append(f"{c_param(name)} == 1")
        elif u.align > t.align:
            checks.append(f"{c_param(name)} % {u.align} == 0")
    data = _fatbin_of(plan, artifacts, entry.name, record["id"])
    var, image = _internal(*index, specialized=True)
    return {"var": var, "image": image, "symbol": symbol, "shared": shared, "bytes": byte_lines(data),
            "size": len(data), "checks": checks, "passed": [c_param(n) for n, u in twin if not u.one]}


def fatbin(images: dict[str, bytes], ptx: tuple[str, bytes], identifier: str) -> bytes:
    """One fatbin of the cubins (by target, ``sm_90a``) and the PTX (its target, text)."""
    try:
        from cuda.bindings import nvfatbin
    except ImportError as exc:
        raise AotError(f"--emit-c needs nvFatbin (pip install 'cuda-toolkit[nvfatbin]==13.0.*'): {exc}") from None
    try:
        handle = nvfatbin.create([], 0)
    except Exception as exc:  # noqa: BLE001 - the library is missing or unusable
        raise AotError(f"--emit-c needs nvFatbin (pip install 'cuda-toolkit[nvfatbin]==13.0.*'): {exc}") from None
    try:
        for target, cubin in images.items():
            nvfatbin.add_cubin(handle, cubin, len(cubin), target.removeprefix("sm_"), identifier)
        target, text = ptx
        nvfatbin.add_ptx(handle, text, len(text), target.removeprefix("sm_"), identifier, "")
        data = bytearray(nvfatbin.size(handle))
        nvfatbin.get(handle, data)
        return bytes(data)
    except Exception as exc:  # noqa: BLE001 - nvFatbin refused an image: say which
        raise AotError(f"--emit-c: nvFatbin could not bundle {identifier}: {exc}") from None
    finally:
        nvfatbin.destroy(handle)


def byte_lines(data: bytes, per_line: int = 24) -> list[str]:
    return [",".join(str(b) for b in data[i:i + per_line]) + "," for i in range(0, len(data), per_line)]


# -- writing and checking -------------------------------------------------------------------------

CHECK_TIMEOUT_S = 600


def write(folder: Path, plan, kernels, artifacts, tuning, version: str, render, remark=None) -> None:
    """Write ``<package>.h`` and ``<package>.c`` into *folder* (rendered by *render*, the
    package's Jinja renderer), then compile them to check them (:func:`check_compiles`); *remark*
    gets the note when the check cannot run."""
    context = {**c_context(plan, kernels, artifacts, tuning), "mytriton_version": version}
    folder.mkdir(parents=True, exist_ok=True)
    package = plan.manifest.package
    (folder / f"{package}.h").write_bytes(render("c/package.h.j2", context).encode())
    (folder / f"{package}.c").write_bytes(render("c/package.c.j2", context).encode())
    skipped = check_compiles(folder, f"{package}.c", render("c/package.c.j2", _images_cut(context)))
    if skipped:
        (remark or print)(f"note: {package}: the C API was not compiled to check it: {skipped}")


def _images_cut(context: dict) -> dict:
    """*context* with each image's initializer cut to its first line (the others left blank, so
    that line numbers stay those of the real file). The lines cut are numbers that byte_lines
    writes; parsing megabytes of them would make the check take seconds per package, not 50 ms."""
    def lines(data: list) -> list:
        return data[:1] + [""] * (len(data) - 1)

    def cut(spec: dict) -> dict:
        twin = spec["twin"] and {**spec["twin"], "bytes": lines(spec["twin"]["bytes"])}
        return {**spec, "bytes": lines(spec["bytes"]), "twin": twin}
    return {**context, "kernels": [{**k, "specs": [cut(s) for s in k["specs"]]} for k in context["kernels"]]}


def check_compiles(folder: Path, name: str, text: str) -> str | None:
    """Compile the C source *text* as *name* beside the header in *folder*, with the system C
    compiler (``$CC``, else ``cc``) as C11, only to check it: AotError with the compiler's messages
    where it does not compile. Returns why it was not checked, or None."""
    if os.environ.get("MYTRITON_EMIT_C_CHECK", "1") == "0":
        return "MYTRITON_EMIT_C_CHECK=0"
    given = os.environ.get("CC", "").strip()
    compiler = shlex.split(given) if given else ["cc"]
    include = cuda_include_dir()
    if include is None:
        return "cuda.h was not found (pip install 'cuda-toolkit[cudart]==13.0.*')"
    with tempfile.TemporaryDirectory(prefix="mytriton-c-check-") as tmp:
        source = Path(tmp) / name
        source.write_text(text, encoding="utf-8")
        command = [*compiler, "-std=c11", "-fsyntax-only", "-I", str(include), "-I", str(folder), str(source)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, cwd=tmp,
                                  env={**os.environ, "LC_ALL": "C"})     # (messages in ASCII)
        except FileNotFoundError:
            return (f"the C compiler {compiler[0]} ($CC) was not found" if given
                    else "no C compiler (cc is not on PATH; set CC)")
        except OSError as exc:
            return f"the C compiler {compiler[0]} does not run ({exc.strerror or exc})"
        except subprocess.TimeoutExpired:
            raise AotError(f"internal error in the generated C API: {compiler[0]} did not finish checking "
                           f"{name} in {CHECK_TIMEOUT_S} s") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        for prefix in (tmp, str(folder)):
            output = output.replace(prefix + os.sep, "")
        raise AotError(f"internal error in the generated C API: {output[:8000]}")
    return None
