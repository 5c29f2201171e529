"""Writing the generated package into a staging folder.

::

    <package>/__init__.py      loader, rendered from templates/loader/__init__.py.j2
    <package>/_runtime.py      mytriton/runtime/driver.py, verbatim
    <package>/_mtlaunch.abi3.so  the native launch path (mytriton/runtime/launcher.c), where it could be built
    <package>/kernels/<kernel>/<spec-id>.<target>.cubin, <spec-id>.ptx, <spec-id>.cu
    <package>/kernels/<kernel>/<spec-id>.specialized.<target>.cubin, ...  its specialized variant's
    <package>/manifest.json    what was built, with per-artifact sha256 and the cache keys
    <package>/pyproject.toml   so that `pip install` / `pip wheel` ship the kernels
    <package>/setup.py         only with the native library: tags the wheel cp310-abi3-<platform>
    <package>/tuning.json      kernels with ``autotune:``, once tuned: the timings and the choices
    <package>/tuning.txt, tuning.png   the same as a table and (with matplotlib) a plot
    <package>/c/<package>.h, <package>.c   with ``--emit-c``: the C API (fatbins embedded)

User text reaches the generated Python and TOML only through the escaping filters at the end of
this file (``py``, ``toml``, ``comment``); names are checked as identifiers by the manifest.

Everything written is a function of the inputs only (no timestamps, fixed key order), so two
builds of the same manifest are byte-identical.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..backends.names import comment_text
from ..frontend.descriptors import uses_tma
from .cache import CACHE_FORMAT, GENERATOR, Toolchain, sha256_bytes
from .errors import AotError
from .jobs import Artifacts, launch_maps
from .manifest import KernelEntry, Manifest, Specialization
from .variants import variant_id
from . import capi, tuning as _tuning
from ..runtime import native

from .._paths import templates_dir as _templates_dir  # noqa: E402

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent        # mytriton/
RUNTIME_SOURCE = _PACKAGE_ROOT / "runtime" / "driver.py"


def templates_dir() -> Path:
    """The templates folder (see ``mytriton._paths``), checked to hold the loader templates."""
    found = _templates_dir()
    if not (found / "loader").is_dir():
        raise AotError(f"the loader templates are missing from {found}")
    return found


@dataclass(frozen=True)
class PackagePlan:
    """One manifest to build: its kernels, the targets in effect and the destination."""

    manifest: Manifest
    targets: tuple[str, ...]        # oldest first; targets[0] also gets the PTX
    dest: Path

    @property
    def ptx_target(self) -> str:
        return self.targets[0]

    @property
    def hoists_tensor_maps(self) -> bool:
        """Whether its kernels' descriptors made in the kernel get tensor maps encoded at launch
        (frontend/launch_maps.py): where a target copies through them (sm_90a)."""
        return any(uses_tma(t) for t in self.targets)


def write_package(folder: Path, plan: PackagePlan, toolchain: Toolchain,
                  artifacts: dict[tuple[str, str, str], Artifacts],
                  keys: dict[tuple[str, str, str], str], launcher: native.NativeBuild | None = None,
                  tuning: dict | None = None, emit_c: bool = False, remark=None,
                  analyses: dict | None = None) -> None:
    """Write the whole package into *folder*; *artifacts*/*keys* by (kernel, spec id, target), a
    specialized variant's by its id (``variants.variant_id``); *launcher* is the native launch
    library, when one was built; *tuning* the package's tuning record (see :mod:`.tuning`), when
    its tuned kernels were timed; *emit_c* adds the C API (``c/<package>.h`` and ``.c``, see
    :mod:`.capi`; *remark* gets its notes); *analyses* the specializations' Variants by (kernel,
    spec id) (see :mod:`.variants`)."""
    kernels = []
    for entry in plan.manifest.kernels:
        specs = [_write_spec(folder, plan, entry, spec, artifacts, keys, (analyses or {}).get((entry.name, spec.id)))
                 for spec in entry.specializations]
        kernels.append((entry, specs))
    library = None
    if launcher is not None and launcher.data is not None:
        library = {"file": native.FILENAME, "sha256": _write(folder / native.FILENAME, launcher.data),
                   "key": launcher.key, "compiler": launcher.compiler, "platform": launcher.platform,
                   "abi": "abi3 (CPython >= 3.10)"}
    context = _template_context(plan, toolchain, kernels, tuning)
    context["native"] = library and {**library, "limited_api": LIMITED_API, "plat_name": _plat_name(library)}
    context["wheel_tag"] = wheel_tag(library)
    context["package_data"] = ["manifest.json", "kernels/*/*.cubin", "kernels/*/*.ptx", "kernels/*/*.cu",
                               *([library["file"]] if library else [])]
    _write(folder / "__init__.py", _render("loader/__init__.py.j2", context).encode())
    _write(folder / "pyproject.toml", _render("loader/pyproject.toml.j2", context).encode())
    if library:
        _write(folder / "setup.py", _render("loader/setup.py.j2", context).encode())
    try:
        _write(folder / "_runtime.py", RUNTIME_SOURCE.read_bytes())
    except OSError as exc:
        raise AotError(f"cannot copy the runtime {RUNTIME_SOURCE}: {exc.strerror}") from None
    _write(folder / "manifest.json", _manifest_json(plan, toolchain, kernels, library, tuning).encode())
    if emit_c:
        capi.write(folder / "c", plan, kernels, artifacts, tuning, toolchain.mytriton_version, _render, remark)
    if tuning is not None:
        _write(folder / "tuning.json", _tuning.to_json(tuning).encode())
        _write(folder / "tuning.txt", _tuning.report_text(tuning).encode())
        _tuning.write_plot(tuning, folder / "tuning.png")


def _write_spec(folder, plan, entry: KernelEntry, spec: Specialization, artifacts, keys, analysis=None) -> dict:
    """Write one specialization's files (and its specialized variant's); return its manifest.json
    record: the plain variant's images at its top, its ``variants`` in the order a launch tries them,
    and ``specialize``: the analysis (its key, the variant's signature or None, and why)."""
    record = {**_write_images(folder, plan, entry, spec, spec.id, artifacts, keys), "id": spec.id,
              "constexprs": dict(spec.constexprs), "num_warps": spec.num_warps, "num_stages": spec.num_stages}
    plain = {"name": "plain", "signature": [list(p) for p in entry.params]}
    variants = [plain]
    if analysis is not None and analysis.signature is not None:
        vid = variant_id(spec.id)
        twin = _write_images(folder, plan, entry, spec, vid, artifacts, keys)
        # (the runtime launches no specialized variant of a kernel that encodes tensor maps)
        if not twin.get("made_tensor_maps") and not record.get("made_tensor_maps"):
            variants.insert(0, {"name": "specialized", "id": vid, "signature": [list(p) for p in analysis.signature],
                                **twin})
    record["variants"] = variants
    record["specialize"] = None if analysis is None else {
        "analysis": analysis.key, "why": analysis.why,
        "signature": None if analysis.signature is None else [list(p) for p in analysis.signature]}
    return record


def specialized_record(record: dict) -> dict | None:
    """The specialized variant of a specialization's manifest.json record, or None."""
    return next((v for v in record["variants"] if v["name"] == "specialized"), None)


def _write_images(folder, plan, entry: KernelEntry, spec: Specialization, ident: str, artifacts, keys) -> dict:
    """Write the images of one compiled variant (``ident``: the spec id, or its specialized
    variant's) and return what manifest.json records of them."""
    base = f"kernels/{entry.name}/{ident}"
    images, sha256, build = {}, {}, {}
    for target in plan.targets:
        result = artifacts[entry.name, ident, target]
        images[target] = f"{base}.{target}.cubin"
        sha256[target] = _write(folder / images[target], result.cubin)
        build[target] = {"key": keys[entry.name, ident, target], "shared": result.shared,
                         "symbol": result.symbol}
        if result.made_tensor_maps:
            build[target]["made_tensor_maps"] = list(result.made_tensor_maps)
        if result.explain:           # (what computes its tensor-core dots, and why: mytriton-build --explain)
            build[target]["explain"] = list(result.explain)
    lowest = artifacts[entry.name, ident, plan.ptx_target]
    images["ptx"] = f"{base}.ptx"
    sha256["ptx"] = _write(folder / images["ptx"], lowest.ptx.encode("utf-8"))
    sha256["cu"] = _write(folder / f"{base}.cu", lowest.cu.encode("utf-8"))
    symbols = {b["symbol"] for b in build.values()}
    if len(symbols) != 1:
        raise AotError(f"{entry.name} {spec.label}: the compiler named the kernel differently per "
                       f"target ({', '.join(sorted(symbols))})")
    try:
        made = launch_maps({t: artifacts[entry.name, ident, t] for t in plan.targets})
    except ValueError as exc:
        raise AotError(f"{entry.name} {spec.label}: {exc}") from None
    return {
        **made,
        # One launch setting for every image: the largest dynamic shared memory any target needs.
        "shared": max(b["shared"] for b in build.values()),
        "symbol": symbols.pop(),
        "images": images,
        "source": f"{base}.cu",
        "sha256": sha256,
        "build": build,
    }


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha256_bytes(data)


def _autotune_json(entry: KernelEntry, tuning: dict | None) -> dict | None:
    if entry.autotune is None:
        return None
    return {"key": list(entry.autotune.key), "problems": list(entry.autotune.problems),
            "inputs": entry.autotune.inputs_ref, "tuned": tuning is not None,
            "choices": _tuning.dispatch_table(entry, tuning)["choices"]}


def _manifest_json(plan: PackagePlan, toolchain: Toolchain, kernels, library: dict | None,
                   tuning: dict | None = None) -> str:
    data = {
        "native_launcher": library,
        "generator": GENERATOR,
        "cache_format": CACHE_FORMAT,
        "package": plan.manifest.package,
        "version": plan.manifest.version,
        "mytriton_version": toolchain.mytriton_version,
        "nvrtc_version": toolchain.nvrtc_version,
        "targets": list(plan.targets),
        "ptx_target": plan.ptx_target,
        "kernels": {
            entry.name: {
                "kernel": entry.portable_ref or entry.source.ref,
                "signature": [list(param) for param in entry.params],
                "constexpr_names": list(entry.constexpr_names),
                "num_warps": sorted({spec.num_warps for spec in entry.specializations}),
                "targets": list(plan.targets),
                "specializations": specs,
                **({"autotune": _autotune_json(entry, tuning)} if entry.autotune is not None else {}),
            }
            for entry, specs in kernels
        },
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _template_context(plan: PackagePlan, toolchain: Toolchain, kernels, tuning: dict | None = None) -> dict:
    """Plain data for the templates; all decisions are made here, not in Jinja."""
    image_keys = [*plan.targets, "ptx"]
    names = [entry.name for entry, _ in kernels]
    return {
        "package": plan.manifest.package,
        "version": plan.manifest.version,
        "description": f"Prebuilt mytriton GPU kernels ({', '.join(plan.targets)}): {', '.join(names)}",
        "manifest_name": os.path.basename(plan.manifest.path),
        "mytriton_version": toolchain.mytriton_version,
        "nvrtc_version": toolchain.nvrtc_version,
        "targets": list(plan.targets),
        "exports": names + ["DeviceArray", "cdiv"],
        "kernels": [
            {
                "name": entry.name,
                "params": [tuple(param) for param in entry.params],
                "constexpr_names": list(entry.constexpr_names),
                "tuning": _tuning.dispatch_table(entry, tuning) if entry.autotune is not None else None,
                "specs": [
                    {
                        "id": record["id"],
                        "constexprs": record["constexprs"],
                        "num_warps": record["num_warps"],
                        "num_stages": record["num_stages"],
                        "shared": record["shared"],
                        "symbol": record["symbol"],
                        "images": [(key, record["images"][key]) for key in image_keys],
                        "sha256": [(key, record["sha256"][key]) for key in image_keys],
                        "made_tensor_maps": record.get("made_tensor_maps"),
                        "tma_images": record.get("tma_images"),
                        "specialized": _loader_variant(specialized_record(record), image_keys),
                    }
                    for record in specs
                ],
            }
            for entry, specs in kernels
        ],
    }


def _loader_variant(variant: dict | None, image_keys) -> dict | None:
    """What the loader's spec dict holds of a specialized variant (``Kernel``'s ``specialized``)."""
    if variant is None:
        return None
    return {"signature": [tuple(p) for p in variant["signature"]], "shared": variant["shared"],
            "symbol": variant["symbol"], "images": [(key, variant["images"][key]) for key in image_keys],
            "sha256": [(key, variant["sha256"][key]) for key in image_keys]}


_environment = None


def _render(name: str, context: dict) -> str:
    global _environment
    if _environment is None:
        import jinja2
        _environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(templates_dir())), undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
        _environment.filters["py"] = py_literal
        _environment.filters["toml"] = toml_value
        _environment.filters["comment"] = comment_text
        _environment.filters["c_string"] = capi.c_string
    return _environment.get_template(name).render(context)


def py_literal(value) -> str:
    """Python source for *value* (str, int, float, bool, None, and lists, tuples and dicts of those):
    ``repr``, except that non-finite floats, whose repr (``inf``, ``nan``) is no Python expression,
    become ``float('inf')``, ``float('-inf')`` and ``float('nan')``."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(py_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


# -- escaping: the only ways user text enters a generated file ------------------------------------
# (comments: ``comment_text``, the same escaper as for generated CUDA and MLIR, imported above)

def toml_value(value) -> str:
    """A TOML string or array of strings: JSON's escaping, ASCII only, is valid TOML."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=True)


# -- the wheel's tag ------------------------------------------------------------------------------

LIMITED_API = "cp310"       # launcher.c is built against CPython's stable ABI of 3.10


def _plat_name(library: dict) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", library["platform"]).lower()


def wheel_tag(library: dict | None) -> str:
    """The tag of the package's wheel: ``cp310-abi3-<platform>`` with the native library (it is
    machine code for the build machine's platform), ``py3-none-any`` without."""
    return f"{LIMITED_API}-abi3-{_plat_name(library)}" if library else "py3-none-any"
