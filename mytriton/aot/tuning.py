"""Build-time autotuning: time every config of a kernel's ``autotune:`` on every problem, record
the results (``tuning.json``), and turn them into the loader's dispatch table.

::

    --tune:         compiled configs ─→ inputs(problem) ─→ per config: restore the arrays, launch,
                    check the output against the first config's, time it (L2 flushed, median)
                    ─→ the fastest correct config per problem ─→ tuning.json + report
    --tune-from F:  F (a tuning.json of an earlier --tune) checked against the manifest ─→ the same

A package is a function of its manifest and its tuning record only: ``--tune-from`` the file a
``--tune`` wrote builds the same bytes on a machine without a GPU.

The record (``tuning.json``)::

    {"format": 1, "package": "...", "device": {"name", "compute_capability", "driver"},
     "method": {...how times were taken...},
     "kernels": {"<kernel>": {"key": [...], "inputs": "file.py:function",
                              "configs": [{"id", "constexprs", "num_warps", "num_stages"}, ...],
                              "problems": [{"problem": {...}, "times_ms": [t | null per config],
                                            "notes": [null | why per config], "best": index | null,
                                            "variants": ["specialized" | "plain" | null per config]}]}}}

A config with a specialized variant (``aot/variants.py``) is timed as a launch runs it: its
specialized variant where the problem's arguments keep that one's promises, else its plain one;
``variants`` says which (records of builds without variants have no ``variants``).
"""
from __future__ import annotations

import json
import math
import reprlib
import time
from pathlib import Path
from typing import Callable

from . import kernel_source
from .jobs import launch_maps
from .errors import ManifestError, UsageError
from .manifest import KernelEntry, Manifest, Specialization
from ..runtime.driver import constexpr_identity

FORMAT = 1
WARMUP_MS, REP_MS = 25, 100
# The output check's default tolerances by the element type of a pointer parameter: an element
# differs when |x - ref| > atol * max|ref| + rtol * |ref| (NaNs must be NaNs in both; integers exact).
TOLERANCE = {"fp64": (1e-9, 1e-9), "fp32": (1e-4, 1e-4)}
HALF_TOLERANCE = (1e-2, 1e-2)       # fp16, bf16 and the fp8 types
# CUresults after which the context is unusable: tuning cannot go on in this process.
_STICKY = {700, 702, 714, 715, 716, 717, 718, 719}


def tuned_entries(manifest: Manifest) -> list[KernelEntry]:
    return [entry for entry in manifest.kernels if entry.autotune is not None]


def config_record(spec: Specialization) -> dict:
    return {"id": spec.id, "constexprs": dict(spec.constexprs), "num_warps": spec.num_warps,
            "num_stages": spec.num_stages}


def to_json(record: dict) -> str:
    """The file's text. Keys keep their order (the manifest's: configs' constexprs and problems read
    as written), which a load keeps too, so a --tune-from build writes the same bytes."""
    return json.dumps(record, indent=2) + "\n"


# -- the dispatch table ---------------------------------------------------------------------------

def dispatch_table(entry: KernelEntry, record: dict | None) -> dict:
    """The loader's table for a tuned kernel: ``{"key": [...], "choices": [[key values, config
    index], ...]}`` (problems where no config ran are left out; no record: no choices, so the
    first config is launched)."""
    choices = []
    if record is not None:
        kernel = record["kernels"][entry.name]
        choices = [[[item["problem"][name] for name in kernel["key"]], item["best"]]
                   for item in kernel["problems"] if item["best"] is not None]
    return {"key": list(entry.autotune.key), "choices": choices}


# -- --tune-from ----------------------------------------------------------------------------------

def load_recorded(paths: list[str], manifests: list[Manifest]) -> dict[str, dict]:
    """The records of ``--tune-from`` files by package, each checked to hold exactly the tuned
    kernels, configs and problems of its package's manifest, every field as --tune writes it;
    UsageError naming the file (and the field) otherwise."""
    packages = {m.package: m for m in manifests}
    records = {}
    for path in paths:
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"--tune-from {path}: cannot read it: {exc.strerror or exc}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"--tune-from {path}: not a tuning.json ({exc})") from None
        except RecursionError:
            raise UsageError(f"--tune-from {path}: not a tuning.json (nested too deeply)") from None
        if (not isinstance(record, dict) or type(record.get("format")) is not int or record["format"] != FORMAT
                or not isinstance(record.get("kernels"), dict)):
            raise UsageError(f"--tune-from {path}: not a tuning.json of format {FORMAT} (written by mytriton-build --tune)")
        package = record.get("package")
        if not isinstance(package, str) or package not in packages:
            raise UsageError(f"--tune-from {path}: records package {_shown(package)}, which none of the manifests "
                             f"builds ({', '.join(packages)})")
        if package in records:
            raise UsageError(f"--tune-from {path}: a second record of package {package!r}")
        _check_record(path, record, packages[package])
        records[package] = record
    return records


DEVICE_FIELDS = ("name", "compute_capability", "driver")


def _check_record(path: str, record: dict, manifest: Manifest) -> None:
    """Every field a build reads from *record* (the dispatch table of the loader and the C API,
    the report, the plot) as ``measure`` writes it, and its kernels, configs and problems the
    manifest's, compared by identity (1.0 is not 1); UsageError otherwise."""
    def bad(where: str):
        return lambda message: UsageError(f"--tune-from {path}: {where}{message}")

    def stale(what: str) -> UsageError:
        return UsageError(f"--tune-from {path}: {what}; the manifest {manifest.path} changed since it was "
                          "tuned: run mytriton-build --tune again on a machine with a GPU")
    device = record.get("device")
    if not isinstance(device, dict):
        raise bad("")(f"device must be a mapping of the GPU's {', '.join(DEVICE_FIELDS[:-1])} and "
                      f"{DEVICE_FIELDS[-1]}, got {_shown(device)}")
    for field in DEVICE_FIELDS:
        if not isinstance(device.get(field), str):
            raise bad("")(f"device.{field} must be a string, got {_shown(device.get(field))}")
    if not isinstance(record.get("method", {}), dict):
        raise bad("")(f"method must be a mapping, got {_shown(record['method'])}")
    entries = {entry.name: entry for entry in tuned_entries(manifest)}
    for name in record["kernels"]:
        if name not in entries:
            raise stale(f"it records kernel '{name}', which the manifest does not tune")
    for name, entry in entries.items():
        if name not in record["kernels"]:
            raise stale(f"it does not record kernel '{name}'")
        _check_kernel(record["kernels"][name], entry, lambda where: bad(f"kernel '{name}'{where}: "),
                      lambda what: stale(f"kernel '{name}': {what}"))


def _check_kernel(kernel, entry: KernelEntry, bad, stale) -> None:
    """One kernel's record; *bad(where)* makes the error of a field, *stale(what)* of a record of
    other configs, key or problems than the manifest's."""
    if not isinstance(kernel, dict) or not all(field in kernel for field in ("key", "inputs", "configs", "problems")):
        raise bad("")(f"must be a mapping with 'key', 'inputs', 'configs' and 'problems', got {_shown(kernel)}")
    for field, kind, what in (("inputs", str, "a string"), ("configs", list, "a list"), ("problems", list, "a list")):
        if not isinstance(kernel[field], kind):
            raise bad("")(f"{field} must be {what}, got {_shown(kernel[field])}")
    configs = kernel["configs"]
    for i, config in enumerate(configs):
        if not (isinstance(config, dict) and isinstance(config.get("id"), str)
                and isinstance(config.get("constexprs"), dict) and "num_warps" in config and "num_stages" in config):
            raise bad(f", configs[{i}]")("must be a mapping with 'id' (a string), 'constexprs' (a mapping), "
                                         f"'num_warps' and 'num_stages', got {_shown(config)}")
    wanted = [config_record(spec) for spec in entry.specializations]
    if len(configs) != len(wanted) or not all(map(_same_config, configs, wanted)):
        missing = [_config_label(w) for w in wanted if not any(_same_config(c, w) for c in configs)]
        detail = f" (not recorded: {'; '.join(missing)})" if missing else ""
        raise stale(f"the recorded configs are not the manifest's{detail}")
    if not _same(kernel["key"], list(entry.autotune.key)):
        raise stale(f"it was tuned on the key {_shown(kernel['key'])}, the manifest's is {list(entry.autotune.key)}")
    problems = kernel["problems"]
    for i, item in enumerate(problems):
        if not (isinstance(item, dict) and isinstance(item.get("problem"), dict)):
            raise bad(f", problem {i + 1}")("must be a mapping with 'problem', 'times_ms', 'notes' and 'best', "
                                            f"got {_shown(item)}")
    if len(problems) != len(entry.autotune.problems) or not all(
            _same(item["problem"], problem) for item, problem in zip(problems, entry.autotune.problems)):
        raise stale("the recorded problems are not the manifest's")
    for i, item in enumerate(problems):
        shown = " ".join(f"{k}={v}" for k, v in item["problem"].items())
        _check_timing(item, len(configs), bad(f", problem {i + 1} ({shown})"))


def _check_timing(item: dict, count: int, bad) -> None:
    """A problem's times_ms, notes and best: one time (milliseconds > 0, or null: it did not run)
    and one note (a string or null) per config, best the index of a config that ran unexcluded."""
    times, notes = item.get("times_ms"), item.get("notes")
    if not isinstance(times, list) or len(times) != count:
        raise bad(f"times_ms must list one time per config ({count}), got {_shown(times)}")
    for j, t in enumerate(times):
        if t is not None and not (type(t) in (int, float) and math.isfinite(t) and t > 0):
            raise bad(f"times_ms[{j}] must be a positive finite number of milliseconds or null, got {_shown(t)}")
    if not isinstance(notes, list) or len(notes) != count:
        raise bad(f"notes must list one note per config ({count}), got {_shown(notes)}")
    for j, note in enumerate(notes):
        if note is not None and not isinstance(note, str):
            raise bad(f"notes[{j}] must be a string or null, got {_shown(note)}")
    if "best" not in item:
        raise bad("best is missing (the index of a config, or null)")
    variants = item.get("variants", [None] * count)
    if not isinstance(variants, list) or len(variants) != count or any(
            v not in (None, "specialized", "plain") for v in variants):
        raise bad(f"variants must list one of \"specialized\", \"plain\" or null per config ({count}), got "
                  f"{_shown(variants)}")
    best = item["best"]
    if best is None:
        return
    if type(best) is not int or not 0 <= best < count:
        raise bad(f"best must be the index of a config (0 to {count - 1}) or null, got {_shown(best)}")
    if times[best] is None:
        raise bad(f"best is config {best}, which did not run (times_ms[{best}] is null)")
    if notes[best] is not None:
        raise bad(f"best is config {best}, which was excluded: {notes[best]}")


def _same(a, b) -> bool:
    """Whether the JSON value *a* is the manifest's value *b*: of the same kind and bits, except
    that any NaN is a NaN (JSON keeps no NaN's bits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) is float and type(b) is float and math.isnan(a) and math.isnan(b):
        return True
    identity = constexpr_identity(a)
    return identity is not None and identity == constexpr_identity(b)


def _same_config(recorded: dict, wanted: dict) -> bool:
    return all(_same(recorded.get(field), wanted[field]) for field in ("constexprs", "num_warps", "num_stages"))


def _shown(value) -> str:
    """*value* as an error shows it: its repr, bounded in length and depth."""
    return _REPR.repr(value)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 60, 60, 6, 6


# -- --tune ---------------------------------------------------------------------------------------

def measure(manifest: Manifest, artifacts: dict, echo: Callable[[str], None], signatures: dict | None = None) -> dict:
    """Time the tuned kernels of *manifest* on this machine's current GPU; *artifacts* maps
    (kernel, spec id, target) to the compiled Artifacts (a specialized variant's by its id,
    ``variants.variant_id``), *signatures* (kernel, spec id) to its specialized variant's signature.
    Returns the package's tuning record."""
    from ..runtime import driver
    try:
        driver._init()
        device = driver.current_device()
        name, cc = driver.device_name(device), driver.compute_capability(device)
        major, minor = driver._cuda_driver_version()
    except RuntimeError as exc:
        raise UsageError(f"--tune needs a GPU to time the configs on ({exc}); on a machine without one, "
                         "reuse a recorded tuning with --tune-from FILE") from None
    entries = tuned_entries(manifest)
    progress = _Progress(sum(len(e.specializations) * len(e.autotune.problems) for e in entries), echo)
    kernels = {}
    for entry in entries:
        kernels[entry.name] = record = _Tuner(manifest, entry, artifacts, progress, signatures or {}).run()
        if all(item["best"] is None for item in record["problems"]):
            why = next((n for item in record["problems"] for n in item["notes"] if n), "no reason recorded")
            raise UsageError(f"{manifest.path}: {entry.name}: no config ran correctly on {name} (the first "
                             f"reason: {why}); nothing could be chosen, so no package was written")
    return {"format": FORMAT, "package": manifest.package,
            "device": {"name": name, "compute_capability": f"{cc[0]}.{cc[1]}", "driver": f"{major}.{minor}"},
            "method": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "statistic": "median", "l2_flushed": True,
                       "check": "every config's output against the first config that ran"},
            "kernels": kernels}


class _Progress:
    """One line per timed (config, problem): a bar, the count, the elapsed time and an estimate."""

    def __init__(self, total: int, echo):
        self.total, self.done, self.echo, self.start = total, 0, echo, time.perf_counter()

    def step(self, label: str, result: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.done * (self.total - self.done)
        filled = round(20 * self.done / max(self.total, 1))
        width = len(str(self.total))
        self.echo(f"tune [{'#' * filled}{'.' * (20 - filled)}] {self.done:>{width}}/{self.total} "
                  f"{label}: {result}  ({elapsed:.1f} s, ~{left:.0f} s left)")


class _Tuner:
    """Times one kernel's configs on each of its problems."""

    def __init__(self, manifest: Manifest, entry: KernelEntry, artifacts: dict, progress: _Progress,
                 signatures: dict | None = None):
        from ..runtime import driver
        from .variants import variant_id
        self.manifest, self.entry, self.progress = manifest, entry, progress
        self.tune = entry.autotune
        self.kernels = []
        for spec in entry.specializations:
            plain = _built(artifacts, entry.name, spec.id)
            twin = _built(artifacts, entry.name, variant_id(spec.id))
            signature = (signatures or {}).get((entry.name, spec.id))
            specialized = None
            if twin and signature is not None and not launch_maps(twin) and not launch_maps(plain):
                specialized = {"signature": signature, **_kernel_images(twin)}
            own = _kernel_images(plain)
            self.kernels.append(driver.Kernel(entry.name, entry.params, spec.num_warps, own["shared"], own["images"],
                                              symbol=own["symbol"], specialized=specialized, **launch_maps(plain)))

    def error(self, message: str) -> ManifestError:
        return ManifestError(self.manifest.path, self.tune.inputs_line, f"{self.entry.name}: {message}")

    def run(self) -> dict:
        try:
            inputs = kernel_source.load_function(self.tune.inputs)
        except kernel_source.KernelImportError as exc:
            raise self.error(str(exc)) from None
        problems = [self.problem(inputs, problem) for problem in self.tune.problems]
        return {"key": list(self.tune.key), "inputs": self.tune.inputs_ref,
                "configs": [config_record(spec) for spec in self.entry.specializations], "problems": problems}

    def problem(self, inputs, problem: dict) -> dict:
        from ..runtime import bench, driver
        grid, args = self.call_inputs(inputs, problem)
        arrays = _Arrays(self.entry.params, args)
        times, notes, reference, variants = [], [], None, []
        shown = " ".join(f"{k}={v}" for k, v in problem.items())
        for spec, kernel in zip(self.entry.specializations, self.kernels):
            label = f"{self.entry.name} {spec.label} @ {shown}"
            arrays.restore()
            try:
                variants.append(kernel.variant_for(args) if kernel.twin is not None else None)
                label += " (specialized)" * (variants[-1] == "specialized")
                launch_grid = self.grid(grid, spec, args)
                kernel.launch(launch_grid, args)
                driver.synchronize()
            except Exception as exc:  # noqa: BLE001 - a config that cannot run is skipped, with why
                _fatal(exc, label)
                variants[len(times):] = [None]
                times.append(None)
                notes.append(f"failed to launch: {exc}")
                self.progress.step(label, f"skipped ({notes[-1]})")
                continue
            outputs = arrays.read()
            note = None
            if reference is None:
                reference = (spec, outputs)
            else:
                difference = arrays.compare(reference[1], outputs, self.tune.rtol, self.tune.atol)
                if difference is not None:
                    note = f"output differs from {reference[0].label}'s: {difference}"
            t = bench.do_bench(lambda: kernel.launch(launch_grid, args), warmup=WARMUP_MS, rep=REP_MS)
            times.append(round(t, 6))
            notes.append(note)
            self.progress.step(label, f"{t:.4f} ms" + (f"  EXCLUDED: {note}" if note else ""))
        valid = [(t, i) for i, (t, n) in enumerate(zip(times, notes)) if t is not None and n is None]
        item = {"problem": dict(problem), "times_ms": times, "notes": notes, "best": min(valid)[1] if valid else None}
        if any(kernel.twin is not None for kernel in self.kernels):
            item["variants"] = [v if kernel.twin is not None else None for v, kernel in zip(variants, self.kernels)]
        return item

    def call_inputs(self, inputs, problem: dict):
        ref = self.tune.inputs.ref
        try:
            result = inputs(dict(problem))
        except Exception as exc:  # noqa: BLE001 - the user's function: report it, where it is named
            raise self.error(f"{ref}({problem}) raised {type(exc).__name__}: {exc}") from None
        if not (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[1], (tuple, list))):
            raise self.error(f"{ref} must return (grid, args): a grid (or a function of the config) and the "
                             f"tuple of launch arguments; it returned {type(result).__name__}")
        grid, args = result
        if len(args) != len(self.entry.params):
            raise self.error(f"{ref} returned {len(args)} launch arguments; {self.entry.name} takes "
                             f"{len(self.entry.params)} ({', '.join(n for n, _ in self.entry.params)})")
        return grid, tuple(args)

    def grid(self, grid, spec: Specialization, args):
        if callable(grid):
            meta = {name: value for (name, _), value in zip(self.entry.params, args)}
            meta.update(spec.constexprs, num_warps=spec.num_warps, num_stages=spec.num_stages)
            return grid(meta)
        return grid


def _built(artifacts: dict, kernel: str, ident: str) -> dict:
    """One compiled variant's Artifacts by target (``ident``: a spec id, or its specialized variant's)."""
    return {target: a for (name, spec_id, target), a in artifacts.items() if name == kernel and spec_id == ident}


def _kernel_images(built: dict) -> dict:
    """The images, shared memory and symbol a ``driver.Kernel`` of one compiled variant takes."""
    images = {target: a.cubin for target, a in built.items()}
    images.update(ptx=next(a.ptx for a in built.values() if a.ptx))
    return {"images": images, "shared": max(a.shared for a in built.values()),
            "symbol": next(iter(built.values())).symbol}


def _fatal(exc: Exception, label: str) -> None:
    """Stop tuning when a config's launch left the context unusable (an illegal address...)."""
    result = getattr(exc, "result", None)
    if result is not None and int(result) in _STICKY:
        raise UsageError(f"tuning stopped: {label} crashed the GPU context ({exc}); the kernel is wrong for "
                         "that config or problem: fix it or drop the config") from None


class _Arrays:
    """The memory a launch's pointer arguments reach: saved once, restored before each config's
    checked run (so kernels that accumulate see the same inputs), read back and compared."""

    def __init__(self, params, args):
        import numpy as np
        from ..runtime import driver
        self.regions = []       # (parameter, dtype, device, address, bytes, saved copy)
        for (name, type_text), value in zip(params, args):
            t = driver.parse_type(type_text)
            if not t.is_pointer:
                continue
            address, size = _extent(value)
            if not size:
                continue
            device = driver.argument_device(value)
            saved = np.empty(size, np.uint8)
            with driver._OnDevice(device if device >= 0 else None):
                driver._check(driver._cuda.cuMemcpyDtoH(saved.ctypes.data, address, size), "cuMemcpyDtoH")
            self.regions.append((name, t.dtype, device, address, size, saved))

    def restore(self) -> None:
        from ..runtime import driver
        for _, _, device, address, size, saved in self.regions:
            with driver._OnDevice(device if device >= 0 else None):
                driver._check(driver._cuda.cuMemcpyHtoD(address, saved.ctypes.data, size), "cuMemcpyHtoD")

    def read(self) -> list:
        import numpy as np
        from ..runtime import driver
        out = []
        for _, _, device, address, size, _ in self.regions:
            data = np.empty(size, np.uint8)
            with driver._OnDevice(device if device >= 0 else None):
                driver._check(driver._cuda.cuMemcpyDtoH(data.ctypes.data, address, size), "cuMemcpyDtoH")
            out.append(data)
        return out

    def compare(self, reference: list, outputs: list, rtol, atol) -> str | None:
        for (name, dtype, *_), ref, out in zip(self.regions, reference, outputs):
            difference = compare_elements(dtype, ref, out, rtol, atol)
            if difference is not None:
                return f"'{name}': {difference}"
        return None


def compare_elements(dtype: str, ref, out, rtol=None, atol=None) -> str | None:
    """None when the bytes *out* hold the values of *ref* (elements of *dtype*) within the
    tolerance; else what differs."""
    import numpy as np
    from ..runtime import driver
    if ref.tobytes() == out.tobytes():
        return None
    try:
        np_dtype = driver._numpy_dtype(dtype)
    except Exception:  # noqa: BLE001 - a dtype numpy lacks: compare the bytes
        np_dtype = None
    usable = len(ref) - len(ref) % (np_dtype.itemsize if np_dtype is not None else 1)
    if np_dtype is None or np_dtype.kind not in "fc" or ref[usable:].tobytes() != out[usable:].tobytes():
        count = int(np.count_nonzero(ref != out))
        return f"{count} of {len(ref)} bytes differ (the values must be equal)"
    a = ref[:usable].view(np_dtype).astype(np.float64)
    b = out[:usable].view(np_dtype).astype(np.float64)
    default = TOLERANCE.get(dtype, HALF_TOLERANCE)
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    finite = np.isfinite(a)
    scale = float(np.max(np.abs(a[finite]))) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        bad = ~((a == b) | (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= atol * scale + rtol * np.abs(a)))
    if not bad.any():
        return None
    first = int(np.argmax(bad))
    return (f"{int(bad.sum())} of {len(a)} elements, e.g. element {first}: {float(b[first])!r} where the "
            f"reference has {float(a[first])!r} (tolerance rtol={rtol:g}, atol={atol:g} x max|ref|)")


def _extent(value) -> tuple[int, int]:
    """(address, bytes) of the memory a pointer argument can reach: a PyTorch tensor's storage,
    an ``__cuda_array_interface__`` array's span, or, for an int address, its whole allocation."""
    from ..runtime import driver
    storage = getattr(value, "untyped_storage", None)
    if callable(storage):
        s = storage()
        return int(s.data_ptr()), int(s.nbytes())
    try:
        interface = value.__cuda_array_interface__
    except (AttributeError, TypeError):
        interface = None
    if interface is not None:
        import numpy as np
        address = int(interface["data"][0])
        shape = tuple(interface["shape"])
        itemsize = np.dtype(interface["typestr"]).itemsize
        if not address or math.prod(shape) == 0:
            return address, 0
        strides = interface.get("strides")
        if strides is None:
            return address, math.prod(shape) * itemsize
        low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
        return address + low, high - low
    address, _ = driver.pointer_info(value)
    if not address:
        return 0, 0
    base, size = driver._check(driver._cuda.cuMemGetAddressRange(address), "cuMemGetAddressRange")
    return int(base), int(size)


# -- the report -----------------------------------------------------------------------------------

def report_text(record: dict) -> str:
    """The table of every config's time per problem (ms; * the chosen one), per kernel."""
    device = record.get("device", {})
    lines = [f"Tuning of package {record['package']} on {device.get('name', '?')} "
             f"(compute capability {device.get('compute_capability', '?')}, driver {device.get('driver', '?')}); "
             "median ms, L2 flushed, * = chosen"]
    for name, kernel in sorted(record["kernels"].items()):
        configs = [_config_label(c) for c in kernel["configs"]]
        columns = [" ".join(f"{k}={v}" for k, v in item["problem"].items()) for item in kernel["problems"]]
        rows = [[_cell(item, i) for item in kernel["problems"]] for i in range(len(configs))]
        width0 = max(len("config"), *map(len, configs))
        widths = [max(len(col), *(len(row[j]) for row in rows)) for j, col in enumerate(columns)]
        lines += ["", f"{name} (key: {', '.join(kernel['key'])})",
                  "  ".join([f"{'config':<{width0}}"] + [f"{c:>{w}}" for c, w in zip(columns, widths)]).rstrip()]
        for label, row in zip(configs, rows):
            lines.append("  ".join([f"{label:<{width0}}"] + [f"{c:>{w}}" for c, w in zip(row, widths)]).rstrip())
        speedups = _gain_over_single(kernel)
        if speedups is not None:
            lines.append(f"tuned dispatch vs the best single config ({configs[speedups[1]]}): "
                         f"{speedups[0]:.3f}x the geometric-mean speed over these problems")
        for item in kernel["problems"]:
            problem = " ".join(f"{k}={v}" for k, v in item["problem"].items())
            for label, note in zip(configs, item["notes"]):
                if note:
                    lines.append(f"note: {label} @ {problem}: {note}")
            for label, variant in zip(configs, item.get("variants", ())):
                if variant == "plain":
                    lines.append(f"note: {label} @ {problem}: timed on its plain variant (the problem's arguments "
                                 "break a promise of its specialized variant)")
    return "\n".join(lines) + "\n"


def _config_label(config: dict) -> str:
    """A recorded config as progress lines and errors show a specialization (``Specialization.label``)."""
    return Specialization("", tuple(config["constexprs"].items()), config["num_warps"], None,
                          config["num_stages"]).label


def _cell(item: dict, i: int) -> str:
    t = item["times_ms"][i]
    if t is None:
        return "failed "
    mark = "*" if item["best"] == i else ("!" if item["notes"][i] else " ")
    return f"{t:.4f}{mark}"


def _gain_over_single(kernel: dict):
    """(geometric-mean speed-up of the tuned choices over the best single config, that config's
    index): over the problems where a config was chosen, among the configs that ran correctly on
    all of them; None when no config did (or there is only one)."""
    chosen = [item for item in kernel["problems"] if item["best"] is not None]
    candidates = [i for i in range(len(kernel["configs"]))
                  if all(item["times_ms"][i] is not None and not item["notes"][i] for item in chosen)]
    if not chosen or not candidates or len(kernel["configs"]) < 2:
        return None

    def log_mean(times):
        return sum(math.log(t) for t in times) / len(times)
    singles = {i: log_mean([item["times_ms"][i] for item in chosen]) for i in candidates}
    best_single = min(candidates, key=singles.__getitem__)
    tuned = log_mean([item["times_ms"][item["best"]] for item in chosen])
    return math.exp(singles[best_single] - tuned), best_single


def write_plot(record: dict, path: Path) -> str | None:
    """A bar chart of each config's time per problem (one panel per kernel) as PNG at *path*;
    None when written, else why not (matplotlib is an optional extra)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - not installed (or unusable): the table says the same
        return "matplotlib is not installed (pip install 'mytriton[plot]')"
    kernels = sorted(record["kernels"].items())
    figure, axes = plt.subplots(len(kernels), 1, figsize=(10, 3.5 * len(kernels)), squeeze=False)
    for ax, (name, kernel) in zip(axes[:, 0], kernels):
        configs = kernel["configs"]
        count = len(kernel["problems"])
        width = 0.8 / max(len(configs), 1)
        for i, config in enumerate(configs):
            xs = [p + (i - (len(configs) - 1) / 2) * width for p in range(count)]
            ys = [item["times_ms"][i] or 0.0 for item in kernel["problems"]]
            ax.bar(xs, ys, width, label=_config_label(config))
        ax.set_xticks(range(count))
        ax.set_xticklabels(["\n".join(f"{k}={v}" for k, v in item["problem"].items()) for item in kernel["problems"]],
                           fontsize=7)
        ax.set_ylabel("ms (median)")
        ax.set_yscale("log")
        ax.set_title(f"{name}: time per problem and config")
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    plt.close(figure)
    return None
