"""The MLIR emitter: one verified SSA function (with layouts) → one textual MLIR module.

See the package docstring for the lowering design. This module walks the SSA like the CUDA backend
does; the per-thread index arithmetic of the layouts (which thread holds which element) is rendered
from the values' linear layouts by ir/indexing.py and emitted once, at the top of the kernel,
because it depends only on the thread id (registers are unrolled: their part is a constant).
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from ... import __version__
from ...errors import CompilationError
from ...ir.indexing import REG, coordinate_exprs, offset_expr, owner_masks, register_expr, thread_bits_expr
from ...ir.layout import permuted_registers, to_linear
from ...ir.linear import LANE, WARP, LinearLayout
from ...ir.ops import EVICTION_POLICIES, OPS, REDUCE_KINDS, cache_hint, ptx_hint, ptx_l2_policy
from ...ir.printer import Printer
from ...ir.ssa import Const, Function, Op, Param, Value, use_counts, walk
from ...ir.types import F32, I1, I8, I32, I64, BlockType, PointerType, ScalarType
from ..names import PARAM, c_identifier, comment_text, kernel_symbol
from .arith import bitcast, combine, constant_literal, constant_name, convert, mlir_type

WORKGROUP = "#gpu.address_space<workgroup>"
SYNCSCOPE = {"gpu": ' syncscope("device")', "cta": ' syncscope("block")', "sys": ""}   # NVPTX's names
MAX_WORKGROUP_BYTES = 48 * 1024        # static shared memory per block without an opt-in
_SMEM_SIZE = "\0SMEM\0"                # the buffer's size is known only once the body is emitted

IntExpr = int | str                    # an i32 that is a compile-time int or an SSA name


def _fp8(t) -> ScalarType | None:
    """The fp8 type ``t`` is or points to, else None."""
    t = t.pointee if isinstance(t, PointerType) else t
    return t if isinstance(t, ScalarType) and t.is_fp8 else None


def unsupported(what: str, op: Op) -> CompilationError:
    return CompilationError(f"MLIR backend does not support {what}", op.loc)


class _MLIRIndex:
    """An ``IndexBuilder`` that emits i32 ``arith`` ops on the thread id (in the kernel's prologue,
    memoized); constants stay Python ints until an op needs them."""
    def __init__(self, em: "MLIREmitter"):
        self.em = em

    def const(self, value: int) -> IntExpr:
        return value

    def var(self, name: str) -> IntExpr:
        assert name != REG, "registers are unrolled: their index is a constant"
        return self.em.thread_id()

    def shr(self, x: IntExpr, k: int) -> IntExpr:
        return self.em.imath("shrui", x, k)

    def and_(self, x: IntExpr, mask: int) -> IntExpr:
        return self.em.imath("andi", x, mask)

    def shl(self, x: IntExpr, k: int) -> IntExpr:
        return self.em.imath("shli", x, k)

    def add(self, x: IntExpr, y: IntExpr) -> IntExpr:
        return self.em.iadd(x, y)

    def xor(self, x: IntExpr, y: IntExpr) -> IntExpr:
        return self.em.ibinary("xori", x, y)


class MLIREmitter:
    def __init__(self, fn: Function):
        self.fn = fn
        self.params = {p: "%" + c_identifier(p.name, PARAM) for p in fn.params}
        self.used = {name[1:] for name in self.params.values()}
        self.ssa_names = {v: "v" + n[1:] for v, n in _numbering(fn).items()}
        self.values: dict[Value, str | list[str]] = {}
        self.const_lines: list[str] = []
        self.prologue: list[str] = []
        self.body: list[str] = []
        self.lines = self.body
        self.depth = 0
        self.consts: dict[tuple, str] = {}
        self.memo: dict[tuple, str] = {}
        self.ntemps = 0
        self.smem_bytes = 0
        self.last_line = None
        self.pending_comment: tuple | None = None      # (source position, comment line)
        self.has_loads = any(OPS[op.name].reads_memory for op in walk(fn.body))   # see op_store
        self.uses = use_counts(fn.body)
        self.smem = self.unique("smem")                 # the workgroup buffer's name

    # --- names and lines -------------------------------------------------------------------------

    def unique(self, base: str) -> str:
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return "%" + name

    def emit(self, rhs: str, name: str | None = None) -> str:
        """Define a value: ``%name = rhs``; returns its name."""
        if name is None:
            name = f"t{self.ntemps}"
            self.ntemps += 1
        result = self.unique(name)
        self.line(f"{result} = {rhs}")
        return result

    def line(self, text: str):
        if self.pending_comment is not None and self.lines is self.body:
            (self.last_line, comment), self.pending_comment = self.pending_comment, None
            self.lines.append("  " * self.depth + comment)
        self.lines.append("  " * self.depth + text)

    @contextmanager
    def at_prologue(self):
        """Emit at the top of the kernel: values that depend only on the thread id (and so dominate
        every use, inside loops or not)."""
        saved = self.lines, self.depth
        self.lines, self.depth = self.prologue, 0
        try:
            yield
        finally:
            self.lines, self.depth = saved

    def const(self, value, ty: ScalarType) -> str:
        literal = constant_literal(value, ty)
        key = (literal, mlir_type(ty))
        if key not in self.consts:
            name = self.unique(constant_name(value, ty))
            self.const_lines.append(f"{name} = arith.constant {literal} : {mlir_type(ty)}")
            self.consts[key] = name
        return self.consts[key]

    def index_const(self, value: int) -> str:
        key = (str(value), "index")
        if key not in self.consts:
            name = self.unique(f"c{value}")
            self.const_lines.append(f"{name} = arith.constant {value} : index")
            self.consts[key] = name
        return self.consts[key]

    def memoized(self, key: tuple, make) -> str:
        if key not in self.memo:
            with self.at_prologue():
                self.memo[key] = make()
        return self.memo[key]

    # --- values ------------------------------------------------------------------------------------

    def ref(self, v: Value, r: int = 0) -> str:
        """The name of ``v``'s register ``r`` (a scalar has only register 0)."""
        if isinstance(v, Const):
            return self.const(v.value, v.type)
        if isinstance(v, Param):
            return self.params[v]
        got = self.values[v]
        return got[r] if isinstance(got, list) else got

    def layout_of(self, v: Value) -> LinearLayout:
        return to_linear(v.layout, v.type.shape, self.fn.num_warps)

    def nregs(self, v: Value) -> int:
        return self.layout_of(v).num_regs if isinstance(v.type, BlockType) else 1

    def reg_names(self, v: Value) -> list[str]:
        base = self.ssa_names[v]
        n = self.nregs(v)
        return [base] if n == 1 else [f"{base}_{r}" for r in range(n)]

    def operand_index(self, result: Value, operand: Value, r: int) -> int:
        """Index into ``operand``'s registers of the element that register ``r`` of ``result``
        needs (the layouts agree up to broadcast dimensions, which every thread holds whole)."""
        if operand.type.shape == result.type.shape:
            return r
        lay = self.layout_of(result)
        ones = [n == 1 for n in operand.type.shape]
        regs = lay.register_map(self.layout_of(operand), lambda c: tuple(0 if o else x for x, o in zip(c, ones)))
        return register_expr(lay, regs).evaluate(reg=r)

    def operand(self, result: Value, operand: Value, r: int) -> str:
        if isinstance(operand.type, BlockType):
            return self.ref(operand, self.operand_index(result, operand, r))
        return self.ref(operand)

    # --- i32 index arithmetic on the thread id (emitted once, in the prologue) ---------------------

    def i32(self, x: IntExpr) -> str:
        return self.const(x, I32) if isinstance(x, int) else x

    def imath(self, op: str, a: IntExpr, b: int) -> IntExpr:
        """``a op b`` for a constant ``b``, folded where it is trivial."""
        if isinstance(a, int):
            return {"addi": a + b, "muli": a * b, "shrui": a >> b, "shli": a << b, "andi": a & b}[op]
        if (op in ("addi", "shrui", "shli") and b == 0) or (op == "muli" and b == 1):
            return a
        if op in ("muli", "andi") and b == 0:
            return 0
        return self.memoized((op, a, b), lambda: self.emit(f"arith.{op} {a}, {self.i32(b)} : i32"))

    def ibinary(self, op: str, a: IntExpr, b: IntExpr) -> IntExpr:
        """``a op b`` (``addi`` or ``xori``), folded where an operand is a constant 0 or both are."""
        if isinstance(a, int) and isinstance(b, int):
            return a + b if op == "addi" else a ^ b
        if b == 0 or a == 0:
            return a if b == 0 else b
        return self.memoized((op, a, b), lambda: self.emit(f"arith.{op} {self.i32(a)}, {self.i32(b)} : i32"))

    def iadd(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return self.ibinary("addi", a, b)

    def thread_id(self) -> str:
        def make():
            tid = self.emit("gpu.thread_id x", "tid")
            return self.emit(f"arith.index_cast {tid} : index to i32", "tid_i32")
        return self.memoized(("tid",), make)

    def index(self, expr) -> IntExpr:
        """An index expression of the thread id (registers are constants here)."""
        return expr.build(_MLIRIndex(self))

    def coords(self, v: Value, r: int) -> list[IntExpr]:
        """Logical coordinates of register ``r`` of ``v`` in this thread."""
        return [self.index(e) for e in coordinate_exprs(self.layout_of(v), r)]

    def offset(self, v: Value, r: int) -> IntExpr:
        """The row-major offset in ``v``'s tile of the element register ``r`` holds."""
        return self.index(offset_expr(self.layout_of(v), r))

    def as_index(self, x: IntExpr) -> str:
        if isinstance(x, int):
            return self.index_const(x)
        return self.memoized(("index", x), lambda: self.emit(f"arith.index_cast {x} : i32 to index"))

    # --- workgroup memory -------------------------------------------------------------------------

    def smem_buffer(self, ty: str, count: int, nbytes: int, op: Op) -> str:
        """A typed view of the kernel's one workgroup buffer (reused by every exchange; each exchange
        ends with a barrier, so reuse is safe)."""
        if nbytes > MAX_WORKGROUP_BYTES:
            raise unsupported(f"tiles that need {nbytes} bytes of workgroup memory to exchange data "
                              f"between threads (the static limit is {MAX_WORKGROUP_BYTES} bytes)", op)
        self.smem_bytes = max(self.smem_bytes, nbytes)
        buf_type = f"memref<{_SMEM_SIZE}xi8, {WORKGROUP}>"
        return self.memoized(("smem", ty, count), lambda: self.emit(
            f"memref.view {self.smem}[{self.index_const(0)}][] : {buf_type} to memref<{count}x{ty}, {WORKGROUP}>",
            "buf"))

    def smem_store(self, buf: str, index: IntExpr, value: str, elem, count: int):
        ty, stored = self.to_storage(value, elem)
        self.line(f"memref.store {stored}, {buf}[{self.as_index(index)}] : memref<{count}x{ty}, {WORKGROUP}>")

    def smem_load(self, buf: str, index: IntExpr, elem, count: int) -> str:
        ty = _storage_type(elem)
        loaded = self.emit(f"memref.load {buf}[{self.as_index(index)}] : memref<{count}x{ty}, {WORKGROUP}>")
        return self.from_storage(loaded, elem)

    def to_storage(self, value: str, elem) -> tuple[str, str]:
        """Booleans travel through memory as i8, pointers as i64."""
        if isinstance(elem, PointerType):
            return "i64", self.emit(f"llvm.ptrtoint {value} : !llvm.ptr to i64")
        if elem.is_bool:
            return "i8", self.emit(f"arith.extui {value} : i1 to i8")
        return mlir_type(elem), value

    def from_storage(self, value: str, elem) -> str:
        if isinstance(elem, PointerType):
            return self.emit(f"llvm.inttoptr {value} : i64 to !llvm.ptr")
        if elem.is_bool:
            return self.emit(f"arith.trunci {value} : i8 to i1")
        return value

    # --- ops ---------------------------------------------------------------------------------------

    def source_comment(self, op: Op):
        """Note the op's source line; it is written before the op's first line (ops that only
        rename registers, like ``expand_dims``, write none)."""
        loc = op.loc
        if loc is None:
            return
        where = (loc.file, loc.line)
        self.pending_comment = None if where == self.last_line else \
            (where, f"// {comment_text(os.path.basename(loc.file))}:{loc.line}: {comment_text(loc.source_line.strip())}")

    def region(self, ops: list[Op]):
        for op in ops:
            if OPS[op.name].terminator:
                continue                                   # emitted by the op that owns the region
            self.source_comment(op)
            special = getattr(self, "op_" + op.name, None)
            fp8 = next((t for v in (*op.operands, *op.results) if (t := _fp8(v.type.scalar))), None)
            if fp8 is not None:      # (LLVM's NVPTX target has no fp8 type; arith.truncf would not saturate)
                raise unsupported(f"fp8 values ({fp8}); the CUDA backend does", op)
            if special is not None:
                special(op)
            elif op.name in REDUCE_KINDS:
                self.reduction(op)
            elif OPS[op.name].mlir_fn is not None:
                self.elementwise(op)
            else:
                raise unsupported(f"the '{op.name}' op", op)

    def per_register(self, op: Op, make):
        """Define ``op``'s result register by register: ``make(r, name)`` returns register r's value."""
        res = op.result
        names = self.reg_names(res)
        regs = [make(r, name) for r, name in enumerate(names)]
        self.values[res] = regs if isinstance(res.type, BlockType) else regs[0]

    def elementwise(self, op: Op):
        if isinstance(op.result.type.scalar, PointerType):     # where on pointers: no compute type
            ct = op.result.type.scalar
        else:
            ct = OPS[op.name].compute([v.type for v in op.operands], op.attrs)
        build = OPS[op.name].mlir_fn
        converted: dict[str, str] = {}           # a scalar operand is converted once, not per register

        def make(r, name):
            args = []
            for i, v in enumerate(op.operands):
                x = self.operand(op.result, v, r)
                if not (op.name == "where" and i == 0):
                    if x not in converted:
                        converted[x] = convert(self, x, v.type.scalar, ct)
                    x = converted[x]
                args.append(x)
            if isinstance(ct, PointerType):
                return self.emit(f"arith.select {args[0]}, {args[1]}, {args[2]} : !llvm.ptr", name)
            return build(self, args, ct, name)
        self.per_register(op, make)

    def op_cast(self, op: Op):
        src = op.operands[0].type.scalar
        if isinstance(src, PointerType) or isinstance(op.result.type.scalar, PointerType):
            raise unsupported("casting a pointer", op)
        dst, rounding = op.result.type.scalar, op.attrs.get("rounding")
        self.per_register(op, lambda r, name: convert(self, self.operand(op.result, op.operands[0], r), src, dst, name,
                                                      rounding))

    def op_bitcast(self, op: Op):
        src, dst = op.operands[0].type.scalar, op.result.type.scalar
        self.per_register(op, lambda r, name: bitcast(self, self.operand(op.result, op.operands[0], r), src, dst, name))

    def op_addptr(self, op: Op):
        ptr, off = op.operands
        pointee = mlir_type(ptr.type.scalar.pointee)
        off_ty = off.type.scalar

        def make(r, name):
            index = self.operand(op.result, off, r)
            if not off_ty.is_signed:                       # GEP indices are signed: widen unsigned ones
                index = self.emit(f"arith.extui {index} : {mlir_type(off_ty)} to i64")
                idx_ty = "i64"
            else:
                idx_ty = mlir_type(off_ty)
            base = self.operand(op.result, ptr, r)
            return self.emit(f"llvm.getelementptr {base}[{index}] : (!llvm.ptr, {idx_ty}) -> !llvm.ptr, {pointee}",
                             name)
        self.per_register(op, make)

    def op_load(self, op: Op):
        ptr = op.operands[0]
        elem = ptr.type.scalar.pointee
        ty = mlir_type(elem)
        load = "llvm.load volatile" if op.attrs.get("volatile") else "llvm.load"
        hint = cache_hint(op.attrs)

        def read(p, name=None):
            if hint:
                return self.hinted_load(p, elem, hint, name)
            return self.emit(f"{load} {p} : !llvm.ptr -> {ty}", name)

        def make(r, name):
            p = self.operand(op.result, ptr, r)
            if len(op.operands) == 1:
                return read(p, name)
            mask = self.operand(op.result, op.operands[1], r)
            other = op.operands[2]
            other_value = convert(self, self.operand(op.result, other, r), other.type.scalar, elem)
            result = self.emit(f"scf.if {mask} -> ({ty}) {{", name)
            self.depth += 1
            loaded = read(p)
            self.line(f"scf.yield {loaded} : {ty}")
            self.depth -= 1
            self.line("} else {")
            self.line(f"  scf.yield {other_value} : {ty}")
            self.line("}")
            return result
        self.per_register(op, make)

    def hinted_load(self, p: str, elem, hint: str, name: str | None = None) -> str:
        """One element loaded by ``ld.global`` with the PTX qualifiers of a cache modifier or an
        eviction policy (``_ptx_hint``), as inline PTX (LLVM's loads carry none)."""
        bits, kind = _access_bits(elem)
        qualifiers, setup, operand = _ptx_hint(hint)
        reg = "i16" if bits == 8 else f"i{bits}"            # (bytes travel in 16-bit registers)
        ptx = f"{{ .reg .b64 c; {setup}ld.global{qualifiers}.{kind} $0, [$1]{operand}; }}"
        as_is = not isinstance(elem, PointerType) and bits > 8 and not elem.is_float    # an integer register
        word = self.emit(f'llvm.inline_asm has_side_effects "{ptx}", "={_CONSTRAINTS[bits]},l,~{{memory}}" {p} '
                         f": (!llvm.ptr) -> {reg}", name if as_is else None)
        return word if as_is else _from_bits(self, word, elem, name)

    def hinted_store(self, p: str, v: str, elem, hint: str):
        """``hinted_load``'s store: ``st.global`` with the hint's PTX qualifiers."""
        bits, kind = _access_bits(elem)
        qualifiers, setup, operand = _ptx_hint(hint)
        reg, word = _to_bits(self, v, elem, bits)
        ptx = f"{{ .reg .b64 c; {setup}st.global{qualifiers}.{kind} [$0], $1{operand}; }}"
        self.line(f'llvm.inline_asm has_side_effects "{ptx}", "l,{_CONSTRAINTS[bits]},~{{memory}}" {p}, {word} '
                  f": (!llvm.ptr, {reg}) -> ()")

    def store_owner(self, ptr: Value, r: int) -> str | None:
        """i1: this thread's register ``r`` of ``ptr`` is the one copy of its element that stores
        (the CUDA backend's ``store_owner``: copies of a replicated layout, of a slice's dropped
        dimensions and of a scalar store once per program); None when every copy is the only one."""
        if not isinstance(ptr.type, BlockType):
            return self.memoized(("first thread",), lambda: self.emit(
                f"arith.cmpi eq, {self.thread_id()}, {self.i32(0)} : i32"))
        reg_mask, tid_mask = owner_masks(self.layout_of(ptr))
        if r & reg_mask:
            return self.const(False, I1)               # a copy in another register of this thread stores
        if not tid_mask:
            return None
        copy = self.imath("andi", self.thread_id(), tid_mask)
        return self.memoized(("first copy", copy), lambda: self.emit(f"arith.cmpi eq, {copy}, {self.i32(0)} : i32"))

    def op_store(self, op: Op):
        ptr, value = op.operands[:2]
        elem = ptr.type.scalar.pointee
        ty = mlir_type(elem)
        converted: dict[str, str] = {}
        owned = False       # some copy of an element stores for the others (see store_owner)
        hint = cache_hint(op.attrs)

        def store(p, v):
            if hint:
                self.hinted_store(p, v, elem, hint)
            else:
                self.line(f"llvm.store {v}, {p} : {ty}, !llvm.ptr")

        for r in range(self.nregs(ptr)):
            p = self.ref(ptr, r)
            v = self.operand(ptr, value, r)
            if v not in converted:
                converted[v] = convert(self, v, value.type.scalar, elem)
            v = converted[v]
            conds = [c for c in (self.store_owner(ptr, r),) if c is not None]
            owned = owned or bool(conds)
            if len(op.operands) == 3:
                conds.append(self.operand(ptr, op.operands[2], r))
            if not conds:
                store(p, v)
                continue
            cond = conds[0] if len(conds) == 1 else self.emit(f"arith.andi {conds[0]}, {conds[1]} : i1")
            self.line(f"scf.if {cond} {{")
            self.depth += 1
            store(p, v)
            self.depth -= 1
            self.line("}")
        if self.has_loads and owned:
            self.line("gpu.barrier")   # later loads of any thread see the owning thread's store

    # --- atomics (as the CUDA backend: each element once, by its owner; copies get the old value) ---

    def op_atomic_rmw(self, op: Op):
        self.atomic(op, op.attrs["kind"], op.operands[1:2], op.operands[2] if len(op.operands) == 3 else None)

    def op_atomic_cas(self, op: Op):
        self.atomic(op, "cas", op.operands[1:3], None)

    def atomic(self, op: Op, kind: str, values: list[Value], mask: Value | None):
        ptr, res = op.operands[0], op.result
        elem = res.type.scalar
        ty = mlir_type(elem)
        owned = False
        regs = []
        for r, name in enumerate(self.reg_names(res)):
            p = self.operand(res, ptr, r)
            vals = [self.operand(res, v, r) for v in values]
            conds = [c for c in (self.store_owner(ptr, r),) if c is not None]
            owned = owned or bool(conds)
            if mask is not None:
                conds.append(self.operand(res, mask, r))
            if not conds:
                regs.append(self.atomic_element(kind, elem, op.attrs, p, vals, name))
                continue
            cond = conds[0] if len(conds) == 1 else self.emit(f"arith.andi {conds[0]}, {conds[1]} : i1")
            old = self.emit(f"scf.if {cond} -> ({ty}) {{", name)
            self.depth += 1
            self.line(f"scf.yield {self.atomic_element(kind, elem, op.attrs, p, vals)} : {ty}")
            self.depth -= 1
            self.line("} else {")
            self.line(f"  scf.yield {self.const(0, elem)} : {ty}")
            self.line("}")
            regs.append(old)
        if owned and res in self.uses:           # the owner's old value to every copy
            block = isinstance(res.type, BlockType)
            count = res.type.numel if block else 1
            buf = self.smem_buffer(_storage_type(elem), count, count * _storage_bytes(elem), op)
            index = [self.offset(res, r) if block else 0 for r in range(len(regs))]
            for r, old in enumerate(regs):
                self.line(f"scf.if {self.store_owner(ptr, r)} {{")
                self.depth += 1
                self.smem_store(buf, index[r], old, elem, count)
                self.depth -= 1
                self.line("}")
            self.line("gpu.barrier")
            regs = [self.smem_load(buf, index[r], elem, count) for r in range(len(regs))]
            self.line("gpu.barrier")
        elif owned and self.has_loads:
            self.line("gpu.barrier")   # later loads of any thread see the owning thread's update
        self.values[res] = regs if isinstance(res.type, BlockType) else regs[0]

    def atomic_element(self, kind: str, elem: ScalarType, attrs: dict, p: str, vals: list[str],
                       name: str | None = None) -> str:
        """One atomic as ``llvm.atomicrmw``/``llvm.cmpxchg`` (monotonic, with the scope as a
        syncscope) between the PTX fences its ``sem`` needs: LLVM 19's NVPTX backend drops the
        ordering of atomics (and cannot select ``llvm.fence``), so the ordering is spelled as fences
        (a release fence before, an acquire fence after), which the PTX memory model defines."""
        sem, scope = attrs["sem"], SYNCSCOPE[attrs["scope"]]
        if sem in ("release", "acq_rel"):
            self.ptx_fence(attrs["scope"])
        ty = mlir_type(elem)
        if kind == "cas":
            ity = f"i{elem.bits}"
            cmp, val = (self.emit(f"arith.bitcast {v} : {ty} to {ity}") if elem.is_float else v for v in vals)
            pair = self.emit(f"llvm.cmpxchg {p}, {cmp}, {val}{scope} monotonic monotonic : !llvm.ptr, {ity}")
            old = self.emit(f"llvm.extractvalue {pair}[0] : !llvm.struct<({ity}, i1)>",
                            None if elem.is_float else name)
            if elem.is_float:
                old = self.emit(f"arith.bitcast {old} : {ity} to {ty}", name)
        elif elem.is_float and kind in ("max", "min"):
            # Triton's float max/min: signed max (min) of the bits when the sign bit is clear,
            # unsigned min (max) when it is set (backends/cuda/atomics.py)
            ity = f"i{elem.bits}"
            bits = self.emit(f"arith.bitcast {vals[0]} : {ty} to {ity}")
            neg = self.emit(f"arith.cmpi slt, {bits}, {self.const(0, I32 if elem.bits == 32 else I64)} : {ity}")
            pos_op, neg_op = ("max", "umin") if kind == "max" else ("min", "umax")
            got = self.emit(f"scf.if {neg} -> ({ity}) {{")
            for i, rmw in enumerate((neg_op, pos_op)):
                self.depth += 1
                one = self.emit(f"llvm.atomicrmw {rmw} {p}, {bits}{scope} monotonic : !llvm.ptr, {ity}")
                self.line(f"scf.yield {one} : {ity}")
                self.depth -= 1
                self.line("} else {" if i == 0 else "}")
            old = self.emit(f"arith.bitcast {got} : {ity} to {ty}", name)
        else:
            op = {"add": "fadd" if elem.is_float else "add", "and": "_and", "or": "_or", "xor": "_xor",
                  "xchg": "xchg", "max": "max" if elem.is_signed else "umax",
                  "min": "min" if elem.is_signed else "umin"}[kind]
            old = self.emit(f"llvm.atomicrmw {op} {p}, {vals[0]}{scope} monotonic : !llvm.ptr, {ty}", name)
        if sem in ("acquire", "acq_rel"):
            self.ptx_fence(attrs["scope"])
        return old

    def ptx_fence(self, scope: str):
        self.line(f'llvm.inline_asm has_side_effects "fence.acq_rel.{scope};", "~{{memory}}" : () -> ()')

    def op_debug_barrier(self, op: Op):
        self.line("gpu.barrier")

    def op_program_id(self, op: Op):
        self.grid_query(op, "block_id")

    def op_num_programs(self, op: Op):
        self.grid_query(op, "grid_dim")

    def grid_query(self, op: Op, what: str):
        axis = "xyz"[op.attrs["axis"]]
        index = self.emit(f"gpu.{what} {axis}")
        self.values[op.result] = self.emit(f"arith.index_cast {index} : index to i32", self.ssa_names[op.result])

    def op_arange(self, op: Op):
        start = op.attrs["start"]

        def make(r, name):
            (coord,) = self.coords(op.result, r)
            if isinstance(coord, int):
                return self.const(coord + start, I32)
            if start == 0:
                return coord
            return self.emit(f"arith.addi {coord}, {self.i32(start)} : i32", name)
        self.per_register(op, make)

    def op_zeros(self, op: Op):
        zero = self.const(0, op.result.type.scalar)
        self.per_register(op, lambda r, name: zero)

    def op_full(self, op: Op):
        v = op.operands[0]
        filled = convert(self, self.ref(v), v.type, op.result.type.scalar)
        self.per_register(op, lambda r, name: filled)

    def op_empty(self, op: Op):
        raise unsupported("tl.empty", op)

    def op_expand_dims(self, op: Op):
        self.per_register(op, lambda r, name: self.ref(op.operands[0], r))

    def op_broadcast(self, op: Op):
        self.per_register(op, lambda r, name: self.operand(op.result, op.operands[0], r))

    def op_trans(self, op: Op):
        res, src = op.result, op.operands[0]
        regs = permuted_registers(res.layout, res.type.shape, src.layout, src.type.shape, tuple(op.attrs["dims"]),
                                  self.fn.num_warps)
        self.per_register(op, lambda r, name: self.ref(src, regs[r]))

    def op_convert_layout(self, op: Op):
        src, res = op.operands[0], op.result
        elem = res.type.scalar
        numel = res.type.numel
        ty = _storage_type(elem)
        buf = self.smem_buffer(ty, numel, numel * _storage_bytes(elem), op)
        for r in range(self.nregs(src)):
            self.smem_store(buf, self.offset(src, r), self.ref(src, r), elem, numel)
        self.line("gpu.barrier")
        regs = [self.smem_load(buf, self.offset(res, r), elem, numel) for r in range(self.nregs(res))]
        self.line("gpu.barrier")
        self.values[res] = regs

    def region_values(self, values: list[Value], prefix: str = "") -> tuple[list[str], list[str]]:
        """Fresh register names for ``values`` (block values get one per register, bound as the
        values' registers) and their MLIR types, flattened."""
        names, types = [], []
        for v in values:
            ty = mlir_type(v.type.scalar)
            regs = [self.unique(prefix + n) for n in self.reg_names(v)]
            names += regs
            types += [ty] * len(regs)
            self.values[v] = regs if isinstance(v.type, BlockType) else regs[0]
        return names, types

    def forwarded(self, targets: list[Value], values: list[Value]) -> list[str]:
        """The registers of ``values``, each read in the layout of the matching target."""
        return [self.operand(t, v, r) for t, v in zip(targets, values) for r in range(self.nregs(t))]

    def terminate(self, keyword: str, names: list[str], types: list[str]):
        self.line(f"{keyword} {', '.join(names)} : {', '.join(types)}" if names else keyword)

    def op_for(self, op: Op):
        body = op.regions[0]
        start, stop, step, *inits = op.operands
        index, args = body.args[0], body.args[1:]
        if index.type != I32:
            raise unsupported(f"a loop with an {index.type} index (int64 bounds or step); the CUDA backend does", op)
        init_names = self.forwarded(op.results, inits)
        results, types = self.region_values(op.results)
        arg_names, _ = self.region_values(args)
        iter_args = [f"{a} = {i}" for a, i in zip(arg_names, init_names)]
        if isinstance(step, Const) and step.value > 0:
            iv = self.unique(self.ssa_names[index])
            bounds = f"{iv} = {self.ref(start)} to {self.ref(stop)} step {self.ref(step)}"
            iv_type = "i32"
        else:
            iv = None
            k = self.unique(self.ssa_names[index] + "_k")
            bounds = f"{k} = {self.index_const_i64(0)} to {self.trip_count(start, stop, step)} " \
                     f"step {self.index_const_i64(1)}"
            iv_type = "i64"
        head = f"{', '.join(results)} = " if results else ""
        head += f"scf.for {bounds}"
        if results:
            head += f" iter_args({', '.join(iter_args)}) -> ({', '.join(types)})"
        unroll = op.attrs.get("loop_unroll_factor")
        self.line(head + f" : {iv_type} {{")
        self.depth += 1
        if iv is None:              # the index from the iteration count: start + k * step (wrapping)
            k32 = self.emit(f"arith.trunci {k} : i64 to i32")
            scaled = self.emit(f"arith.muli {k32}, {self.ref(step)} : i32")
            iv = self.emit(f"arith.addi {self.ref(start)}, {scaled} : i32", self.ssa_names[index])
        self.values[index] = iv
        self.region(body.ops)
        self.terminate("scf.yield", self.forwarded(op.results, body.ops[-1].operands), types)
        self.depth -= 1
        self.line("}" + (f" {{loop_unroll_factor = {max(1, int(unroll))} : i32}}" if unroll is not None else ""))

    def index_const_i64(self, value: int) -> str:
        return self.const(value, I64)

    def trip_count(self, start: Value, stop: Value, step: Value) -> str:
        """How many times ``for i in range(start, stop, step)`` runs, as i64, for a step of any sign
        (zero: none), computed without overflow."""
        a, b, s = (self.emit(f"arith.extsi {self.ref(v)} : i32 to i64") for v in (start, stop, step))
        zero, one = self.const(0, I64), self.const(1, I64)
        up = self.emit(f"arith.cmpi sgt, {s}, {zero} : i64")
        span = self.emit(f"arith.subi {b}, {a} : i64")
        back = self.emit(f"arith.subi {a}, {b} : i64")
        neg_s = self.emit(f"arith.subi {zero}, {s} : i64")
        dist = self.emit(f"arith.select {up}, {span}, {back} : i64")
        size = self.emit(f"arith.select {up}, {s}, {neg_s} : i64")
        dist = self.emit(f"arith.maxsi {dist}, {zero} : i64")
        size_nz = self.emit(f"arith.maxsi {size}, {one} : i64")
        count = self.emit(f"arith.ceildivsi {dist}, {size_nz} : i64")
        moves = self.emit(f"arith.cmpi ne, {s}, {zero} : i64")
        return self.emit(f"arith.select {moves}, {count}, {zero} : i64")

    def op_if(self, op: Op):
        then, orelse = op.regions
        results, types = self.region_values(op.results)
        head = f"{', '.join(results)} = " if results else ""
        head += f"scf.if {self.ref(op.operands[0])}"
        if results:
            head += f" -> ({', '.join(types)})"
        self.line(head + " {")
        for i, region in enumerate((then, orelse)):
            if i:
                self.line("} else {")
            self.depth += 1
            self.region(region.ops)
            if results:
                self.terminate("scf.yield", self.forwarded(op.results, region.ops[-1].operands), types)
            self.depth -= 1
        self.line("}")

    def op_while(self, op: Op):
        """scf.while: the before region's arguments carry the loop's state; ``condition`` passes
        the values that become the after region's arguments and, at the end, the results."""
        before, after = op.regions
        init_names = self.forwarded(before.args, op.operands)
        arg_names, arg_types = self.region_values(before.args)
        results, types = self.region_values(op.results)
        head = f"{', '.join(results)} = " if results else ""
        head += "scf.while (" + ", ".join(f"{a} = {i}" for a, i in zip(arg_names, init_names)) + ")"
        head += f" : ({', '.join(arg_types)}) -> ({', '.join(types)}) {{"
        self.line(head)
        self.depth += 1
        self.region(before.ops)
        cond, *passed = before.ops[-1].operands
        names = self.forwarded(op.results, passed)
        self.line(f"scf.condition({self.ref(cond)})" + (f" {', '.join(names)} : {', '.join(types)}" if names else ""))
        self.depth -= 1
        self.line("} do {")
        after_names, after_types = self.region_values(after.args)
        if after_names:
            self.line("^bb0(" + ", ".join(f"{n}: {t}" for n, t in zip(after_names, after_types)) + "):")
        self.depth += 1
        self.region(after.ops)
        self.terminate("scf.yield", self.forwarded(before.args, after.ops[-1].operands), arg_types)
        self.depth -= 1
        self.line("}")

    # --- reductions (as the CUDA backend: registers, then lanes, then warps) -----------------------

    def reduction(self, op: Op):
        """As the CUDA backend: the registers, lanes and warps whose bases move along the reduced
        dimensions are combined (copies are left out, so nothing counts twice)."""
        kind, src, res = op.name, op.operands[0], op.result
        axis = op.attrs["axis"]
        ty = res.type.scalar
        lay = self.layout_of(src)
        axes = list(range(lay.rank)) if axis is None else [axis]
        block = isinstance(res.type, BlockType)
        n_res = self.nregs(res)
        acc: list[str | None] = [None] * n_res
        # 1. within the thread: registers that differ only along the reduced axes
        q_of_s = None
        if block:
            q_of_s = register_expr(lay, lay.register_map(self.layout_of(res), lambda c: c[:axis] + c[axis + 1:]))
        copies = lay.free_masks()["register"]
        for s in range(self.nregs(src)):
            if s & copies:
                continue
            q = q_of_s.evaluate(reg=s) if q_of_s is not None else 0
            value = convert(self, self.ref(src, s), src.type.scalar, ty)
            acc[q] = value if acc[q] is None else combine(self, kind, acc[q], value, ty)
        # 2. across the lanes of a warp (butterfly)
        masks = sorted((1 << b for b in lay.bits_along(LANE, axes)), reverse=True)
        for q in range(n_res):
            for mask in masks:
                acc[q] = combine(self, kind, acc[q], self.shuffle_xor(acc[q], ty, mask), ty)
        # 3. across warps, through workgroup memory
        warp_bits = lay.bits_along(WARP, axes)
        if warp_bits:
            warps = 1 << len(warp_bits)
            q_count = res.type.numel if block else 1
            count = warps * q_count
            buf = self.smem_buffer(_storage_type(ty), count, count * max(4, _storage_bytes(ty)), op)
            warp_index = self.index(thread_bits_expr(lay, [(WARP, b) for b in warp_bits]))
            lin = [self.offset(res, q) if block else 0 for q in range(n_res)]
            for q in range(n_res):
                self.smem_store(buf, self.iadd(self.imath("muli", warp_index, q_count), lin[q]), acc[q], ty, count)
            self.line("gpu.barrier")
            for q in range(n_res):
                acc[q] = self.smem_load(buf, lin[q], ty, count)
                for w in range(1, warps):
                    other = self.smem_load(buf, self.iadd(lin[q], w * q_count), ty, count)
                    acc[q] = combine(self, kind, acc[q], other, ty)
            self.line("gpu.barrier")
        self.values[res] = acc if block else acc[0]

    def shuffle_xor(self, value: str, ty: ScalarType, mask: int) -> str:
        """``gpu.shuffle xor`` takes 32- and 64-bit values; narrower ones travel widened."""
        wide = ty
        if ty.bits < 32:
            wide = F32 if ty.is_float else I32
        x = convert(self, value, ty, wide) if wide != ty else value
        width = self.i32(32)
        shuffled = self.unique(f"t{self.ntemps}")
        self.ntemps += 1
        valid = self.unique(f"t{self.ntemps}")
        self.ntemps += 1
        self.line(f"{shuffled}, {valid} = gpu.shuffle xor {x}, {self.i32(mask)}, {width} : {mlir_type(wide)}")
        if wide == ty:
            return shuffled
        if ty.is_float:
            return self.emit(f"arith.truncf {shuffled} : f32 to {mlir_type(ty)}")
        if ty.is_bool:
            return self.emit(f"arith.cmpi ne, {shuffled}, {self.i32(0)} : i32")
        return self.emit(f"arith.trunci {shuffled} : i32 to {mlir_type(ty)}")

    # --- the module --------------------------------------------------------------------------------

    def generate(self) -> str:
        self.region(self.fn.body.ops)
        fn = self.fn
        threads = fn.num_warps * 32
        params = ", ".join(f"{self.params[p]}: {mlir_type(p.type)}" for p in fn.params)
        workgroup = ""
        if self.smem_bytes:
            workgroup = f" workgroup({self.smem} : memref<{self.smem_bytes}xi8, {WORKGROUP}>)"
        src = f"{os.path.basename(fn.loc.file)}:{fn.loc.line}" if fn.loc else "?"
        header = [f"// Generated by mytriton {__version__} (MLIR backend) from {comment_text(src)}, "
                  f"kernel {comment_text(fn.name)}"]
        if fn.constexprs:
            header.append("// constexprs: " + comment_text(", ".join(f"{k}={v}" for k, v in fn.constexprs.items())))
        header.append(f"// launch: grid = the programs, block = ({threads}, 1, 1) threads (num_warps={fn.num_warps}), "
                      f"{self.smem_bytes} bytes of static workgroup memory")
        inner = self.const_lines + self.prologue + self.body + ["gpu.return"]
        text = "\n".join(header + [
            "module attributes {gpu.container_module} {",
            f"  gpu.module @{kernel_symbol(fn.name)} {{",
            f"    gpu.func @{kernel_symbol(fn.name)}({params}){workgroup} kernel attributes "
            f"{{known_block_size = array<i32: {threads}, 1, 1>}} {{",
            *("      " + line for line in inner),
            "    }",
            "  }",
            "}",
        ]) + "\n"
        return text.replace(_SMEM_SIZE, str(self.smem_bytes))


_CONSTRAINTS = {8: "h", 16: "h", 32: "r", 64: "l"}       # inline PTX register classes by width


def _ptx_hint(hint: str) -> tuple[str, str, str]:
    """A hinted access's PTX (ir/ops.ptx_hint): its qualifiers, the instructions before it and the
    operand after its others (an eviction policy's L2 policy, made into the register ``c``)."""
    if hint in EVICTION_POLICIES:
        return ptx_hint(hint), ptx_l2_policy(hint, "c") + " ", ", c"
    return ptx_hint(hint), "", ""


def _access_bits(elem) -> tuple[int, str]:
    """The width of one element in memory and its PTX access type (bools are bytes)."""
    bits = 64 if isinstance(elem, PointerType) else 8 if elem.is_bool else elem.bits
    return bits, "u8" if bits == 8 else f"b{bits}"


def _from_bits(e, word: str, elem, name: str | None) -> str:
    """The element a hinted load read into an integer register ``word`` where it is not that
    register's type: a pointer, a float, a byte (read into 16 bits) or a bool."""
    if isinstance(elem, PointerType):
        return e.emit(f"llvm.inttoptr {word} : i64 to !llvm.ptr", name)
    if _access_bits(elem)[0] == 8:
        word = e.emit(f"arith.trunci {word} : i16 to i8", None if elem.is_bool or elem.is_float else name)
        if elem.is_bool:
            return e.emit(f"arith.cmpi ne, {word}, {e.const(0, I8)} : i8", name)
        return e.emit(f"arith.bitcast {word} : i8 to {mlir_type(elem)}", name) if elem.is_float else word
    return e.emit(f"arith.bitcast {word} : i{elem.bits} to {mlir_type(elem)}", name)


def _to_bits(e, v: str, elem, bits: int) -> tuple[str, str]:
    """``_from_bits`` backwards: the stored element as an integer register (type, name)."""
    if isinstance(elem, PointerType):
        return "i64", e.emit(f"llvm.ptrtoint {v} : !llvm.ptr to i64")
    if elem.is_bool:
        v = e.emit(f"arith.extui {v} : i1 to i8")
    elif elem.is_float:
        v = e.emit(f"arith.bitcast {v} : {mlir_type(elem)} to i{bits}")
    if bits == 8:
        return "i16", e.emit(f"arith.extui {v} : i8 to i16")
    return f"i{bits}", v


def _storage_type(elem) -> str:
    if isinstance(elem, PointerType):
        return "i64"
    return "i8" if elem.is_bool else mlir_type(elem)


def _storage_bytes(elem) -> int:
    if isinstance(elem, PointerType):
        return 8
    return max(1, elem.bits // 8)


def _numbering(fn: Function) -> dict[Value, str]:
    printer = Printer()
    printer.number(fn.body)
    return printer.names
