"""Build orchestration: manifests → plans → compiles (cached or in parallel) → packages swapped in.

::

    load manifests ─→ plan each package ─→ lock its destination ─→ key every compile
      ─→ analyze each specialization for its specialized variant (cached; aot/variants.py)
      ─→ reuse what the previous build has ─→ compile the rest (-j N processes)
      ─→ write each package whose compiles all succeeded into a staging folder ─→ swap it in
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dataclasses import replace

from . import explain, kernel_source, output, tuning, variants as _variants
from . import toolchain as toolchains
from .cache import PendingCompiles, PreviousBuild, SharedCache, job_key
from .toolchain import Toolchain
from ..runtime import native
from .errors import CompileFailed, ManifestError, UsageError
from .jobs import Artifacts, CompileJob, Failure, Workers, default_workers, run_jobs
from .manifest import MAX_SPECIALIZATIONS, KernelEntry, Manifest, Specialization, load_manifest
from .package import PackagePlan, templates_dir, write_package
from .signature import sort_targets, target_arch, target_error


@dataclass(frozen=True)
class Unit:
    """One compile: a specialization (or its specialized variant) for one target."""

    plan: PackagePlan
    entry: KernelEntry
    spec: Specialization
    target: str
    job: CompileJob
    key: str
    variant: bool = False           # the specialization's specialized variant (aot/variants.py)
    share: str | None = None        # the key that places it in a --shard: its plain compile's

    @property
    def ident(self) -> tuple[str, str, str]:
        return self.entry.name, _variants.variant_id(self.spec.id) if self.variant else self.spec.id, self.target

    @property
    def label(self) -> str:
        return f"{self.entry.name} {self.spec.label}{' specialized' if self.variant else ''} {self.target}"


@dataclass(frozen=True)
class PackageReport:
    package: str
    dest: Path
    specializations: int
    compiled: int
    cached: int
    failed: int
    written: bool       # False when the output was already identical (or the build failed)
    variants: int = 0   # specialized variants among the compiles' specializations


def build_packages(manifest_paths: list[str], out_dir: str = "build", targets: list[str] | None = None,
                   jobs: int | None = None, echo: Callable[[str], None] = print,
                   notify: Callable[[str], None] | None = None, *,
                   max_specializations: int = MAX_SPECIALIZATIONS, allow_outside: bool = False,
                   cache_dir: str | Path | None = None, shard: tuple[int, int] | None = None,
                   executor: str = "local", tune: bool = False,
                   tune_from: list[str] | None = None, emit_c: bool = False,
                   explain_all: bool = False) -> list[PackageReport]:
    """Build every manifest into ``out_dir/<package>/``.

    *echo* receives the progress and summary lines, *notify* remarks such as waiting for a lock.
    With ``jobs > 1`` compiles run in worker processes; with ``jobs=1`` (or a single compile) they
    run in this process, which keeps its working directory: the output does not depend on it, as
    NVRTC is given the absolute source name ``/mytriton/<kernel>.cu`` (see ``mytriton.compiler``).
    A manifest may expand to at most *max_specializations* specializations, and may name kernel
    files outside its folder only with *allow_outside* (see :func:`load_manifest`). With a
    *cache_dir*, compiles are looked up in and added to that shared cache (:class:`SharedCache`).
    With ``shard=(i, n)`` only the i-th of n deterministic shares of the compiles (by job key) is
    compiled into the shared cache and no package is written: a build without ``shard`` that uses
    the same cache then only assembles the packages. *executor* ``"dask://HOST:PORT"`` runs the
    compiles on a Dask cluster (see :func:`run_jobs`); the output is the same as a local build's.
    Kernels with ``autotune:`` are timed on this machine's GPU with *tune*, or take the records of
    the *tune_from* files (``tuning.json`` of an earlier ``tune``; see :mod:`.tuning`); without
    either, their first config is the one launched. *emit_c* adds each package's C API (``c/``).
    A kernel whose common launches on Hopper are off the fast path gets a note (aot/explain.py);
    *explain_all* also echoes the compiler's story of every compile.
    Raises :class:`ManifestError`/:class:`UsageError` before anything is compiled, and
    :class:`CompileFailed` after every package that did compile has been written.
    """
    start = time.perf_counter()
    manifests = [load_manifest(path, max_specializations=max_specializations, allow_outside=allow_outside)
                 for path in manifest_paths]
    if tune and tune_from:
        raise UsageError("--tune measures anew and --tune-from reuses a recording: pass one of them")
    if shard is not None and (tune or tune_from):
        raise UsageError("--shard compiles into the shared cache and writes no package: tune in the build "
                         "that assembles it (without --shard)")
    recorded = tuning.load_recorded(tune_from, manifests) if tune_from else {}
    toolchain = _toolchain()
    plans = _plans(manifests, Path(out_dir), targets)
    with ExitStack() as locks:
        for plan in sorted(plans, key=lambda p: str(p.dest)):
            locks.enter_context(output.locked(plan.dest, notify))
            output.check_replaceable(plan.dest)
        units = [unit for plan in plans for unit in _units(plan, toolchain, notify or echo)]
        shared = SharedCache(Path(cache_dir)) if cache_dir is not None else None
        if shard is not None and shared is None:
            raise UsageError("--shard needs the shared compile cache (drop --no-cache): a shard's compiles go there")
        # (one set of worker processes for the analyses and the compiles; a shard analyzes the
        # specializations of its own compiles only)
        workers = locks.enter_context(Workers(jobs or default_workers()))
        analyzed = units if shard is None else [u for u in units if u.key is not None and in_shard(u.key, shard)]
        found = _analyze(analyzed, workers, echo, shared, executor)
        units += _variant_units(units, found, toolchain)
        if shard is not None:
            return _build_shard(units, shard, shared, workers, echo, executor)
        try:
            results = _compile(units, workers, echo, shared, executor)
        finally:
            if shared is not None:
                shared.record_stats()
        if shared is not None and shared.problem is not None:
            (notify or echo)(f"note: the shared compile cache could not be written ({shared.problem}); "
                             f"this build's compiles are not in it (--cache DIR picks another folder)")
        launcher = _native_launcher(plans, notify or echo)
        reports = []
        for plan in plans:
            mine = [u for u in units if u.plan is plan]
            record = _tuning(plan, mine, results, tune, recorded, echo, notify or echo, found)
            for line in explain.story(plan, mine, results) if explain_all else ():
                echo(line)
            for line in explain.notes(plan, mine, results):
                (notify or echo)(line)
            reports.append(_finish(plan, toolchain, mine, results, echo, start, launcher, record, emit_c,
                                   notify or echo, found))
    failures = _failures(units, results)
    if failures:
        raise CompileFailed(failures)
    return reports


def in_shard(key: str, shard: tuple[int, int]) -> bool:
    """Whether the compile of job key ``key`` belongs to share ``i`` of ``n`` (1-based): the same
    answer on every machine, about 1/n of the compiles each."""
    i, n = shard
    return int(key[:16], 16) % n == i - 1


def _build_shard(units: list[Unit], shard: tuple[int, int], shared: SharedCache, workers: Workers,
                 echo, executor: str) -> list[PackageReport]:
    """Compile this shard's share of ``units`` into the shared cache; write no package. A
    specialized variant's compile goes with its plain one (whose shard analyzed it)."""
    mine = [u for u in units if u.key is not None and in_shard(u.share or u.key, shard)]
    try:
        results = _compile(mine, workers, echo, shared, executor)
    finally:
        shared.record_stats()
    reports = []
    for plan in dict.fromkeys(u.plan for u in units):
        share = [results[u.plan.dest, u.ident] for u in mine if u.plan is plan]
        failed = sum(isinstance(r, Failure) for r in share)
        cached = sum(isinstance(r, Artifacts) and r.cached for r in share)
        twins = sum(u.variant for u in mine if u.plan is plan)
        echo(f"{plan.manifest.package}: shard {shard[0]}/{shard[1]}: {len(share) - twins} of "
             f"{sum(u.plan is plan and not u.variant for u in units)} compiles"
             + (f" and their {twins} specialized variants" if twins else "")
             + f" ({len(share) - failed - cached} compiled, {cached} cached, "
             f"{failed} failed) in {shared.folder}; the package is written by a build without --shard")
        reports.append(PackageReport(plan.manifest.package, plan.dest, 0, len(share) - failed - cached, cached, failed,
                                     False))
    failures = _failures(mine, results)
    if failures:
        raise CompileFailed(failures)
    return reports


def _toolchain() -> Toolchain:
    return toolchains.current(templates_dir())


def _plans(manifests: list[Manifest], out_dir: Path, targets: list[str] | None) -> list[PackagePlan]:
    override = None
    if targets:
        for target in targets:
            if (problem := target_error(target)) is not None:
                raise UsageError(f"--target: {problem}")
        override = sort_targets(targets)
    supported = _nvrtc_archs()
    plans, seen = [], {}
    for manifest in manifests:
        if manifest.package in seen:
            raise ManifestError(manifest.path, manifest.package_line,
                                f"package '{manifest.package}' is also built by {seen[manifest.package]}")
        seen[manifest.package] = manifest.path
        chosen = override or manifest.targets
        if not chosen:
            raise ManifestError(manifest.path, None, "no targets: add 'targets: [sm_90]' to the manifest "
                                                     "or pass --target sm_90")
        unsupported = [t for t in chosen if supported and target_arch(t) not in supported]
        if unsupported:
            message = (f"NVRTC cannot compile for {', '.join(unsupported)} "
                       f"(it supports {', '.join(f'sm_{a}' for a in sorted(supported))})")
            if override:
                raise UsageError(f"--target: {message}")
            raise ManifestError(manifest.path, manifest.targets_line, message)
        plans.append(PackagePlan(manifest, chosen, out_dir / manifest.package))
    return plans


def _nvrtc_archs() -> set[int]:
    """The architectures this NVRTC can target (empty when it cannot be asked)."""
    try:
        from cuda.bindings import nvrtc
        err, archs = nvrtc.nvrtcGetSupportedArchs()
        return set(archs) if int(err) == 0 else set()
    except Exception:   # noqa: BLE001 - an older cuda-bindings: let NVRTC itself complain later
        return set()


def _units(plan: PackagePlan, toolchain: Toolchain, remark) -> list[Unit]:
    """One unit per compile; a kernel whose cache key cannot be computed faithfully gets units
    without keys (compiled by every build, stored nowhere) and a *remark* saying why."""
    from ..frontend.fingerprint import Uncacheable
    units = []
    for entry in plan.manifest.kernels:
        try:
            cache_key = entry.jit_fn.cache_key
        except Uncacheable as exc:
            cache_key = None
            remark(f"note: {plan.manifest.package}: {entry.name} is compiled by every build and cached nowhere: "
                   f"its cache key cannot cover what it reads ({exc})")
        text = kernel_source.imported_text(entry.source)
        for spec in entry.specializations:
            for target in plan.targets:
                job = CompileJob(entry.source, entry.params, spec.constexprs, spec.num_warps, target,
                                 emit_ptx=target == plan.ptx_target, num_stages=spec.num_stages,
                                 hoist_tensor_maps=plan.hoists_tensor_maps, source_text=text,
                                 kernel_key=cache_key, toolchain=toolchain)
                units.append(Unit(plan, entry, spec, target, job, job_key(toolchain, cache_key, job)))
    return units


# At most this many analyses run in the build process itself: a pool's start (a second or two of
# spawning and imports) outweighs a few analyses of a fraction of a second each.
IN_PROCESS_ANALYSES = 4


def _analyze(units: list[Unit], workers: Workers, echo, shared: SharedCache | None,
             executor: str) -> dict[tuple, _variants.Variant]:
    """The specialized variant (aot/variants.py) of each specialization of *units*, by (package
    folder, kernel, spec id): the previous build's answer or the shared cache's where one has the
    key, else analyzed now (in worker processes or on the cluster, as compiles are; a fraction of
    a second each, so an interrupted build keeps none of them)."""
    found, todo = _known_analyses(units, shared)
    if not todo:
        return found
    start = time.perf_counter()

    def done(index: int, result) -> None:
        where, _, key = todo[index]
        if isinstance(result, Failure):           # (a worker that cannot run it: not kept)
            found[where] = _variants.Variant(None, f"not analyzed: {result.message}")
            return
        found[where] = replace(result, key=key, toolchain=None)
        if key is not None and shared is not None:
            shared.put_variant(key, result)
    local = executor == "local" and len(todo) <= IN_PROCESS_ANALYSES and workers.pool is None
    run_jobs([job for _, job, _ in todo], 1 if local else workers, done, executor,
             task=_variants.analyze_job, check=_variants.checked)
    made = sum(found[where].signature is not None for where, _, _ in todo)
    echo(f"analyzed {len(todo)} specialization{'s' * (len(todo) != 1)} for specialized variants in "
         f"{time.perf_counter() - start:.1f} s: {made} to build")
    return found


def _known_analyses(units: list[Unit], shared: SharedCache | None) -> tuple[dict, list]:
    """(the analyses already known, by (package folder, kernel, spec id): ``specialize: false``, or
    kept under their key by the previous build or the shared cache; [(where, AnalysisJob, key)] of
    the others), one per specialization of *units* (its first compile says what the analysis reads)."""
    first, found, todo, previous = {}, {}, [], {}
    for unit in units:
        if not unit.variant:
            first.setdefault((unit.plan.dest, unit.entry.name, unit.spec.id), unit)
    for where, unit in first.items():
        if not unit.entry.specialize:
            found[where] = _variants.Variant(None, "specialize: false in the manifest")
            continue
        job = _variants.AnalysisJob(unit.entry.source, unit.entry.params, unit.spec.constexprs, unit.spec.num_warps,
                                    unit.spec.num_stages, unit.plan.hoists_tensor_maps, unit.job.source_text,
                                    unit.job.kernel_key, unit.job.toolchain)
        key = _variants.analysis_key(unit.job.toolchain, unit.job.kernel_key, job)
        if unit.plan.dest not in previous:
            previous[unit.plan.dest] = PreviousBuild(unit.plan.dest)
        params = unit.entry.params
        cached = None if key is None else (previous[unit.plan.dest].analysis(key, params)
                                           or (shared.lookup_variant(key, params) if shared is not None else None))
        if cached is not None:
            found[where] = replace(cached, key=key)
        else:
            todo.append((where, job, key))
    return found, todo


def _variant_units(units: list[Unit], found: dict, toolchain: Toolchain) -> list[Unit]:
    """A compile of its specialized variant beside each compile whose specialization has one, keyed
    by the variant's signature and placed in the --shard of its plain compile."""
    out = []
    for unit in units:
        variant = found.get((unit.plan.dest, unit.entry.name, unit.spec.id))
        if unit.variant or variant is None or variant.signature is None:
            continue
        job = replace(unit.job, signature=variant.signature)
        out.append(Unit(unit.plan, unit.entry, unit.spec, unit.target, job, job_key(toolchain, job.kernel_key, job),
                        variant=True, share=unit.key))
    return out


def _compile(units: list[Unit], workers: "int | Workers", echo, shared: SharedCache | None = None,
             executor: str = "local") -> dict[tuple, Artifacts | Failure]:
    """Reuse cached artifacts (the previous build, its pending compiles, the shared cache), compile
    the rest; one progress line per compile. Each finished compile is kept at once in the package's
    pending compiles (so Ctrl-C loses none of them) and in the shared cache."""
    previous, pending = {}, {}
    results: dict[tuple, Artifacts | Failure] = {}
    todo: list[Unit] = []
    for unit in units:
        if unit.plan.dest not in previous:
            previous[unit.plan.dest] = PreviousBuild(unit.plan.dest)
            pending[unit.plan.dest] = PendingCompiles(unit.plan.dest)
        cached = None if unit.key is None else (
            previous[unit.plan.dest].lookup(unit.key, unit.job.emit_ptx)
            or pending[unit.plan.dest].lookup(unit.key, unit.job.emit_ptx)
            or (shared.lookup(unit.key, unit.job.emit_ptx) if shared is not None else None))
        if cached is None:
            todo.append(unit)
        else:
            results[unit.plan.dest, unit.ident] = cached
    width = max((len(u.label) for u in units), default=0)
    count = len(str(len(units)))
    done = 0

    def progress(unit: Unit, result: Artifacts | Failure) -> None:
        nonlocal done
        done += 1
        if isinstance(result, Failure):
            status = f"FAILED ({result.seconds:.2f} s)"
        else:
            status = "cached" if result.cached else f"{result.seconds:.2f} s"
        echo(f"[{done:>{count}}/{len(units)}] {unit.label:<{width}}  {status}")

    for unit in units:
        if (unit.plan.dest, unit.ident) in results:
            progress(unit, results[unit.plan.dest, unit.ident])

    def finished(index: int, result: Artifacts | Failure) -> None:
        unit = todo[index]
        results[unit.plan.dest, unit.ident] = result
        if isinstance(result, Artifacts) and unit.key is not None:
            pending[unit.plan.dest].put(unit.key, result)
            if shared is not None:
                shared.put(unit.key, result)
        progress(unit, result)

    run_jobs([unit.job for unit in todo], workers, finished, executor)
    return results


def _tuning(plan: PackagePlan, units: list[Unit], results, tune: bool, recorded: dict, echo, remark,
            found: dict | None = None) -> dict | None:
    """The package's tuning record: measured now (*tune*), recorded (``--tune-from``), or None."""
    tuned = tuning.tuned_entries(plan.manifest)
    package = plan.manifest.package
    if not tuned:
        if tune:
            remark(f"note: {package}: --tune: no kernel has 'autotune:', nothing to time")
        return None
    if any(isinstance(results[plan.dest, u.ident], Failure) for u in units):
        return None                 # the package is not written
    if tune:
        signatures = {(name, spec_id): v.signature for (dest, name, spec_id), v in (found or {}).items()
                      if dest == plan.dest and v.signature is not None}
        record = tuning.measure(plan.manifest, {u.ident: results[plan.dest, u.ident] for u in units}, echo,
                                signatures)
        echo(tuning.report_text(record).rstrip("\n"))
        return record
    if package in recorded:
        return recorded[package]
    remark(f"note: {package}: {', '.join(e.name for e in tuned)} not tuned: the first config is launched "
           "(mytriton-build --tune on a machine with a GPU, or --tune-from a recorded tuning.json)")
    return None


def _native_launcher(plans: list[PackagePlan], remark) -> native.NativeBuild:
    """The native launch library for every package of this build: the previous build's copy when
    nothing it depends on changed, else compiled (~0.3 s); where it cannot be built, *remark* why."""
    previous = [PreviousBuild(plan.dest) for plan in plans]

    def reuse(key: str) -> bytes | None:
        return next((data for p in previous if (data := p.native(key)) is not None), None)
    launcher = native.build(reuse)
    if launcher.data is None:
        remark(f"native launcher not built: {launcher.reason}; the packages launch through pure Python")
    return launcher


def _finish(plan: PackagePlan, toolchain: Toolchain, units: list[Unit], results, echo,
            start: float, launcher: native.NativeBuild, record: dict | None = None,
            emit_c: bool = False, remark=None, found: dict | None = None) -> PackageReport:
    """Write the package if all its compiles succeeded, and print its summary line."""
    mine = [results[plan.dest, unit.ident] for unit in units]
    failed = sum(isinstance(r, Failure) for r in mine)
    cached = sum(isinstance(r, Artifacts) and r.cached for r in mine)
    compiled = len(mine) - failed - cached
    specs = sum(len(entry.specializations) for entry in plan.manifest.kernels)
    analyses = {(name, spec_id): v for (dest, name, spec_id), v in (found or {}).items() if dest == plan.dest}
    made = sum(v.signature is not None for v in analyses.values())
    what = f"{specs} specializations" + (f" (+{made} specialized variants)" if made else "")
    package = plan.manifest.package
    written = False
    if failed:
        echo(f"{package}: {failed} of {len(mine)} compiles failed; {plan.dest} left unchanged")
    else:
        artifacts = {unit.ident: results[plan.dest, unit.ident] for unit in units}
        keys = {unit.ident: unit.key for unit in units}
        with output.staging(plan.dest) as staged:
            write_package(staged, plan, toolchain, artifacts, keys, launcher, record, emit_c, remark, analyses)
            if not output.same_tree(staged, plan.dest):
                output.swap_in(staged, plan.dest)
                written = True
        PendingCompiles(plan.dest).clear()      # the package holds them now
        if compiled == 0 and not written:
            echo(f"{package}: {what} up to date ({plan.dest})")
        else:
            echo(f"{package}: {what} for {', '.join(plan.targets)}: {compiled} compiled, "
                 f"{cached} cached in {time.perf_counter() - start:.1f} s -> {plan.dest}")
    return PackageReport(package, plan.dest, specs, compiled, cached, failed, written, made)


def _failures(units: list[Unit], results) -> list[tuple[list[str], str]]:
    """Failed compiles grouped by message, so one bad kernel is reported once, not per target."""
    grouped: dict[str, list[str]] = {}
    for unit in units:
        result = results[unit.plan.dest, unit.ident]
        if isinstance(result, Failure):
            grouped.setdefault(result.message, []).append(unit.label)
    return [(labels, message) for message, labels in grouped.items()]
