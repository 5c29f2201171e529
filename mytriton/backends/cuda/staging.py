"""How a ``tl.dot`` operand tile lies in shared memory (``Staging``): its rows, their pitch or
swizzle (wgmma's layout), and how a thread's registers are stored into it. The dot's rings
(``dot.py``) and TMA's swizzled stores (``tma.py``) lay tiles out alike."""
from __future__ import annotations

from ...ir.linear import REGISTER
from ...ir.ssa import Value


class Staging:
    """How one operand tile lies in shared memory: rows along tile dimension ``row_dim`` of
    ``cols`` elements along ``col_dim`` each, ``pitch`` elements apart; ``trans``: the rows are
    along K (the dot reads them with ``ldmatrix.trans``); ``vec``: the registers a thread stores
    at once (a run along the rows, aligned where every other basis moves the tile by whole runs)."""

    def __init__(self, em, x: Value, row_dim: int, col_dim: int, trans: bool):
        lay = em.layout_of(x)
        eb = x.type.scalar.bits // 8
        self.eb = eb
        self.row_dim, self.col_dim, self.trans = row_dim, col_dim, trans
        self.rows, self.cols = x.type.shape[row_dim], x.type.shape[col_dim]
        self.pitch = self.cols + 16 // eb
        self.nbytes = self.rows * self.pitch * eb
        self.offset = 0                           # bytes from the start of the dot's shared memory
        self.swizzle = 0                          # (see swizzled)
        vec = min(lay.contiguous_registers(col_dim), 16 // eb)
        while vec > 1 and not all(v[col_dim] % vec == 0 for name in lay.in_dims
                                  for b, v in enumerate(lay.bases_of(name))
                                  if not (name == REGISTER and (1 << b) < vec)):
            vec //= 2
        self.vec = vec

    @classmethod
    def of_operand(cls, em, x: Value, k_dim: int) -> "Staging":
        """Rows along the dimension ``x`` holds runs of registers along where it is 16-bit and that
        is M or N (read transposed), else along K."""
        lay = em.layout_of(x)
        along = 1 if lay.contiguous_registers(1) > 1 or lay.contiguous_registers(0) == 1 else 0
        trans = x.type.scalar.bits == 16 and along != k_dim
        return cls(em, x, k_dim, 1 - k_dim, True) if trans else cls(em, x, 1 - k_dim, k_dim, False)

    def swizzled(self) -> bool:
        """Lay the tile out as wgmma reads it, if it can be: rows of ``swizzle`` = 32, 64 or 128
        bytes (a row longer than 128 bytes is cut into 128-byte columns, ``atoms``, stored one after
        the other), the 16-byte chunk ``c`` of row ``r`` at chunk ``c ^ ((r * swizzle / 128) %
        (swizzle / 16))`` — the address bits 7.. XORed into bits 4.. (CUTLASS's Swizzle<B,4,3>),
        the pattern repeating every 1024 bytes (so each atom starts 1024-byte aligned)."""
        row_bytes = self.cols * self.eb
        width = min(row_bytes, 128)
        if width < 32 or row_bytes % width or self.rows * width % 1024:
            return False
        self.swizzle, self.atoms = width, row_bytes // width
        self.nbytes = self.rows * row_bytes
        return True

    def at(self, buf: str, row: str, col: str, ct: str) -> str:
        """C++ for the address of element (``row``, ``col``) (tile coordinates along ``row_dim``
        and ``col_dim``) in the tile at ``buf``."""
        if not self.swizzle:
            return f"{buf} + ({row}) * {self.pitch} + ({col})"
        w = self.swizzle
        byte = (f"(({col}) * {self.eb} / {w}) * {self.rows * w} + ({row}) * {w} + "
                f"(((({col}) * {self.eb} % {w}) >> 4 ^ ((({row}) * {w} >> 7) & {w // 16 - 1})) << 4) + "
                f"(({col}) * {self.eb} & 15)")
        return f"reinterpret_cast<{ct}*>(reinterpret_cast<unsigned char*>({buf}) + {byte})"

    def store(self, em, x: Value, buf: str, ct: str):
        """Emit the stores of this thread's registers of ``x`` into ``buf``."""
        c = em.coords(x, "r")
        at = self.at(buf, c[self.row_dim], c[self.col_dim], ct)
        em.emit("#pragma unroll")
        if self.vec == 1:
            em.emit(f"for (int r = 0; r < {em.nregs(x)}; ++r) *({at}) = {em.ref(x)}[r];")
            return
        t = f"mt_vec<{ct}, {self.vec}>"
        em.emit(f"for (int r = 0; r < {em.nregs(x)}; r += {self.vec}) {{")
        em.emit(f"  {t} v;")
        em.emit("  #pragma unroll")
        em.emit(f"  for (int j = 0; j < {self.vec}; ++j) v.v[j] = {em.ref(x)}[r + j];")
        em.emit(f"  *reinterpret_cast<{t}*>({at}) = v;")
        em.emit("}")
