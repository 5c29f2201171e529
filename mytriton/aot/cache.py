"""What must be rebuilt: a content hash per compile, matched against the previous build's manifest.json.

The key covers everything a cubin depends on: the kernel source (``jit_fn.cache_key``, which also
covers the @jit functions it reaches and every value it reads from outside itself, at any depth),
signature, constexprs (by kind and exact value), num_warps, num_stages, target, whether PTX is
shipped, and the toolchain (``toolchain.Toolchain``: the mytriton version, a hash of the compiler's
own sources and templates, NVRTC's version and library, the CUDA headers, compile switches). A
kernel whose key cannot be computed faithfully (``fingerprint.Uncacheable``) has no key: it is
compiled by every build and stored nowhere.

The previous build folder is the first cache: artifacts whose key matches and whose sha256 still
checks out are copied instead of recompiled. Compiles that finished in a build that did not write
its package (Ctrl-C, another compile failed) wait in ``.<package>.cache/`` beside it
(:class:`PendingCompiles`) for the next build. Every compile also goes to the shared cache
(``--cache DIR``, :class:`SharedCache`), which other builds, processes and machines look up by the
same key.

An entry of either is bound to its key: it records the key it answers, and a lookup takes it only
under that key, only from a regular file (never through a symbolic link, never a FIFO or a device)
of at most :data:`MAX_ENTRY_BYTES`, and only when its sha256 and every field's type check out.
Anything else is a miss (and a shared entry is then replaced).

Sharing a cache: entries are written with the permissions the umask allows (``0644`` under the
usual ``022``), so a group-writable folder under umask ``002`` serves a team. The checks above
stop damaged, misplaced or foreign entries; they cannot stop someone who may write the folder from
storing a well-formed entry of their own under a key (the key is a hash of the inputs, not of the
output): share a cache only with people you would let run code on your GPUs.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import socket
import stat
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


from .jobs import Artifacts, CompileJob
from .toolchain import Toolchain, compiler_hash  # noqa: F401 - (compiler_hash: the tests' name for it)

CACHE_FORMAT = 3
GENERATOR = "mytriton-build"
# A cache entry is a few compiles' bytes (cubin, PTX, CUDA source); far past this it is no entry.
MAX_ENTRY_BYTES = 256 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def job_key(toolchain: Toolchain, cache_key: str | None, job: CompileJob) -> str | None:
    """The compile's key; None for a kernel that has none (``cache_key`` None: see the docstring)."""
    if cache_key is None:
        return None
    payload = {
        "format": CACHE_FORMAT,
        "toolchain": toolchain.key(),
        "kernel": [job.source.function, str(cache_key)],
        "signature": [list(p) for p in job.signature],
        "constexprs": [[name, _constexpr_text(value)] for name, value in job.constexprs],
        "num_warps": job.num_warps,
        "num_stages": job.num_stages,
        "target": job.target,
        "emit_ptx": job.emit_ptx,
        **({"hoist_tensor_maps": True} if job.hoist_tensor_maps else {}),
    }
    return sha256_bytes(json.dumps(payload, sort_keys=True).encode())


def _constexpr_text(value) -> str:
    """A manifest constexpr value by kind and exact value (floats by their bits: 0.0 and -0.0 differ)."""
    if type(value) is float:
        return f"float {struct.pack('<d', value).hex()}"
    return f"{type(value).__name__} {value!r}"


def read_entry(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of the regular file at *path*, at most *limit* of them; None for anything else
    (missing, a symbolic link, a FIFO, a device, a folder, too large): a cache read never blocks,
    never follows a link out of the cache and never reads without end."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


class PreviousBuild:
    """The artifacts of the build currently in the destination folder, indexed by job key (its
    specialized variants' too), and its specializations' analyses (``aot/variants.py``) by key."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.by_key: dict[str, dict] = {}
        self.analyses: dict[str, dict] = {}    # analysis key -> {"signature", "why"} as recorded
        self.native_launcher = None    # the previous build's record of its native launch library
        try:
            data = json.loads(read_entry(folder / "manifest.json") or b"null")
            if data.get("generator") == GENERATOR and data.get("cache_format") == CACHE_FORMAT:
                self._index(data)
                self.native_launcher = data.get("native_launcher")
        except (ValueError, AttributeError, KeyError, TypeError, RecursionError):
            self.by_key = {}    # no usable previous build: everything is compiled afresh

    def _index(self, data: dict) -> None:
        ptx_target = data["ptx_target"]
        for kernel in data["kernels"].values():
            for spec in kernel["specializations"]:
                compiled = [spec] + [v for v in spec.get("variants", ()) if "build" in v]
                for record in compiled:
                    self._index_builds(record, ptx_target)
                analysis = spec.get("specialize") or {}
                if isinstance(analysis.get("analysis"), str):
                    self.analyses[analysis["analysis"]] = {"signature": analysis.get("signature"),
                                                           "why": analysis.get("why")}

    def _index_builds(self, spec: dict, ptx_target: str) -> None:
        for target, build in spec["build"].items():
            if not _valid_recipes(build.get("made_tensor_maps", [])):
                continue
            explain = build.get("explain", [])
            if type(explain) is not list or not all(type(x) is str for x in explain):
                continue
            entry = {"cubin": (spec["images"][target], spec["sha256"][target]),
                     "shared": build["shared"], "symbol": build["symbol"],
                     "made_tensor_maps": tuple(build.get("made_tensor_maps", ())), "explain": tuple(explain)}
            if target == ptx_target:
                entry["ptx"] = (spec["images"]["ptx"], spec["sha256"]["ptx"])
                entry["cu"] = (spec["source"], spec["sha256"]["cu"])
            self.by_key[build["key"]] = entry

    def analysis(self, key: str, plain) -> "Variant | None":
        """The previous build's analysis under *key* of a specialization of signature *plain*, if
        well-formed (see :func:`variant_from`)."""
        record = self.analyses.get(key)
        return None if record is None else variant_from(record, plain)

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
                         cached=True, made_tensor_maps=entry["made_tensor_maps"], explain=entry["explain"])

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
        if type(relative) is not str or ".." in Path(relative).parts or os.path.isabs(relative):
            return None
        data = read_entry(self.folder / relative)
        return data if data is not None and sha256_bytes(data) == sha256 else None


def _encode(key: str, artifacts: Artifacts) -> bytes:
    """One compile's artifacts as the bytes of a cache entry: a JSON record, bound to *key*, and
    its sha256."""
    return _seal({"key": key, "cubin": base64.b64encode(artifacts.cubin).decode("ascii"), "ptx": artifacts.ptx,
                  "cu": artifacts.cu, "shared": artifacts.shared, "symbol": artifacts.symbol,
                  "made_tensor_maps": list(artifacts.made_tensor_maps), "explain": list(artifacts.explain)})


def _seal(record: dict) -> bytes:
    """A cache entry's bytes: *record* (which names its key) as JSON, and that text's sha256."""
    data = json.dumps(record, sort_keys=True)
    return json.dumps({"sha256": sha256_bytes(data.encode()), "record": data}).encode()


def _unseal(payload: bytes | None, key: str) -> dict | None:
    """The record of a cache entry read under *key*: None when the entry is damaged (its sha256)
    or answers another key. (ValueError & co. for a payload that is not an entry at all.)"""
    if payload is None:
        return None
    outer = json.loads(payload)
    data = outer["record"]
    if type(data) is not str or sha256_bytes(data.encode()) != outer["sha256"]:
        return None
    record = json.loads(data)
    return record if type(record) is dict and record.get("key") == key else None


def _decode(payload: bytes | None, key: str, emit_ptx: bool) -> Artifacts | None:
    """The artifacts of a cache entry read under *key*, or None when it is damaged (sha256), answers
    another key, holds a field of the wrong type, or lacks the PTX asked for."""
    try:
        record = _unseal(payload, key)
        if record is None or not _well_typed(record):
            return None
        if emit_ptx and (record["ptx"] is None or record["cu"] is None):
            return None
        return Artifacts(cubin=base64.b64decode(record["cubin"], validate=True),
                         ptx=record["ptx"] if emit_ptx else None, cu=record["cu"] if emit_ptx else None,
                         shared=record["shared"], symbol=record["symbol"], cached=True,
                         made_tensor_maps=tuple(record["made_tensor_maps"]), explain=tuple(record["explain"]))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _well_typed(record: dict) -> bool:
    """Every field of an entry's record is of the type a compile gives it (a neighbour's entry
    may hold anything), the tensor-map recipes by ``frontend.launch_maps.check_recipes``."""
    if not (type(record.get("cubin")) is str and type(record.get("shared")) is int and record["shared"] >= 0
            and type(record.get("symbol")) is str and record["symbol"].isascii() and record["symbol"].isidentifier()
            and all(record.get(k) is None or type(record.get(k)) is str for k in ("ptx", "cu"))
            and type(record.get("made_tensor_maps")) is list
            and type(record.get("explain")) is list and all(type(x) is str for x in record["explain"])):
        return False
    return _valid_recipes(record["made_tensor_maps"])


def _valid_recipes(recipes) -> bool:
    from ..frontend.launch_maps import check_recipes
    try:
        check_recipes(recipes)
    except ValueError:
        return False
    return True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomically(folder: Path, name: str, payload: bytes) -> None:
    """``folder/name`` holds ``payload`` whole or not at all (a temporary file, then a rename): a
    concurrent reader sees the old entry or the new one, never a part. The file gets the
    permissions the umask allows, as any file the user writes (a temporary file's are 0600)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            f.write(payload)
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- analyses (aot/variants.py): one small record each, kept where compiles are --------------------

def variant_from(record, plain) -> "Variant | None":
    """The Variant a cached record holds, for a specialization of signature *plain*: None unless its
    signature is None (with a reason) or a specialized variant of *plain* (the same parameters, each
    type keeping the plain one's promises, one at least adding one: what the runtime accepts)."""
    from ..runtime.driver import _twin_problem, parse_type
    from .variants import Variant
    if not isinstance(record, dict) or not isinstance(record.get("why"), str):
        return None
    signature = record.get("signature")
    if signature is None:
        return Variant(None, record["why"], cached=True)
    try:
        pairs = tuple((str(n), str(t)) for n, t in signature
                      if type(n) is str and type(t) is str)
        if len(pairs) != len(signature) or len(pairs) != len(plain):
            return None
        if _twin_problem([(n, parse_type(t)) for n, t in plain], [(n, parse_type(t)) for n, t in pairs]):
            return None
    except (TypeError, ValueError):
        return None
    return Variant(pairs, record["why"], cached=True)


def _encode_variant(key: str, variant) -> bytes:
    return _seal({"key": key, "why": variant.why,
                  "signature": None if variant.signature is None else [list(p) for p in variant.signature]})


def _decode_variant(payload: bytes | None, key: str, plain):
    try:
        record = _unseal(payload, key)
        return None if record is None else variant_from(record, plain)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


class PendingCompiles:
    """Compiles of a package that its folder does not hold yet, by job key: one file each,
    ``.<package>.cache/<key>.json``, written atomically as each compile finishes. A build that
    is interrupted or fails keeps them, the next one takes them; writing the package (which
    then holds them) empties the folder. Used under the package's lock only."""

    def __init__(self, dest: Path):
        self.folder = dest.parent / f".{dest.name}.cache"

    def put(self, key: str, artifacts: Artifacts) -> None:
        try:
            _write_atomically(self.folder, f"{key}.json", _encode(key, artifacts))
        except OSError:
            pass                # only a cache: the build goes on without it

    def lookup(self, key: str, emit_ptx: bool) -> Artifacts | None:
        return _decode(read_entry(self.folder / f"{key}.json"), key, emit_ptx)

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
        found = _decode(read_entry(self._path(key)), key, emit_ptx)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: str, artifacts: Artifacts) -> None:
        try:
            _write_atomically(self._path(key).parent, f"{key}.json", _encode(key, artifacts))
        except OSError as exc:  # (a read-only or full cache: the build goes on without it)
            self.problem = self.problem or f"{exc.strerror or exc}: {exc.filename or self.folder}"

    def _variant_path(self, key: str) -> Path:
        return self.folder.parent / "variants" / key[:2] / f"{key}.json"

    def lookup_variant(self, key: str, plain):
        """An analysis (``aot/variants.py``) under *key* of a specialization of signature *plain*."""
        return _decode_variant(read_entry(self._variant_path(key)), key, plain)

    def put_variant(self, key: str, variant) -> None:
        try:
            _write_atomically(self._variant_path(key).parent, f"{key}.json", _encode_variant(key, variant))
        except OSError as exc:
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
                    record = json.loads(read_entry(path) or b"null")
                    hits, misses = hits + int(record["hits"]), misses + int(record["misses"])
        return {"folder": str(self.folder), "entries": entries, "bytes": size, "hits": hits, "misses": misses,
                "hit_rate": hits / (hits + misses) if hits + misses else None}
