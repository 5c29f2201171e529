"""``mytriton-build MANIFEST... [--out DIR] [--target sm_XX ...] [-j N] [--max-specializations N]
[--allow-outside] [--cache DIR | --no-cache] [--executor dask://HOST:PORT] [--shard I/N]
[--tune | --tune-from FILE] [--emit-c] [--explain]``.

Exit status: 0 success, 1 a kernel failed to compile, 2 a usage or manifest error, 130 interrupted.
Errors go to stderr without a Python traceback (set MYTRITON_TRACEBACK=1 to see one for internal
errors). Importing this module is cheap (the compiler loads inside :func:`main`), so Ctrl-C is
handled from the first moments of a run.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys

from .. import __version__
from .errors import AotError, CompileFailed

_TARGET_LIKE = re.compile(r"sm_\d+")


# Numbers in ASCII digits only: int() also takes "1_0", " 4 ", "+4" and other scripts' digits ("٤").
_DIGITS = re.compile(r"[0-9]{1,18}")
_SHARD = re.compile(r"(-?[0-9]{1,18})/(-?[0-9]{1,18})")
# Options whose value may start with '-' (`--shard -1/2`, `-j -1`): argparse would take it for an
# option and answer "expected one argument"; attached to its option, the value's own check speaks.
_NUMBER_OPTIONS = ("--shard", "-j", "--jobs", "--max-specializations")


def _positive_int(what: str):
    def parse(text: str) -> int:
        if not _DIGITS.fullmatch(text) or int(text) < 1:
            raise argparse.ArgumentTypeError(f"expected a positive number of {what} in ASCII digits, got {text!r}")
        return int(text)
    return parse


def _shard(text: str) -> tuple[int, int]:
    match = _SHARD.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected I/N of two whole numbers in ASCII digits (e.g. 2/8), got {text!r}")
    i, n = int(match[1]), int(match[2])
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return i, n


def _attach_values(cli: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """*argv* with a value starting with '-' that follows one of _NUMBER_OPTIONS joined to it
    (``--shard=-1/2``, ``-j-1``), unless it is itself an option of the command line."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) else None
        if arg in _NUMBER_OPTIONS and value is not None and value.startswith("-") and not _is_option(cli, value):
            out.append(f"{arg}={value}" if arg.startswith("--") else f"{arg}{value}")
            i += 2
        else:
            out.append(arg)
            i += 1
    return out


def _is_option(cli: argparse.ArgumentParser, text: str) -> bool:
    """Whether *text* is an option (``--tune``, ``-h``, ``-j4``) rather than a value like ``-1/2``."""
    return text.startswith("--") or text[:2] in cli._option_string_actions


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line *argv* (default: ``sys.argv[1:]``) read; a bad one exits 2 with usage."""
    cli = parser()
    return cli.parse_intermixed_args(_attach_values(cli, sys.argv[1:] if argv is None else list(argv)))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mytriton-build",
        description="Compile the kernels a manifest lists into an installable loader package "
                    "(DIR/<package>/: loader, cubins, PTX, manifest.json, pyproject.toml).")
    p.add_argument("manifests", nargs="*", metavar="MANIFEST", help="YAML build manifest(s)")
    p.add_argument("--out", default="build", metavar="DIR",
                   help="output folder; each package goes to DIR/<package>/ (default: build)")
    p.add_argument("--target", action="append", metavar="sm_XX", dest="targets",
                   help="GPU target overriding the manifest's 'targets'; repeat it (or separate "
                        "with commas) for several")
    p.add_argument("-j", "--jobs", type=_positive_int("jobs"), default=None, metavar="N",
                   help="parallel compile processes (default: the number of CPU cores)")
    p.add_argument("--max-specializations", type=_positive_int("specializations"), default=None, metavar="N",
                   help="refuse a manifest that expands to more specializations than this (default: 4096)")
    p.add_argument("--allow-outside", action="store_true",
                   help="allow kernel files outside the manifest's folder (../x.py, absolute paths)")
    p.add_argument("--cache", metavar="DIR", default=None,
                   help="shared compile cache, content-addressed (several processes and machines may use one "
                        "folder; default: $MYTRITON_CACHE_DIR, else ~/.cache/mytriton)")
    p.add_argument("--no-cache", action="store_true", help="use no shared compile cache")
    p.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT",
                   help="where the compiles run: this machine (-j processes; the default) or the workers of a "
                        "Dask distributed cluster (pip install 'mytriton[distributed]'; they must see the "
                        "kernel files at the same paths)")
    p.add_argument("--shard", type=_shard, default=None, metavar="I/N",
                   help="compile only the I-th of N deterministic shares of the compiles into the shared "
                        "cache, and write no package (a later build without --shard assembles it)")
    p.add_argument("--tune", action="store_true",
                   help="time every config of the kernels with 'autotune:' on this machine's GPU and build the "
                        "package to launch the fastest per problem (writes DIR/<package>/tuning.json and a report)")
    p.add_argument("--tune-from", action="append", metavar="FILE", default=None,
                   help="reuse the tuning.json of an earlier --tune (no GPU needed; the same package, byte for "
                        "byte); repeat it for several packages")
    p.add_argument("--explain", action="store_true",
                   help="print what computes each tl.dot of every compile (wgmma, mma.sync or the CUDA cores), "
                        "why, and how its operands reach it")
    p.add_argument("--emit-c", action="store_true",
                   help="also write the package's C API: DIR/<package>/c/<package>.h and .c (C11 over the CUDA "
                        "driver API, one typed launch function per specialization, the images embedded)")
    p.add_argument("--cache-info", action="store_true",
                   help="print the shared cache's size and hit rate, and exit")
    p.add_argument("--version", action="version", version=f"mytriton-build {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    return _leave(_main(argv))


def _leave(status: int) -> int:
    """``status``, once no NVRTC compile abandoned after its time limit is still running. One that
    is still inside NVRTC ``nvrtc.EXIT_WAIT_S`` seconds after it was told to cancel would be torn
    down with the interpreter (NVRTC's C++ code running while the process exits): the build then
    ends here, with ``os._exit`` after flushing its output."""
    nvrtc = sys.modules.get("mytriton.backends.cuda.nvrtc")
    if nvrtc is not None and not nvrtc.settle(nvrtc.EXIT_WAIT_S):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _main(argv: list[str] | None) -> int:
    try:
        args = parse_args(argv)     # exits 2 with usage on a bad command line
        if args.cache_info:
            return _cache_info(args)
        if not args.manifests:
            parser().error("the following arguments are required: MANIFEST")
        targets = [t for value in args.targets or [] for t in value.split(",") if t] or None
        for path in args.manifests:
            if _TARGET_LIKE.fullmatch(path) and not os.path.exists(path):
                return _fail(f"{path}: no such manifest (for several targets repeat the option: "
                             f"--target sm_80 --target sm_90)", 2)
        # `kill` gets the same clean exit as Ctrl-C: the staging folder is removed, the old output kept.
        previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        try:
            return _build(args, targets)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except KeyboardInterrupt:       # before the build started (e.g. while the compiler loads)
        return _fail("interrupted; the previous output was left as it was", 130)


def _build(args, targets) -> int:
    try:
        from .build import build_packages       # the compiler loads here, inside the handlers
        options = {} if args.max_specializations is None else {"max_specializations": args.max_specializations}
        build_packages(args.manifests, out_dir=args.out, targets=targets, jobs=args.jobs,
                       echo=lambda line: print(line, flush=True), notify=lambda line: _err(line),
                       allow_outside=args.allow_outside, cache_dir=_cache_dir(args), shard=args.shard,
                       executor=args.executor, tune=args.tune, tune_from=args.tune_from, emit_c=args.emit_c,
                       explain_all=args.explain, **options)
    except CompileFailed as exc:
        for labels, message in exc.failures:
            shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
            _err(f"error: compiling {shown} failed:\n{message.rstrip()}")
        return _fail(str(exc), exc.exit_status)
    except AotError as exc:
        return _fail(str(exc), exc.exit_status)
    except KeyboardInterrupt:
        return _fail("interrupted; the previous output was left as it was", 130)
    except OSError as exc:      # e.g. an --out folder that cannot be written
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"cannot write the output: {exc.strerror or exc}{where}", 1)
    except Exception as exc:  # noqa: BLE001 - a bug in mytriton-build: say so, briefly
        if os.environ.get("MYTRITON_TRACEBACK"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} "
                     "(set MYTRITON_TRACEBACK=1 for the traceback)", 1)
    return 0


def _cache_dir(args):
    """The shared cache's folder (None with --no-cache)."""
    if args.no_cache:
        return None
    from .._paths import default_cache_dir
    return args.cache or default_cache_dir()


def _cache_info(args) -> int:
    from .cache import SharedCache
    folder = _cache_dir(args)
    if folder is None:
        return _fail("--cache-info and --no-cache: no cache to describe", 2)
    info = SharedCache(folder).info()
    rate = "no lookups yet" if info["hit_rate"] is None else f"{100 * info['hit_rate']:.1f} %"
    print(f"{info['folder']}: {info['entries']} compiles, {info['bytes'] / 2**20:.1f} MiB; "
          f"{info['hits']} hits, {info['misses']} misses ({rate})", flush=True)
    return 0


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _fail(message: str, status: int) -> int:
    _err(f"mytriton-build: {message}")
    return status
