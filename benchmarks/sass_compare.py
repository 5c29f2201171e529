"""mytriton's machine code beside Triton's for the sweep's kernels, without a GPU.

    python3 benchmarks/sass_compare.py row_sum --config BLOCK=256 --warps 1 [--no16] [--out DIR]
    python3 benchmarks/sass_compare.py matmul --all [--only-warps 2]

Compiles one configuration of a kernel of ``benchmarks/sweep.py`` (its source, its signature and
alignment promises, as the sweep times it) through mytriton (NVRTC) and, where Triton is
installed, through Triton for the same target (Triton compiles offline, given the target), then
prints each side's registers, stack frame, SASS instruction count and its hottest loop's
instructions per FFMAs (the loop with the most FFMAs: a K loop as ptxas unrolled it), a histogram
of the instructions that tell most (global and shared memory, local-memory spills, barriers,
branches, FMAs) and that loop's memory accesses and math in issue order (``loop_order``), and
writes the CUDA, PTX and SASS of both under ``--out``. ``--all`` prints one line a
configuration instead: where ptxas spills or caps registers is the first thing to look at when
the sweep finds a slow one.

Needs a ``cuobjdump`` and the ``nvdisasm`` beside it (pip's ``nvidia-cuda-cuobjdump`` and
``nvidia-cuda-nvdisasm``, the ones Triton's package carries, or ones on PATH); without them, or
without Triton for the Triton side, it says what is missing.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep  # noqa: E402
from common import ROOT, load_module, write_triton_module  # noqa: E402

# the instruction classes shown (their SASS opcodes, modifiers dropped)
SHOWN = ("LDG", "STG", "LDS", "STS", "LDSM", "STSM", "LDGSTS", "LDL", "STL", "BAR", "BRA", "SHFL", "FFMA", "HGMMA",
         "HMMA")


def cuobjdump() -> str | None:
    """A cuobjdump: pip's (through cuda-pathfinder), Triton's, or one on PATH."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        found = find_nvidia_binary_utility("cuobjdump")
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 - an older cuda-pathfinder, or none
        pass
    try:
        import triton
        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if bundled.is_file():
            return str(bundled)
    except ImportError:
        pass
    return shutil.which("cuobjdump")


def resources(text: str) -> dict[str, int]:
    """``cuobjdump -res-usage``'s ``REG:40 STACK:0 SHARED:1024 ...`` as numbers (the first function)."""
    line = next((x for x in text.splitlines() if "REG:" in x), "")
    return {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", line)}


def _opcode(text: str) -> str | None:
    """An instruction's opcode (its first dot-separated part, a predicate dropped), or None."""
    m = re.match(r"\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", text)
    return m.group(1) if m else None


def opcodes(sass: str) -> Counter:
    """How often each opcode (``_opcode``) occurs in a SASS listing."""
    counts = Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*)", line)
        op = _opcode(m.group(1)) if m else None
        if op:
            counts[op] += 1
    return counts


def inspect(cubin: bytes, tool: str) -> tuple[dict, Counter, str]:
    """(resources, opcode counts, SASS listing) of a cubin. (cuobjdump disassembles through the
    nvdisasm beside it: pip's nvidia-cuda-nvdisasm, or Triton's.)"""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(tool).parent), os.environ.get("PATH", "")]))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        res, sass = (subprocess.run([tool, flag, f.name], capture_output=True, text=True, env=env)
                     for flag in ("-res-usage", "-sass"))
    for out in (res, sass):
        if out.returncode:
            raise SystemExit(f"sass_compare: {tool} failed: {out.stderr.strip()}")
    return resources(res.stdout), opcodes(sass.stdout), sass.stdout


def signature(config: sweep.Config) -> dict:
    kernel = sweep.KERNELS[config.kernel]
    return sweep.mytriton_signature(sweep.runtime_params(kernel), kernel.problem(config), config.aligned)


def compile_triton(config: sweep.Config, target: str, folder: Path):
    """Triton's compile of the same source and promises (``tt.divisibility`` 16 where mytriton's
    signature says ``:16``), for ``target`` without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    kernel = sweep.KERNELS[config.kernel]
    fn = getattr(load_module(write_triton_module(ROOT / kernel.file, folder), f"triton_{config.kernel}"),
                 kernel.function)
    types, attrs = {}, {}
    for i, (name, ty) in enumerate(signature(config).items()):
        types[name], _, promise = ty.partition(":")
        if promise:
            attrs[(i,)] = [["tt.divisibility", int(promise)]]
    names = list(types) + [name for name, _ in config.constexprs]
    types.update((name, "constexpr") for name, _ in config.constexprs)
    src = ASTSource(fn=fn, signature=types, constexprs={(names.index(n),): v for n, v in config.constexprs},
                    attrs=attrs)
    arch = int(re.sub(r"\D", "", target))
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": config.num_warps})


def _ffmas(body: list[str]) -> int:
    return sum(1 for t in body if _opcode(t) == "FFMA")


def hottest_loop_body(sass: str) -> list[str]:
    """The instructions of the loop in a SASS listing with the most FFMAs (a backward branch's
    span; ptxas's unrolled main loop of a K loop), the longest of equals; [] without a loop."""
    ins = [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    best: list[str] = []
    for addr, text in ins:
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr]
            if (_ffmas(body), len(body)) > (_ffmas(best), len(best)):
                best = body
    return best


def hottest_loop(sass: str) -> tuple[int, int]:
    """(instructions, FFMAs) of ``hottest_loop_body``, or (0, 0) without a loop: per FFMA, what an
    iteration costs besides the math."""
    body = hottest_loop_body(sass)
    return len(body), _ffmas(body)


# the instructions whose order in the hottest loop is shown (loop_order): those counted, branches
# aside, and the adds of reductions
ORDERED = tuple(op for op in SHOWN if op != "BRA") + ("FADD",)


def loop_order(body: list[str]) -> str:
    """The memory accesses, barriers and float math of a loop body in issue order, run-length
    encoded (``LDG98 FADD1 LDG10 ...``): whether ptxas issues an iteration's loads before the
    math that waits for them."""
    runs: list[list] = []
    for op in map(_opcode, body):
        if op in ORDERED:
            if runs and runs[-1][0] == op:
                runs[-1][1] += 1
            else:
                runs.append([op, 1])
    return " ".join(f"{op}{n}" for op, n in runs)


def summary(res: dict, ops: Counter, sass: str) -> str:
    n, ffma = hottest_loop(sass)
    return (f"REG {res.get('REG', 0):3d}  STACK {res.get('STACK', 0):5d}  SASS {sum(ops.values()):5d}"
            f"  loop {n:4d}/{ffma:3d} FFMA")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel", choices=sorted(sweep.KERNELS))
    ap.add_argument("--config", default="", help="constexprs, e.g. BLOCK=256 or BM=64,BN=64")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--no16", action="store_true", help="without the 16-byte alignment / divisibility promise")
    ap.add_argument("--all", action="store_true", help="every sweep configuration of the kernel, a line each")
    ap.add_argument("--only-warps", type=int, default=None, help="with --all: only this num_warps")
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--out", type=Path, default=None, help="where to write the CUDA, PTX and SASS (one config)")
    args = ap.parse_args(argv)
    tool = cuobjdump()
    if tool is None:
        print("sass_compare: no cuobjdump found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
        return 0
    try:
        import triton  # noqa: F401
        with_triton = True
    except ImportError:
        with_triton = False
        print("(Triton is not installed: mytriton's side only)")
    folder = Path(tempfile.mkdtemp(prefix="mytriton-sass-"))
    if args.all:
        configs = [c for c in sweep.KERNELS[args.kernel].configs(False)
                   if args.only_warps in (None, c.num_warps)]
    else:
        given = {k: int(v) for k, v in (kv.split("=") for kv in args.config.replace(" ", ",").split(",") if kv)}
        template = sweep.KERNELS[args.kernel].configs(True)[0]
        names = [n for n, _ in template.constexprs]
        if sorted(given) != sorted(names):
            ap.error(f"--config must give {', '.join(names)}")
        configs = [sweep.Config(args.kernel, tuple((n, given[n]) for n in names), args.warps, not args.no16,
                                template.size)]
    for config in configs:
        kernel = sweep.KERNELS[config.kernel]
        mt = sweep.mytriton_compile(str(ROOT / kernel.file), kernel.function, signature(config),
                                    dict(config.constexprs), config.num_warps, args.target)
        mres, mops, msass = inspect(mt.asm["cubin"], tool)
        line = f"{config.label():28s} mytriton {summary(mres, mops, msass)}"
        if with_triton:
            tr = compile_triton(config, args.target, folder)
            tres, tops, tsass = inspect(tr.asm["cubin"], tool)
            line += f"  |  triton {summary(tres, tops, tsass)}"
        print(line, flush=True)
        if args.all:
            continue
        print(f"\n{'opcode':8s} {'mytriton':>9s}" + (f" {'triton':>9s}" if with_triton else ""))
        for op in SHOWN:
            if mops[op] or (with_triton and tops[op]):
                print(f"{op:8s} {mops[op]:9d}" + (f" {tops[op]:9d}" if with_triton else ""))
        print("\nhottest loop, in order:\n  mytriton " + loop_order(hottest_loop_body(msass)))
        if with_triton:
            print("  triton   " + loop_order(hottest_loop_body(tsass)))
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "mytriton.cu").write_text(mt.asm["cu"])
            (args.out / "mytriton.ptx").write_text(mt.asm["ptx"])
            (args.out / "mytriton.sass").write_text(msass)
            if with_triton:
                (args.out / "triton.ptx").write_text(tr.asm["ptx"])
                (args.out / "triton.ttgir").write_text(tr.asm["ttgir"])
                (args.out / "triton.sass").write_text(tsass)
            print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
