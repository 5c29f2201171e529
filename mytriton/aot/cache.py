"""What must be rebuilt: a content hash per compile, matched against the previous build's manifest.json.

The key covers everything a cubin depends on: the kernel source (``jit_fn.cache_key``, which also
covers the @jit functions it reaches and the constants it reads from globals, modules and
closures), signature, constexprs, num_warps, target, whether PTX is
shipped, the mytriton and NVRTC versions, and a hash of the compiler's own sources (so a compiler
edit without a version bump still rebuilds). The previous build folder is the cache: artifacts
whose key matches and whose sha256 still checks out are copied instead of recompiled. Compiles
that finished in a build that did not write its package (Ctrl-C, another compile failed) wait in
``.<package>.cache/`` beside it (:class:`PendingCompiles`) for the next build. Every compile also
goes to the shared cache (``--cache DIR``, :class:`SharedCache`), which other builds, processes
and machines look up by the same key.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


from .jobs import Artifacts, CompileJob

CACHE_FORMAT = 1
GENERATOR = "mytriton-build"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent            # mytriton/
# The build tool and the runtime do not change what the compiler emits -- except the dtype table,
# which lives in the runtime's driver.py (the runtime ships alone) and which the compiler reads.
_NOT_COMPILER = ("aot", "runtime")
_DTYPE_TABLE = _PACKAGE_ROOT / "runtime" / "driver.py"


@dataclass(frozen=True)
class Toolchain:
    mytriton_version: str
    nvrtc_version: str
    compiler_hash: str


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compiler_hash(templates_dir: str | None) -> str:
    """sha256 over the compiler's Python sources and the kernel templates (read afresh for every
    build: a long-lived process must notice a compiler edit)."""
    digest = hashlib.sha256()
    files = [p for p in _PACKAGE_ROOT.rglob("*.py")
             if p.relative_to(_PACKAGE_ROOT).parts[0] not in _NOT_COMPILER or p == _DTYPE_TABLE]
    roots = [(_PACKAGE_ROOT, files)]
    if templates_dir:
        root = Path(templates_dir)
        roots.append((root, [p for p in root.rglob("*") if p.is_file() and "loader" not in
                             p.relative_to(root).parts and "__pycache__" not in p.parts]))
    for root, paths in roots:
        for path in sorted(paths):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def job_key(toolchain: Toolchain, cache_key: str, job: CompileJob) -> str:
    payload = {
        "format": CACHE_FORMAT,
        "toolchain": [toolchain.mytriton_version, toolchain.nvrtc_version, toolchain.compiler_hash],
        "kernel": [job.source.function, str(cache_key)],
        "signature": [list(p) for p in job.signature],
        "constexprs": [[name, type(value).__name__, value] for name, value in job.constexprs],
        "num_warps": job.num_warps,
        "num_stages": job.num_stages,
        "target": job.target,
        "emit_ptx": job.emit_ptx,
        **({"hoist_tensor_maps": True} if job.hoist_tensor_maps else {}),
    }
    return sha256_bytes(json.dumps(payload, sort_keys=True).encode())


class PreviousBuild:
    """The artifacts of the build currently in the destination folder, indexed by job key."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.by_key: dict[str, dict] = {}
        self.native_launcher = None    # the previous build's record of its native launch library
        try:
            data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            if data.get("generator") == GENERATOR and data.get("cache_format") == CACHE_FORMAT:
                self._index(data)
                self.native_launcher = data.get("native_launcher")
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            self.by_key = {}    # no usable previous build: everything is compiled afresh

    def _index(self, data: dict) -> None:
        ptx_target = data["ptx_target"]
        for kernel in data["kernels"].values():
            for spec in kernel["specializations"]:
                for target, build in spec["build"].items():
                    entry = {"cubin": (spec["images"][target], spec["sha256"][target]),
                             "shared": build["shared"], "symbol": build["symbol"],
                             "made_tensor_maps": tuple(build.get("made_tensor_maps", ()))}
                    if target == ptx_target:
                        entry["ptx"] = (spec["images"]["ptx"], spec["sha256"]["ptx"])
                        entry["cu"] = (spec["source"], spec["sha256"]["cu"])
                    self.by_key[build["key"]] = entry

    def lookup(self, key: str, emit_ptx: bool) -> Artifacts | None:
        """The previous build's artifacts for *key*, if all of them are present and intact."""
        entry = self.by_key.get(key)
        if entry is None:
            return None
        cubin = self._read(*entry["cubin"])
        ptx = cu = None
        if emit_ptx:
            if "ptx" not in entry:
                return None
            ptx, cu = self._read(*entry["ptx"]), self._read(*entry["cu"])
            if ptx is None or cu is None:
                return None
            ptx, cu = ptx.decode("utf-8"), cu.decode("utf-8")
        if cubin is None:
            return None
        return Artifacts(cubin=cubin, ptx=ptx, cu=cu, shared=entry["shared"], symbol=entry["symbol"],
                         cached=True, made_tensor_maps=entry["made_tensor_maps"])

    def native(self, key: str) -> bytes | None:
        """The previous build's native launch library, if it was built with *key* and is intact."""
        record = self.native_launcher
        if not isinstance(record, dict) or record.get("key") != key:
            return None
        try:
            return self._read(record["file"], record["sha256"])
        except (KeyError, TypeError):
            return None

    def _read(self, relative: str, sha256: str) -> bytes | None:
        path = self.folder / relative
        if ".." in Path(relative).parts or os.path.isabs(relative):
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return data if sha256_bytes(data) == sha256 else None


def _encode(artifacts: Artifacts) -> bytes:
    """One compile's artifacts as the bytes of a cache entry: a JSON record and its sha256."""
    record = {"cubin": base64.b64encode(artifacts.cubin).decode("ascii"), "ptx": artifacts.ptx,
              "cu": artifacts.cu, "shared": artifacts.shared, "symbol": artifacts.symbol,
              "made_tensor_maps": list(artifacts.made_tensor_maps)}
    data = json.dumps(record, sort_keys=True)
    return json.dumps({"sha256": sha256_bytes(data.encode()), "record": data}).encode()


def _decode(payload: bytes, emit_ptx: bool) -> Artifacts | None:
    """The artifacts of a cache entry, or None when it is damaged (sha256) or lacks the PTX asked for."""
    try:
        outer = json.loads(payload)
        data = outer["record"]
        if sha256_bytes(data.encode()) != outer["sha256"]:
            return None
        record = json.loads(data)
        if emit_ptx and (record["ptx"] is None or record["cu"] is None):
            return None
        return Artifacts(cubin=base64.b64decode(record["cubin"]), ptx=record["ptx"] if emit_ptx else None,
                         cu=record["cu"] if emit_ptx else None, shared=int(record["shared"]),
                         symbol=str(record["symbol"]), cached=True,
                         made_tensor_maps=tuple(record.get("made_tensor_maps", ())))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_atomically(folder: Path, name: str, payload: bytes) -> None:
    """``folder/name`` holds ``payload`` whole or not at all (a temporary file, then a rename): a
    concurrent reader sees the old entry or the new one, never a part."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class PendingCompiles:
    """Compiles of a package that its folder does not hold yet, by job key: one file each,
    ``.<package>.cache/<key>.json``, written atomically as each compile finishes. A build that
    is interrupted or fails keeps them, the next one takes them; writing the package (which
    then holds them) empties the folder. Used under the package's lock only."""

    def __init__(self, dest: Path):
        self.folder = dest.parent / f".{dest.name}.cache"

    def put(self, key: str, artifacts: Artifacts) -> None:
        try:
            _write_atomically(self.folder, f"{key}.json", _encode(artifacts))
        except OSError:
            pass                # only a cache: the build goes on without it

    def lookup(self, key: str, emit_ptx: bool) -> Artifacts | None:
        try:
            return _decode((self.folder / f"{key}.json").read_bytes(), emit_ptx)
        except OSError:
            return None

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class SharedCache:
    """A content-addressed store of compiles (``--cache DIR``) that processes and machines may share,
    on a network file system too: entry ``DIR/compile/<key[:2]>/<key>.json`` (the job key covers
    everything a cubin depends on), written atomically, its sha256 checked on every read (a damaged
    entry is a miss, and is replaced). Each build adds its hits and misses to ``DIR/compile/stats/``
    (one small file per build) for ``mytriton-build --cache-info``."""

    def __init__(self, root: Path):
        self.folder = Path(root) / "compile"
        self.hits = self.misses = 0
        self.problem: str | None = None      # why a write failed (the first time), for the build to say

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def lookup(self, key: str, emit_ptx: bool) -> Artifacts | None:
        try:
            found = _decode(self._path(key).read_bytes(), emit_ptx)
        except OSError:
            found = None
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: str, artifacts: Artifacts) -> None:
        try:
            _write_atomically(self._path(key).parent, f"{key}.json", _encode(artifacts))
        except OSError as exc:  # (a read-only or full cache: the build goes on without it)
            self.problem = self.problem or f"{exc.strerror or exc}: {exc.filename or self.folder}"

    def record_stats(self) -> None:
        if not (self.hits or self.misses):
            return
        name = f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}.json"
        with contextlib.suppress(OSError):
            _write_atomically(self.folder / "stats", name, json.dumps({"hits": self.hits, "misses": self.misses}).encode())

    def info(self) -> dict:
        """Entries, their bytes, and the hits and misses recorded by the builds that used it."""
        entries = size = hits = misses = 0
        if self.folder.is_dir():
            for path in self.folder.glob("??/*.json"):
                with contextlib.suppress(OSError):
                    size += path.stat().st_size
                    entries += 1
            for path in (self.folder / "stats").glob("*.json"):
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    record = json.loads(path.read_bytes())
                    hits, misses = hits + int(record["hits"]), misses + int(record["misses"])
        return {"folder": str(self.folder), "entries": entries, "bytes": size, "hits": hits, "misses": misses,
                "hit_rate": hits / (hits + misses) if hits + misses else None}
