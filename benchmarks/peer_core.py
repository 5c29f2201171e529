"""Run Triton's own language tests (its ``test_core.py``) against mytriton, as a yardstick.

    python3 benchmarks/peer_core.py PATH/TO/test_core.py [pytest arguments...]
    python3 benchmarks/peer_core.py ~/triton/python/test/unit/language/test_core.py -k "bin_op or shift" -n 8 --timeout 300

The file is Triton's, not ours: it is read from the path given and never kept in this repository.
A copy goes to a temporary directory with its ``import triton`` / ``import triton.language as tl``
(and ``from triton[.language...] import ...`` lines) pointed at mytriton; Triton's test helpers
(``triton._internal_testing``: ``numpy_random``, ``to_triton``, dtype lists; ``triton.runtime``:
errors and the driver's device queries) still come from the real Triton, which must be installed.
Triton's ``patch_kernel`` (which edits a kernel's source in place) is replaced by one that writes the
patched source to a file, as mytriton reads kernels from their files.
A ``conftest.py`` there provides the fixtures Triton's test directory has (``device``; tests needing
Triton's own knobs are skipped), stands in for the public names of ``triton`` and
``triton.language`` that mytriton lacks (so that the file imports; a test that uses one fails, as
"other", and pytest's header lists them), and classifies every failure:

- **wrong value**: the test ran mytriton's kernel and a check of its results failed (an
  ``AssertionError`` raised by the test or by numpy/torch's comparisons, not inside mytriton; a
  failed check with no kernel launched in the test counts as "other");
- **error message**: mytriton refused the kernel, as the test expects, but the message does not
  match the test's pattern for Triton's wording (``pytest.raises(..., match=...)``, or a check of
  the caught error's text), or the test expected an error where mytriton gave none;
- **asm text**: a check of the generated PTX or IR text for what Triton emits failed (the failed
  assertion reads the ``ptx``/``asm``, or its message shows such text);
- **compile error**: mytriton refused the kernel (``CompilationError``: unsupported or rejected);
- **internals**: the test used Triton's JIT machinery (``kernel.warmup``, its caches);
- **other**: anything else (a missing API, an exception in mytriton, ``DID NOT RAISE``...).

The summary also gives the pass rate over the *applicable* tests: those that ran (passed, failed or
errored), leaving out ``dot_scaled`` and fp8 tests (by their ids) and failures of the classes asm
text and internals, which test Triton's compiler rather than the language.

``--failures FILE`` appends each failure to FILE as it happens (test id, class, message), so a run
cut short by a time limit still tells what failed.  Other pytest arguments pass through (``-k``, ``-x``, ``-n N`` with pytest-xdist, ``--timeout S`` with
pytest-timeout, ``--device``). Prints pytest's own output, then a summary: passed / failed / errors
/ skipped counts, failures per class, and the list of tests that gave a wrong value. Exit status:
pytest's.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from common import TO_MYTRITON

REPO = Path(__file__).resolve().parents[1]

# (pattern, replacement) on each line of the test file: the language and jit become mytriton's
REWRITES = [
    (re.compile(r"^(\s*)import triton\s*$"),                        # the real one stays, for its helpers
     r"\1import triton as _real_triton  # (benchmarks/peer_core.py)\n\1import mytriton as triton"),
    *TO_MYTRITON,
]
# device queries the tests make through `triton.runtime.driver` are the real Triton's helpers
DRIVER = (re.compile(r"\btriton\.runtime\.driver\b"), "_real_triton.runtime.driver")

# appended to the copy: Triton's patch_kernel edits a JITFunction's source in place
# (`_unsafe_update_src`); mytriton reads a kernel's source from its file, so the patched source gets a file
PATCH_KERNEL = '''

def patch_kernel(template, to_replace):  # replaced by mytriton's benchmarks/peer_core.py
    import hashlib, inspect, os, textwrap
    src = textwrap.dedent(inspect.getsource(template.fn))
    for key, value in to_replace.items():
        src = src.replace(key, value)
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patched_kernels")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{template.fn.__name__}_{hashlib.sha256(src.encode()).hexdigest()[:16]}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    namespace = {}
    # the patched kernel keeps the template's closure, as Triton's in-place source update does
    # (its cells that are filled: a name the test assigns after the kernel is an empty cell here)
    scope = dict(globals())
    for name, cell in zip(template.fn.__code__.co_freevars, template.fn.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:
            pass
    exec(compile(src, path, "exec"), scope, namespace)
    return namespace[template.fn.__name__]
'''

CONFTEST = r'''
"""Written by mytriton's benchmarks/peer_core.py: the fixtures of Triton's test directory, and the
classification of failures (user_properties travel to the pytest-xdist controller)."""
import json
import os
import re

import pytest


class _Missing:
    """A name Triton has and mytriton lacks: the test file still imports (its module-level lists
    name many dtypes); a test that uses it fails there, counted as 'other'."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return self._name

    def __getattr__(self, attr):
        raise AttributeError(f"mytriton has no {self._name} (its .{attr} was used)")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"mytriton has no {self._name}")


def _fill_missing():
    import builtins

    import mytriton
    import mytriton.language
    import triton
    import triton.language
    filled = []
    for ours, theirs, prefix in ((mytriton, triton, "triton"), (mytriton.language, triton.language, "tl")):
        for name in dir(theirs):
            # (never a builtin's name: a module attribute `tuple` would shadow the builtin in
            # mytriton's own code)
            if not name.startswith("_") and not hasattr(ours, name) and not hasattr(builtins, name):
                setattr(ours, name, _Missing(f"{prefix}.{name}"))
                filled.append(f"{prefix}.{name}")
    # Triton's dtype class lists its type names; mytriton's dtype cannot be built from a name yet, so
    # parametrizations over these lists are empty (pytest skips them) instead of breaking the import
    for name in ("SINT_TYPES", "UINT_TYPES", "FP_TYPES", "STANDARD_FP_TYPES", "OTHER_TYPES"):
        if not hasattr(mytriton.language.dtype, name):
            setattr(mytriton.language.dtype, name, ())
            filled.append(f"tl.dtype.{name} (empty)")
    return filled


MISSING = _fill_missing()


def _our_dtypes():
    """Triton's test helper str_to_triton_dtype names a dtype of the language under test: ours."""
    import mytriton.language
    import triton._internal_testing as helpers

    from mytriton.runtime.driver import DTYPES
    from triton.runtime.jit import type_canonicalisation_dict as canonical

    def str_to_triton_dtype(name):
        # Triton's canonical spelling (torch's float8_e4m3fn is fp8e4nv), then ours of it
        short = {"u1": "i1"}.get(canonical[name], canonical[name])
        if short not in DTYPES:
            raise NotImplementedError(f"mytriton has no {name} ({canonical[name]})")
        return getattr(mytriton.language, DTYPES[short].triton)
    helpers.str_to_triton_dtype = str_to_triton_dtype


_our_dtypes()


def pytest_report_header(config):
    return f"mytriton lacks {len(MISSING)} public names of triton / triton.language: {', '.join(MISSING)}"


def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda")


@pytest.fixture
def device(request):
    return request.config.getoption("--device")


@pytest.fixture
def fresh_knobs():
    pytest.skip("needs Triton's knobs (triton.knobs), not part of mytriton")


@pytest.fixture
def fresh_triton_cache():
    pytest.skip("needs Triton's cache, not part of mytriton")


@pytest.fixture
def with_allocator():
    """(mytriton's tensor descriptors need no scratch memory: nothing to set up)"""


_SEEN = {"launched": False, "refused": False}     # in the current test: a kernel ran / was refused


def _watch():
    """Note each kernel launch and each CompilationError of the test being run."""
    import mytriton.errors
    import mytriton.frontend.launch as launch_module
    launch = launch_module.launch

    def watched_launch(*args, **kwargs):
        _SEEN["launched"] = True
        return launch(*args, **kwargs)
    launch_module.launch = watched_launch
    init = mytriton.errors.CompilationError.__init__

    def watched_init(self, *args, **kwargs):
        _SEEN["refused"] = True
        init(self, *args, **kwargs)
    mytriton.errors.CompilationError.__init__ = watched_init


_watch()


def pytest_runtest_setup(item):
    _SEEN.update(launched=False, refused=False)


def _failing_statement(excinfo) -> str:
    try:
        return str(excinfo.traceback[-1].statement)
    except Exception:
        return ""


def _classify(excinfo):
    import mytriton
    package = os.path.dirname(mytriton.__file__)
    if excinfo.errisinstance(mytriton.CompilationError):
        return "compile error"
    if excinfo.errisinstance(AssertionError):
        inside = [e for e in excinfo.traceback if str(e.path).startswith(package)]
        text = str(excinfo.value)
        statement = _failing_statement(excinfo)
        if inside:
            return "other"
        if text.startswith("Regex pattern did not match"):
            return "error message"
        if ("Generated by NVIDIA NVVM Compiler" in text or re.search(r"\b(ttgir|ttir|llir)\b", text)
                or re.search(r"\b(ptx|asm|amdgcn)\b", statement)):
            return "asm text"
        if _SEEN["refused"] or re.search(r"\b(err\w*|exc\w*|msg)\b", statement):
            return "error message"     # a check of what an error (expected, or raised instead) says
        if not _SEEN["launched"]:
            return "other"             # a host-side check (no kernel of this test ran)
        return "wrong value"
    text = str(excinfo.value)
    if excinfo.errisinstance(KeyError) and text.strip("'") in ("ttgir", "ttir", "llir", "amdgcn", "ptx"):
        return "asm text"              # a compiler stage mytriton has no text of
    if excinfo.errisinstance(AttributeError) and re.search(r"'(warmup|run|cache|device_caches)'", text):
        return "internals"             # Triton's JITFunction machinery, not the language
    return "other"


def _short(excinfo):
    text = str(excinfo.value).strip() or excinfo.typename
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{excinfo.typename}: " + " | ".join(lines[:3])[:300]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        report.user_properties.append(("mt_kind", _classify(call.excinfo)))
        report.user_properties.append(("mt_message", _short(call.excinfo)))


_RESULTS = {}


def pytest_runtest_logreport(report):
    entry = _RESULTS.setdefault(report.nodeid, {"outcome": "passed"})
    props = dict(report.user_properties)
    if report.when == "call":
        if report.skipped:
            entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.failed:
            entry["outcome"] = "failed"
        elif hasattr(report, "wasxfail"):
            entry["outcome"] = "xpassed"
    elif report.skipped and report.when == "setup":
        entry["outcome"] = "skipped"
    elif report.failed:                                   # setup or teardown
        entry["outcome"] = "error"
    if report.failed and "mt_kind" in props:
        entry.setdefault("kind", props["mt_kind"])
        entry.setdefault("message", props["mt_message"])
    if report.failed and os.environ.get("MT_PEER_FAILURES") and not _WORKER:
        with open(os.environ["MT_PEER_FAILURES"], "a") as f:   # as they happen: a run cut short still tells
            f.write(f"{report.nodeid}\t{props.get('mt_kind', 'other')}\t{props.get('mt_message', '')}\n")


_WORKER = False


def pytest_configure(config):
    global _WORKER
    _WORKER = hasattr(config, "workerinput")


def pytest_collectreport(report):
    if report.failed:                                     # e.g. the file does not import
        _RESULTS[report.nodeid or "<collection>"] = {"outcome": "error", "kind": "other",
                                                     "message": str(report.longrepr).strip().splitlines()[-1][:300]}


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):            # a pytest-xdist worker: the controller writes
        return
    with open(os.environ["MT_PEER_RESULTS"], "w") as f:
        json.dump(_RESULTS, f)
'''


def prepare(test_core: Path, workdir: Path) -> Path:
    lines = test_core.read_text().splitlines(keepends=True)
    out, rewritten = [], 0
    for line in lines:
        body = line.rstrip("\r\n")
        new = body
        for pattern, repl in REWRITES:
            new = pattern.sub(repl, new)
        new = DRIVER[0].sub(DRIVER[1], new)
        rewritten += new != body
        out.append(new + line[len(body):])
    if not rewritten:
        raise SystemExit(f"{test_core}: found no 'import triton' lines to point at mytriton")
    if any(line.startswith("def patch_kernel(") for line in out):
        out.append(PATCH_KERNEL)
    target = workdir / test_core.name
    target.write_text("".join(out))
    (workdir / "conftest.py").write_text(CONFTEST)
    return target


NOT_APPLICABLE = re.compile(r"scaled_dot|float8|fp8|e4m3|e5m2|e4b8|e4b15|e5b16")


def applicable(results: dict) -> tuple[int, int]:
    """(passed, applicable): see the module's docstring."""
    ran = [r for n, r in results.items() if r["outcome"] in ("passed", "failed", "error")
           and not NOT_APPLICABLE.search(n) and r.get("kind") not in ("asm text", "internals")]
    return sum(r["outcome"] == "passed" for r in ran), len(ran)


def summarize(results: dict) -> tuple[str, int]:
    outcomes = Counter(r["outcome"] for r in results.values())
    kinds = Counter(r.get("kind", "other") for r in results.values() if r["outcome"] in ("failed", "error"))
    wrong = sorted((nodeid, r.get("message", "")) for nodeid, r in results.items()
                   if r["outcome"] == "failed" and r.get("kind") == "wrong value")
    lines = ["", "=" * 30 + " mytriton vs Triton's test_core.py " + "=" * 30,
             f"passed: {outcomes['passed']}   failed: {outcomes['failed']}   errors: {outcomes['error']}   "
             f"skipped: {outcomes['skipped']}" + "".join(f"   {k}: {outcomes[k]}" for k in ("xfailed", "xpassed")
                                                        if outcomes[k]),
             "failures and errors by class: " + (", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) or "none")]
    passed, total = applicable(results)
    lines.append(f"applicable tests: {total}, passed {passed} ({100 * passed / max(total, 1):.1f} %)")
    by_test = Counter(n.split("[")[0].split("::")[-1] for n, r in results.items()
                      if r["outcome"] in ("failed", "error") and not NOT_APPLICABLE.search(n)
                      and r.get("kind") not in ("asm text", "internals"))
    lines.append("applicable failures by test: " + (", ".join(f"{k} {v}" for k, v in by_test.most_common(25)) or "none"))
    errors = sorted((nodeid, r.get("message", "")) for nodeid, r in results.items() if r["outcome"] == "error")
    if errors:
        lines.append("errors (setup or collection), the first 10:")
        lines += [f"  {nodeid}\n      {message}" for nodeid, message in errors[:10]]
    lines.append(f"wrong values ({len(wrong)} tests ran and gave a wrong result):")
    lines += [f"  {nodeid}\n      {message}" for nodeid, message in wrong] or ["  none"]
    return "\n".join(lines), len(wrong)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s TEST_CORE_PY [pytest arguments...]")
    parser.add_argument("test_core", type=Path, help="path of Triton's test_core.py")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (printed)")
    parser.add_argument("--failures", type=Path, metavar="FILE",
                        help="append each failure to FILE as it happens (test id, class, message; tab-separated)")
    args, pytest_args = parser.parse_known_args(argv)
    if not args.test_core.is_file():
        parser.error(f"{args.test_core}: no such file")
    workdir = Path(tempfile.mkdtemp(prefix="mytriton-peer-core-"))
    target = prepare(args.test_core.resolve(), workdir)
    results_path = workdir / "results.json"
    env = dict(os.environ, MT_PEER_RESULTS=str(results_path),
               PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if args.failures:
        env["MT_PEER_FAILURES"] = str(args.failures.resolve())
    cmd = [sys.executable, "-m", "pytest", target.name, "-p", "no:cacheprovider", "--rootdir", str(workdir),
           "-q", *pytest_args]
    print("running:", " ".join(cmd), f"(in {workdir})", flush=True)
    rc = subprocess.call(cmd, cwd=workdir, env=env)
    if not results_path.exists():
        print(f"pytest exited with status {rc} before any test result was written", file=sys.stderr)
        return rc or 1
    text, _ = summarize(json.loads(results_path.read_text()))
    print(text)
    if args.keep:
        print(f"(kept {workdir})")
    else:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
