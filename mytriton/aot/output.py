"""Putting a finished package in place atomically, under a lock.

A package is assembled in a private temporary folder next to its destination and swapped in at
the very end (one ``renameat2(RENAME_EXCHANGE)`` on Linux), so a failed or interrupted build
leaves the previous ``build/<package>/`` exactly as it was. A lock file beside the destination
serializes concurrent builds of the same package; it exists only while a build holds it, and is
never followed when it is a symbolic link.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import filecmp
import fcntl
import json
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .cache import GENERATOR
from .errors import UsageError


@contextmanager
def locked(dest: Path, notify=None):
    """Hold ``.<package>.lock`` next to *dest* for the whole build of that package; removed after.

    The holder unlinks the file before it lets go, so a waiter may end up holding a lock on a
    file that is no longer there: it then checks that the path still names the file it locked,
    and starts over when not. A symbolic link there is refused (``O_NOFOLLOW``), not followed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    lock_path = dest.parent / f".{dest.name}.lock"
    told = False
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP or lock_path.is_symlink():
                raise UsageError(f"the lock file {lock_path} is a symbolic link; it is not followed: "
                                 "remove it") from None
            raise
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if notify and not told:
                    notify(f"waiting for another build of {dest} to finish (lock {lock_path})")
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, lock_path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)            # the previous holder removed it: lock the new one
    try:
        _clean_leftovers(dest)
        yield
    finally:
        try:
            os.unlink(lock_path)    # while still holding it (see above)
        except OSError:
            pass
        os.close(fd)        # closing the descriptor releases the lock


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def check_replaceable(dest: Path) -> None:
    """Refuse to replace a folder that mytriton-build did not make (e.g. ``--out .`` over sources)."""
    if not dest.exists() and not dest.is_symlink():
        return
    if dest.is_dir() and not dest.is_symlink():
        if not any(dest.iterdir()):
            return
        try:
            info = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))
            if isinstance(info, dict) and info.get("generator") == GENERATOR:
                return
        except (OSError, ValueError):
            pass
    raise UsageError(f"{dest} exists and was not made by mytriton-build; "
                     "remove it or choose another --out folder")


@contextmanager
def staging(dest: Path):
    """A private temporary folder next to *dest*; removed whatever happens."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)       # mkdtemp's 0700 is for the temp name, not for the package
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def same_tree(a: Path, b: Path) -> bool:
    """True when both folders hold the same files with the same bytes (``__pycache__`` aside:
    importing the package must not make the next no-op build rewrite it)."""
    if not b.is_dir():
        return False
    files_a, files_b = _files(a), _files(b)
    if files_a != files_b:
        return False
    return all(filecmp.cmp(a / rel, b / rel, shallow=False) for rel in files_a)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if (not p.is_dir() or p.is_symlink()) and "__pycache__" not in p.relative_to(root).parts}


def swap_in(tmp: Path, dest: Path) -> None:
    """Make *tmp* the new *dest*; the old *dest* ends up in *tmp* (removed by :func:`staging`)."""
    with _no_sigint():
        if not dest.exists():
            os.rename(tmp, dest)
            tmp.mkdir()             # so staging's cleanup has its folder
            return
        if _rename_exchange(tmp, dest):
            return
        # Fallback without an atomic exchange: a crash between the renames leaves the old build in
        # .<package>.old-*, which the next build (under the lock) puts back.
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        os.rename(dest, old / "pkg")
        os.rename(tmp, dest)
        os.rename(old / "pkg", tmp)
        os.rmdir(old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _rename_exchange(a: Path, b: Path) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.ENOTSUP):
        return False        # file system or kernel without RENAME_EXCHANGE
    raise OSError(err, os.strerror(err), str(b))


@contextmanager
def _no_sigint():
    """Defer Ctrl-C during the few syscalls of a swap."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _clean_leftovers(dest: Path) -> None:
    """Remove temp folders of builds that were killed; restore an old build lost mid-swap."""
    for old in sorted(dest.parent.glob(f".{dest.name}.old-*")):
        if (old / "pkg").is_dir() and not dest.exists():
            os.rename(old / "pkg", dest)
        shutil.rmtree(old, ignore_errors=True)
    for tmp in dest.parent.glob(f".{dest.name}.tmp-*"):
        shutil.rmtree(tmp, ignore_errors=True)
    for tmp in dest.parent.glob(f".{dest.name}.cache/*.tmp"):     # see cache.PendingCompiles
        tmp.unlink(missing_ok=True)
