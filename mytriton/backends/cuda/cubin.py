"""What a cubin says of its kernels' resources, read from the ELF file NVRTC writes.

The global ``.nv.info`` section holds attributes of the form (format byte, attribute byte, size,
value); for each function it gives ``EIATTR_REGCOUNT`` (registers a thread) and
``EIATTR_FRAME_SIZE`` (bytes of stack frame a thread: where ptxas spills, and local arrays),
each as the function's symbol index and a 32-bit count — what ``cuobjdump -res-usage`` prints as
REG and STACK. No CUDA toolkit is needed to read them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
SHT_SYMTAB = 2


@dataclass(frozen=True)
class Resources:
    registers: int      # a thread's registers
    stack: int          # bytes of stack frame a thread


def _sections(elf: bytes) -> list[tuple[str, int, bytes, int]]:
    """(name, type, contents, link) of each section of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQII", elf, shoff + i * entsize) for i in range(count)]
    strings = elf[raw[names][4]:raw[names][4] + raw[names][5]]
    out = []
    for name, kind, _flags, _addr, off, size, link, _info in raw:
        out.append((strings[name:strings.index(b"\0", name)].decode(), kind, elf[off:off + size], link))
    return out


def _attributes(data: bytes):
    """(attribute, value bytes) of an ``.nv.info`` section."""
    i = 0
    while i + 2 <= len(data):
        fmt, attr = data[i], data[i + 1]
        i += 2
        if fmt == EIFMT_SVAL:
            size, = struct.unpack_from("<H", data, i)
            yield attr, data[i + 2:i + 2 + size]
            i += 2 + size
        elif fmt == EIFMT_HVAL:
            yield attr, data[i:i + 2]
            i += 2
        elif fmt == EIFMT_BVAL:
            yield attr, data[i:i + 1]
            i += 1
        elif fmt == EIFMT_NVAL:
            yield attr, b""
        else:
            raise ValueError(f"unknown .nv.info attribute format {fmt}")


def resources(cubin: bytes, symbol: str) -> Resources:
    """The registers and stack frame ptxas gave the function ``symbol`` of ``cubin``."""
    sections = _sections(cubin)
    index = None
    for _name, kind, data, link in sections:
        if kind == SHT_SYMTAB:
            strings = sections[link][2]
            for i in range(len(data) // 24):
                name, = struct.unpack_from("<I", data, 24 * i)
                if strings[name:strings.index(b"\0", name)].decode() == symbol:
                    index = i
    if index is None:
        raise ValueError(f"no function {symbol!r} in the cubin")
    found = {}
    for name, _kind, data, _link in sections:
        if name == ".nv.info":
            for attr, value in _attributes(data):
                if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(value) == 8:
                    sym, count = struct.unpack("<II", value)
                    if sym == index:
                        found[attr] = count
    if EIATTR_REGCOUNT not in found:
        raise ValueError(f"the cubin records no register count for {symbol!r}")
    return Resources(found[EIATTR_REGCOUNT], found.get(EIATTR_FRAME_SIZE, 0))
