"""Builds expression-tree nodes for the frontend, stamping each with the current source location
and scope, and typing it on the spot so a type error points at the line that caused it."""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Loc
from ..ir.tree import Node, RegionStmt, Scope
from ..ir.types import BlockType, ScalarType, Type
from ..passes.typeinfer import type_node

# Triton's TRITON_MAX_TENSOR_NUMEL: no block value may have more elements
MAX_TENSOR_NUMEL = 2 ** 20


def normalize_constant(value, ty: ScalarType):
    """The Python value of a constant of type ``ty`` (ints wrap to the type's width, as C does)."""
    if ty.is_bool:
        return bool(value)
    if ty.is_float:
        return float(value)
    v = int(value)
    bits = ty.bits
    v &= (1 << bits) - 1
    if ty.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


_CONSTANT_TYPES = (bool, int, float, str, bytes, type(None), tuple)


class DeviceFunctionTrace:
    """A @jit(noinline=True) helper traced on its own: its root scope, run-time parameters (name,
    type), the nodes it returns, how its caller sees them (``shape``: None for nothing, "one" for
    a value, "tuple" for a tuple) and where it is defined (passes/lower.py makes it a Function)."""

    def __init__(self, name: str, root: Scope, params: list, returns: list, shape: str | None, loc: Loc | None):
        self.name, self.root, self.params, self.returns, self.shape, self.loc = name, root, params, returns, shape, loc


class Builder:
    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.root = Scope()
        self.scope = self.root
        self.loc: Loc | None = None
        self.globals_read: dict[tuple[int, str], tuple[dict, str, object]] = {}
        self.steps = 0                  # AST nodes the frontend evaluated (bounded by codegen)
        self.loop_nesting = 0           # run-time loops open around the current statement
        self.debug = False              # @jit(debug=True): tl.device_assert is checked
        self.num_warps = 4              # the specialization's (tl.extra.cuda.num_warps())
        # @jit(noinline=True) helpers traced as device functions (None: inlined, as the
        # interpreter and the MLIR backend have them): symbol -> DeviceFunctionTrace, and the
        # symbol of each (helper, argument types and constexpr values) traced so far
        self.device_functions: dict | None = None
        self.device_function_keys: dict = {}
        # descriptors made in the kernel whose tensor maps the runtime encodes at launch
        # (frontend/launch_maps.py): whether this build declares them, whether its target copies
        # through them (TMA), and the recipes (and parameter nodes) made so far
        self.hoist_tensor_maps = False
        self.tma = False
        self.param_names: tuple = ()
        self.made_tensor_maps: dict = {}
        self.made_tensor_map_nodes: dict = {}

    def read_global(self, namespace: dict, name: str):
        """``namespace[name]``, remembered when it is a constant the compiled code bakes in, so
        that a cached compile can be checked against the module's current value."""
        value = namespace[name]
        if isinstance(value, _CONSTANT_TYPES):
            self.globals_read[(id(namespace), name)] = (namespace, name, value)
        return value

    def const(self, value, ty: ScalarType) -> Node:
        return Node("const", (), {"value": normalize_constant(value, ty)}, self.loc, None, ty)

    def param(self, name: str, ty: Type, align: int) -> Node:
        return Node("param", (), {"name": name, "align": align}, self.loc, None, ty)

    def leaf(self, op: str, ty: Type, scope: Scope, **attrs) -> Node:
        return Node(op, (), attrs, self.loc, scope, ty)

    def make(self, op: str, operands: list[Node], attrs: dict) -> Node:
        node = type_node(Node(op, tuple(operands), attrs, self.loc, self.scope))
        if isinstance(node.type, BlockType) and node.type.numel > MAX_TENSOR_NUMEL:
            raise ValueError(f"numel ({node.type.numel}) exceeds triton maximum tensor numel "
                             f"({MAX_TENSOR_NUMEL}): the block {node.type} is too large")
        if not OPS[op].pure:
            self.scope.statements.append(node)
        return node

    def multi(self, op: str, operands: list[Node], attrs: dict) -> tuple[Node, ...]:
        """An op with several results (a reduce or scan of several blocks): recorded as a statement
        whose results are leaves, typed by the op's rule (which returns one type per result)."""
        types = OPS[op].type_rule([n.type for n in operands], attrs)
        st = RegionStmt(op, tuple(operands), (), (), (), loc=self.loc, attrs=attrs)
        st.results = tuple(self.leaf("region_result", t, self.scope, index=i) for i, t in enumerate(types))
        self.scope.statements.append(st)
        return st.results
