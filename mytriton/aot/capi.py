"""The C API of a package (``mytriton-build --emit-c``): ``c/<package>.h`` and ``c/<package>.c``.

Plain C11 that needs only ``cuda.h`` (the driver API) and the C standard headers::

    CUresult <package>_load(void);      every specialization in the current context (optional)
    CUresult <package>_unload(void);    every module, in every context it was loaded in
    CUresult <package>_<kernel>_<spec id>(CUstream, unsigned gx, unsigned gy, unsigned gz, <args>);
    CUresult <package>_<kernel>(CUstream, unsigned gx, gy, gz, <args>, <constexprs>, int num_warps);

and for a kernel tuned at build time its configs (``<package>_<kernel>_configs[]``), the tuned choice
for key values (``<package>_<kernel>_best(<key>)``: the Python loader's rule, in C) and
``<package>_<kernel>_launch_config(config, stream, gx, gy, gz, <args>)``.

Each specialization's images (every target's cubin and the PTX) are one fatbin made with nvFatbin
and embedded as bytes, so the driver picks the best image for the GPU. A function is loaded on
first use in the calling thread's current context (one per device with the primary contexts the
CUDA runtime uses), under a lock; later launches find it without locking. Every failure is a
returned ``CUresult``: CUDA_ERROR_INVALID_CONTEXT without a current context, CUDA_ERROR_INVALID_VALUE
for an argument that breaks the signature's promises (alignment, divisibility, ``:1``),
CUDA_ERROR_NOT_FOUND for constexpr values that were not built.

A kernel that makes tensor descriptors whose tensor maps the launch encodes (a build with sm_90a:
``frontend/launch_maps.py``) computes them from its arguments in C and encodes them with
``cuTensorMapEncodeTiled`` at each launch; where TMA cannot copy a descriptor (TMA's rules, checked
first), the launch returns CUDA_ERROR_INVALID_VALUE on a GPU of compute capability 9.0 (whose
sm_90a image copies through the map) and passes zeros elsewhere (its image reads memory itself).

User text reaches the C files only as checked identifiers (kernel, parameter and package names;
specialization ids), escaped comments and escaped string literals (:func:`c_string`).
"""
from __future__ import annotations

import math

from ..runtime.driver import _SWIZZLES, DTYPES, parse_type, tma_data_type
from .errors import AotError

# The C type of a scalar argument: the kernel's parameter type, bit for bit (halves as their bits).
_C_SCALAR = {"i1": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
             "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
             "fp16": "uint16_t", "bf16": "uint16_t", "fp32": "float", "fp64": "double"}
# Names a C parameter cannot have: C11's keywords, what the generated code defines, what the
# headers define as macros or types people use.
C_RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    bool true false NULL stream gx gy gz num_warps err function params made_maps
""".split())


def c_param_name(name: str) -> str:
    """A kernel parameter's name in the C functions (``int`` becomes ``int_``)."""
    return f"{name}_" if name in C_RESERVED or name.startswith("_") else name


def _unique_names(names) -> dict[str, str]:
    """Each kernel parameter's C name: :func:`c_param_name`, made unique (``int`` and ``int_``)."""
    out, taken = {}, set()
    for name in names:
        c_name = c_param_name(name)
        while c_name in taken:
            c_name += "_"
        out[name] = c_name
        taken.add(c_name)
    return out


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
    if isinstance(value, bool):
        return "bool", "true" if value else "false"
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise AotError(f"--emit-c: the constexpr value {value} does not fit a C int64_t")
        return "int64_t", f"INT64_C({value})" if value != -2**63 else "INT64_MIN"
    if isinstance(value, float):
        if math.isnan(value):
            return "double", "NAN"
        if math.isinf(value):
            return "double", "INFINITY" if value > 0 else "-INFINITY"
        return "double", value.hex()
    return "const char *", c_string(str(value))


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


def _double(value) -> str:
    """An exact C double literal of a number."""
    return float(value).hex() if math.isfinite(float(value)) else ("INFINITY" if value > 0 else "-INFINITY")


def _c_expr(expr, names: dict) -> str:
    """C for an expression of a tensor map's recipe (``frontend/launch_maps.py``): the kernel's
    wrapping integer arithmetic, computed in the unsigned type of its width."""
    kind = expr[0]
    if kind == "param":
        return names[expr[1]]
    if kind == "const":
        return f"INT64_C({expr[1]})" if expr[1] != -2**63 else "INT64_MIN"
    if kind == "cast":
        return f"({_C_SCALAR[expr[1]]})({_c_expr(expr[2], names)})"
    if kind == "addptr":
        return f"((uint64_t)({_c_expr(expr[2], names)}) + (uint64_t)(int64_t)({_c_expr(expr[3], names)}) * {expr[1]}u)"
    ctype = _C_SCALAR[expr[1]]
    unsigned = ctype if ctype.startswith("u") else "u" + ctype
    op = {"add": "+", "sub": "-", "mul": "*"}[kind]
    return f"({ctype})(({unsigned})({_c_expr(expr[2], names)}) {op} ({unsigned})({_c_expr(expr[3], names)}))"


def _c_maps(recipes, names: dict) -> list[dict]:
    """What the C launch of a specialization computes for each tensor map it encodes: its
    arguments to ``mt_made_tensor_map``, innermost dimension first (TMA's order)."""
    out = []
    for r in recipes:
        out.append({"where": r["where"], "type": f"CU_TENSOR_MAP_DATA_TYPE_{tma_data_type(r['dtype'], r['padding'])}",
                    "rank": len(r["shape"]), "elem": DTYPES[r["dtype"]].itemsize,
                    "base": _c_expr(r["base"], names),
                    "dims": [_c_expr(e, names) for e in reversed(r["shape"])],
                    "strides": [_c_expr(e, names) for e in reversed(r["strides"])] or ["0"],
                    "box": [str(int(b)) for b in reversed(r["box"])],
                    "swizzle": f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[r['swizzle']]}",
                    "fill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if r["padding"] == "nan"
                    else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"})
    return out


def c_context(plan, kernels, artifacts, tuning: dict | None = None) -> dict:
    """What the C templates need: plain data, decided here. A kernel tuned at build time also gets
    its configs and the tuning's choices (*tuning*: the package's record, or None: no choices)."""
    package = plan.manifest.package
    out = []
    for entry, records in kernels:
        params, names = [], _unique_names([*(n for n, _ in entry.params), *entry.constexpr_names])
        for name, type_text in entry.params:
            t = parse_type(type_text)
            params.append({
                "name": names[name], "type": "CUdeviceptr" if t.is_pointer else _C_SCALAR[t.dtype],
                "passed": not t.one, "one": t.one, "pointer": t.is_pointer,
                "align": t.align if t.align > 1 and (t.is_pointer or DTYPES[t.dtype].kind in ("int", "uint")) else 0,
            })
        constexprs = []
        for name in entry.constexpr_names:
            types = {c_constant(dict(spec.constexprs)[name])[0] for spec in entry.specializations}
            if len(types) > 1:
                raise AotError(f"--emit-c: {entry.name}'s constexpr {name} takes values of several C types "
                               f"({', '.join(sorted(types))}); its C dispatcher needs one")
            constexprs.append({"name": names[name], "type": types.pop(), "raw": name})
        specs = []
        for spec, record in zip(entry.specializations, records):
            images = {target: artifacts[entry.name, spec.id, target].cubin for target in plan.targets}
            ptx = artifacts[entry.name, spec.id, plan.ptx_target].ptx.encode("utf-8")
            data = fatbin(images, (plan.ptx_target, ptx), f"{entry.name}.{spec.id}")
            values = dict(spec.constexprs)
            conditions = []
            for c in constexprs:
                ctype, literal = c_constant(values[c["raw"]])
                if ctype == "const char *":
                    conditions.append(f"{c['name']} != NULL && strcmp({c['name']}, {literal}) == 0")
                elif ctype == "double" and literal == "NAN":
                    conditions.append(f"isnan({c['name']})")
                else:
                    conditions.append(f"{c['name']} == {literal}")
            specs.append({"id": spec.id, "label": spec.label, "symbol": record["symbol"], "shared": record["shared"],
                          "threads": 32 * spec.num_warps, "num_warps": spec.num_warps, "bytes": byte_lines(data),
                          "size": len(data), "conditions": conditions,
                          "maps": _c_maps(record.get("made_tensor_maps") or (), names)})
        tuned = None
        if entry.autotune is not None:
            from .tuning import dispatch_table
            table = dispatch_table(entry, tuning)
            by_name = {n: p for (n, _), p in zip(entry.params, params)}
            tuned = {"key": [by_name[n] for n in table["key"]],
                     "choices": [([_double(v) for v in values], index) for values, index in table["choices"]],
                     "values": [[c_constant(dict(s.constexprs)[c["raw"]])[1] for c in constexprs]
                                for s in entry.specializations]}
        out.append({"name": entry.name, "ref": entry.portable_ref or entry.source.ref, "params": params,
                    "constexprs": constexprs, "specs": specs, "tuned": tuned})
    return {"package": package, "guard": package.upper() + "_H", "targets": list(plan.targets),
            "ptx_target": plan.ptx_target, "kernels": out,
            "made_maps": any(spec["maps"] for kernel in out for spec in kernel["specs"])}
