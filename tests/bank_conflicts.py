"""Shared-memory bank conflicts of a generated kernel's tensor-core staging, read off its CUDA: the
addresses each lane hands ``ldmatrix`` (``x4``: a dot whose warps hold two column tiles or more)
and each lane's ``cp.async`` copies are evaluated in Python for every thread of the block, and
the accesses one shared-memory wavefront serves are checked to touch distinct banks (128 bytes a
wavefront: an 8x8 matrix's eight row addresses of an ``ldmatrix``; 8, 16 or 32 consecutive lanes
of a 16-, 8- or 4-byte copy)."""
from __future__ import annotations

import re


def _split_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of the call whose argument list starts ``text``
    (just after its opening parenthesis; the calls read here have no comma inside template
    arguments)."""
    args, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                return args + [text[start:i].strip()]
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    raise ValueError("unbalanced call")


def _byte_address(expr: str, elem_bytes: int):
    """A Python function of the kernel's index variables giving the byte offset of ``expr`` (an
    address into a staging buffer: ``buf + elements`` or a ``reinterpret_cast`` of ``buf``'s bytes)."""
    m = re.fullmatch(r"reinterpret_cast<[\w: ]+\*>\(reinterpret_cast<unsigned char\*>\(\w+\) \+ (.*)\)", expr, re.S)
    body, scale = (m.group(1), 1) if m else (re.fullmatch(r"\w+ \+ (.*)", expr, re.S).group(1), elem_bytes)
    code = compile(body.replace("/", "//"), "<address>", "eval")
    return lambda **env: eval(code, {}, env) * scale


def _groups_distinct(addresses: list[int]) -> bool:
    return len({a // 16 % 8 for a in addresses}) == len(addresses)


def ldmatrix_conflicts(cu: str, num_warps: int, k: int, k_step: int, elem_bytes: int) -> list[str]:
    """The ldmatrix wavefronts of ``cu``'s tensor-core dot that touch a bank group twice (empty:
    conflict-free), for each k step, row / column tile and warp."""
    found = []
    wm = int(re.search(r"wi = \(tid >> 5\) % (\d+)", cu).group(1))
    ra = re.search(r"const int ra = (.*);", cu).group(1)
    cb = re.search(r"const int cb = (.*);", cu).group(1)
    mt = int(re.search(r"unsigned fa\[(\d+)\]\[4\]", cu).group(1))
    nt = int(re.search(r"fb\[(\d+)\]\[2\]", cu).group(1))
    for operand, tiles, index, var in (("fa[i][3], ", mt, ra, "ra"), ("fb[j + 1][1], ", nt // 2, cb, "cb")):
        addr = _byte_address(_last_arg(cu, operand), elem_bytes)
        tile_of = compile(index.replace("/", "//"), "<index>", "eval")
        for k0 in range(0, k, k_step):
            for t in range(tiles):
                for warp in range(num_warps):
                    for matrix in range(4):
                        rows = []
                        for lane in range(8 * matrix, 8 * matrix + 8):
                            env = dict(lane=lane, wi=warp % wm, wj=warp // wm, i=t, j=2 * t, k0=k0)
                            env[var] = eval(tile_of, {}, env)
                            rows.append(addr(**env))
                        if not _groups_distinct(rows):
                            found.append(f"{operand.strip(', ')} k0={k0} tile={t} warp={warp} matrix={matrix}: "
                                         f"{rows}")
    return found


def _last_arg(cu: str, after: str) -> str:
    """The last argument of the ldmatrix call whose argument list holds ``after``."""
    start = cu.index("(", cu.rindex("mt_ldmatrix_x4<", 0, cu.index(after))) + 1
    return _split_args(cu[start:])[-1]


def cp_async_conflicts(cu: str, num_warps: int, elem_bytes: int) -> list[str]:
    """The ``cp.async`` copies into staging buffers of ``cu`` (4, 8 or 16 bytes a lane) whose
    wavefront — 128 bytes: 32, 16 or 8 consecutive lanes — touches a 4-byte bank twice, per copy
    statement and register. CUDA without such a copy is an error, not a pass (a change in how
    the compiler writes them must not turn the check into one that finds nothing)."""
    found, statements = [], 0
    for m in re.finditer(r"for \(int r = 0; r < (\d+); r \+= (\d+)\) mt_cp_async<(\d+)>\(", cu):
        statements += 1
        n, step, size = (int(g) for g in m.groups())
        addr = _byte_address(_split_args(cu[m.end():])[0], elem_bytes)
        for r in range(0, n, step):
            for first in range(0, 32 * num_warps, 128 // size):
                lanes = [addr(r=r, tid=tid) for tid in range(first, first + 128 // size)]
                banks = [(a + w) // 4 % 32 for a in lanes for w in range(0, size, 4)]
                if len(set(banks)) != len(banks):
                    found.append(f"{size}-byte copy at {m.start()} r={r} threads {first}..: {lanes}")
    if not statements:
        raise ValueError("no cp.async copies into a staging buffer in this CUDA")
    return found
