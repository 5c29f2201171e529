"""``mytriton.compile``: one kernel specialization through the whole pipeline.

    source ─frontend→ expression tree ─types→ typed SSA ─verify→ optimize (fold, CSE, LICM, DCE;
    verified after each) ─layouts→ CUDA C++ (Jinja) ─NVRTC→ PTX / cubin

Each stage's output is kept in ``CompiledKernel.asm``: "ssa" (optimized SSA, the seeds' format),
"ssa_layout" (the same with each block value's layout), then for ``backend="cuda"`` "cu", "ptx",
"cubin", and for ``backend="mlir"`` "mlir" (textual MLIR; its "ptx" needs the MLIR tools).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .errors import CompilationError
from .frontend.builder import Builder
from .frontend.codegen import trace
from .frontend.descriptors import parse as descriptor_type, uses_tma
from .frontend import launch_maps, tuples as tuple_params
from .frontend.jit import JITFunction
from .ir.ops import OpTypeError
from .ir.printer import print_function
from .ir.ssa import Function, Param
from .ir.types import TMAP, parse_type
from .ir.verifier import verify
from .passes.layout import assign_layouts, verify_layouts
from .passes.lower import lower
from .passes.pipeline import optimize
from .passes.typeinfer import check_tree


class _Asm(dict):
    """The stages' text; PTX and cubin are produced by NVRTC on first access of either, both by
    one compile. ``settle``: (kernel symbol, threads, shared bytes) of a kernel whose launch bounds
    are chosen from ptxas's register report (``backends/cuda/occupancy.py``): the first read of its
    ``cu``, ``ptx`` or ``cubin`` settles them, so that the source read is the one the PTX and cubin
    come from. ``ptxas``: the options every compile of the source passes to ptxas."""

    def __init__(self, source_name: str, target: str, settle: tuple[str, int, int] | None = None,
                 ptxas: tuple[str, ...] = (), **stages):
        super().__init__(**stages)
        self._source_name, self._target, self._settle, self._ptxas = source_name, target, settle, ptxas

    def __getitem__(self, key):
        if self._settle is not None and key in ("cu", "ptx", "cubin"):
            from .backends.cuda.occupancy import settle
            (symbol, threads, shared), self._settle = self._settle, None
            try:
                cu, program = settle(dict.__getitem__(self, "cu"), self._source_name, self._target, symbol, threads, shared,
                                     self._ptxas)
            except Exception:
                if key == "cu":       # (what was generated, for whoever reads why it failed)
                    return dict.__getitem__(self, "cu")
                raise
            self["cu"], self["ptx"], self["cubin"] = cu, program.ptx, program.cubin
        return super().__getitem__(key)

    def __missing__(self, key):
        from .backends.cuda import nvrtc
        if "mlir" in self:
            if key != "ptx":
                raise KeyError(key)
            from .backends.mlir import tools
            self[key] = tools.to_ptx(self["mlir"], self._target)
            return self[key]
        if key not in ("ptx", "cubin"):
            raise KeyError(key)
        program = nvrtc.compile_program(self["cu"], self._source_name, self._target, ptxas_options=self._ptxas)
        self["ptx"], self["cubin"] = program.ptx, program.cubin
        return self[key]


@dataclass
class CompiledKernel:
    asm: dict
    metadata: dict = field(default_factory=dict)
    function: Function | None = None


def _params(fn: JITFunction, signature, constexprs: dict, tma: bool = False):
    if isinstance(signature, str):
        signature = [s.strip() for s in signature.split(",")]
    runtime = [a for a in fn.arg_names if a not in constexprs]
    if isinstance(signature, (list, tuple)):
        if len(signature) != len(runtime):
            raise CompilationError(f"signature has {len(signature)} types for the {len(runtime)} run-time "
                                   f"parameters {', '.join(runtime)}", kernel=fn.__name__)
        signature = dict(zip(runtime, signature))
    signature = dict(signature or {})
    for name, text in list(signature.items()):     # 'i32:1': the value 1, compiled in as the JIT does
        if isinstance(text, str) and name not in constexprs and _promised_one(text):
            constexprs[name] = 1
            del signature[name]
    for name in fn.constexpr_names:
        if name not in constexprs and fn.signature.parameters[name].default is fn.signature.parameters[name].empty:
            raise CompilationError(f"missing value for constexpr parameter '{name}'", kernel=fn.__name__)
    unknown = [k for k in list(signature) + list(constexprs) if k not in fn.arg_names]
    if unknown:
        raise CompilationError(f"unknown parameter(s) {', '.join(unknown)}; {fn.__name__} takes "
                               f"{', '.join(fn.arg_names)}", kernel=fn.__name__)
    params, descriptors, tuples = [], {}, {}
    for name in fn.arg_names:
        if name in constexprs or name in fn.constexpr_names:
            continue
        if name not in signature:
            raise CompilationError(f"no type given for parameter '{name}'", kernel=fn.__name__)
        try:
            if tuple_params.is_tuple_type(signature[name]):    # a tuple: its leaves (frontend/tuples.py)
                constants = {}
                for leaf, text in tuple_params.leaves(name, signature[name]):
                    if leaf in fn.arg_names:
                        raise ValueError(f"its leaf '{leaf}' has the name of another parameter")
                    if text is None or _promised_one(text):
                        constants[leaf] = None if text is None else 1
                    elif descriptor_type(text) is not None:
                        raise ValueError("a tensor descriptor inside a tuple is not supported")
                    else:
                        params.append((leaf, *parse_type(text)))
                tuples[name] = (signature[name], constants)
                continue
            desc = descriptor_type(signature[name])
            if desc is not None:                 # a tensor descriptor: its leaves (frontend/descriptors.py)
                if tma and desc.tma_allowed():
                    desc = replace(desc, tma=True)
                descriptors[name] = desc
                for leaf, text in desc.leaves(name):
                    if leaf in fn.arg_names:
                        raise ValueError(f"its leaf '{leaf}' has the name of another parameter")
                    params.append((leaf, TMAP, 0) if text == "tmap" else (leaf, *parse_type(text)))
                continue
            ty, align = parse_type(signature[name]) if isinstance(signature[name], str) else (signature[name], 0)
        except ValueError as e:
            raise CompilationError(f"parameter '{name}': {e}", kernel=fn.__name__) from None
        params.append((name, ty, align))
    values = dict(constexprs)
    for name in fn.constexpr_names:
        if name not in values:
            values[name] = fn.signature.parameters[name].default
    return params, values, descriptors, tuples


def _promised_one(text: str) -> bool:
    from .runtime.driver import parse_type as parse_type_string
    try:
        return parse_type_string(text).one
    except ValueError:
        return False                 # (the error comes with the parameter's name below)


def build_ssa(fn: JITFunction, signature, constexprs: dict | None = None, num_warps: int = 4,
              optimized: bool = True, num_stages: int | None = None, tma: bool = False,
              device_functions: bool = False, hoist_tensor_maps: bool | None = None) -> Function:
    """Frontend and middle end: the verified (and, unless ``optimized=False``, optimized) SSA of
    one specialization; ``tma``: tensor descriptors whose blocks TMA can copy use it;
    ``device_functions``: ``@jit(noinline=True)`` helpers that take and return scalars become
    device functions of their own (``Function.device_functions``), not inlined;
    ``hoist_tensor_maps`` (default: ``tma``): descriptors made in the kernel from its parameters
    get tensor maps the runtime encodes at launch (``frontend/launch_maps.py``; their recipes in
    ``Function.made_tensor_maps``), used where ``tma``."""
    constexprs = dict(constexprs or {})
    fn.check_parameter_names()
    params, values, descriptors, tuples = _params(fn, signature, constexprs, tma)
    builder = Builder(fn.__name__)
    builder.debug = bool(fn.options.get("debug"))
    builder.num_warps = num_warps
    builder.tma = tma
    builder.hoist_tensor_maps = tma if hoist_tensor_maps is None else hoist_tensor_maps
    builder.param_names = tuple(n for n, _, _ in params)
    if device_functions:
        builder.device_functions = {}
    root = trace(fn, params, values, builder, descriptors, tuples)
    params = params + launch_maps.params(builder)
    try:
        check_tree(root)
    except OpTypeError as e:
        raise CompilationError(str(e), kernel=fn.__name__) from None
    ssa_params = [Param(n, t, a) for n, t, a in params]
    func = lower(root, fn.__name__, ssa_params, values, num_warps,
                 loc=fn.source_info.loc(fn.parse()))
    func.globals_read = tuple(builder.globals_read.values())
    func.made_tensor_maps = list(builder.made_tensor_maps.values())
    func.num_stages = num_stages
    for symbol, t in (builder.device_functions or {}).items():
        callee = lower(t.root, t.name, [Param(n, ty) for n, ty in t.params], {}, num_warps, loc=t.loc, returns=t.returns)
        verify(callee)
        func.device_functions[symbol] = optimize(callee) if optimized else callee
    verify(func)
    return optimize(func) if optimized else func


def compile(fn: JITFunction, signature=None, constexprs: dict | None = None, target: str = "sm_90",
            num_warps: int = 4, backend: str = "cuda", num_stages: int | None = None,
            hoist_tensor_maps: bool | None = None) -> CompiledKernel:
    """Compile one specialization of ``fn`` ahead of time. ``signature`` maps every run-time
    parameter to a Triton type string (``"*fp32:16"``, ``"i32"``); ``constexprs`` gives the values
    of the ``tl.constexpr`` parameters. ``hoist_tensor_maps``: whether descriptors made in the
    kernel get tensor-map parameters the runtime encodes at launch (``metadata["made_tensor_maps"]``)
    -- by default where the target copies through them (sm_90a); True for every target of a build
    that has sm_90a among others, so that all its images take the same parameters. Works without a
    GPU."""
    try:
        return _compile(fn, signature, constexprs, target, num_warps, backend, num_stages, hoist_tensor_maps)
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__   # (a builtin's refusal, frameless)


def _compile(fn, signature, constexprs, target, num_warps, backend, num_stages, hoist_tensor_maps=None):
    from .frontend.autotune import unwrap
    fn = unwrap(fn)                  # (an @autotune / @heuristics kernel: the specialization asked for)
    if not isinstance(fn, JITFunction):
        raise CompilationError(f"compile() expects a @mytriton.jit function, got {fn!r}")
    if type(num_warps) is not int or num_warps not in (1, 2, 4, 8, 16, 32):
        raise CompilationError(f"num_warps must be a power of 2 from 1 to 32, got {num_warps!r}", kernel=fn.__name__)
    if num_stages is not None and (type(num_stages) is not int or num_stages < 1):
        raise CompilationError(f"num_stages must be a positive int, got {num_stages!r}", kernel=fn.__name__)
    if backend not in ("cuda", "mlir"):
        raise CompilationError(f"unknown backend {backend!r} (available: cuda, mlir)", kernel=fn.__name__)
    from .backends.cuda.codegen import CudaEmitter
    from .backends.names import kernel_symbol
    from .backends.cuda.nvrtc import check_target
    try:
        check_target(target)
    except ValueError as e:
        raise CompilationError(str(e), kernel=fn.__name__) from None
    func = build_ssa(fn, signature, constexprs, num_warps, num_stages=num_stages, tma=uses_tma(target, backend),
                     device_functions=backend == "cuda", hoist_tensor_maps=hoist_tensor_maps)
    ssa_text = print_function(func)
    for f in (*func.device_functions.values(), func):
        assign_layouts(f, target)
        verify_layouts(verify(f))
    stages = {"ssa": ssa_text, "ssa_layout": print_function(func, layouts=True)}
    symbol = kernel_symbol(fn.__name__)       # the extern "C" / gpu.func name the loaders look up
    if backend == "mlir":
        from .backends.mlir import emit_mlir
        stages["mlir"], shared, tensor_maps, settle, ptxas = emit_mlir(func), 0, {}, None, ()
        explain = []
    else:
        emitter = CudaEmitter(func, target)
        stages["cu"], shared = emitter.generate()
        tensor_maps = emitter.tensor_maps
        settle = (symbol, emitter.num_threads, shared) if emitter.occupancy_tunable else None
        ptxas = emitter.ptxas_options
        explain = emitter.explain
    # an absolute name: NVRTC writes a relative one into the line info prefixed with the working
    # directory, and a build must give the same bytes wherever it runs
    # NVRTC's messages name the source: the kernel's own name where it is plain ASCII
    source_name = fn.__name__ if fn.__name__.isascii() else symbol
    asm = _Asm(f"/mytriton/{source_name}.cu", target, settle, ptxas, **stages)
    metadata = {
        "name": symbol,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "shared": shared,
        "target": target,
        "ptxas_options": list(ptxas),      # (backends/cuda/codegen.ptxas_options)
        "backend": backend,
        "signature": {p.name: _type_string(p) for p in func.params},
        # tensor maps the host encodes with another box than the descriptor's block, swizzled (TMA
        # copies straight into a dot's ring of shared-memory buffers): {"a__tmap": {"box", "swizzle"}}
        "tensor_maps": tensor_maps,
        # the tensor maps of descriptors made in the kernel, encoded at launch from the arguments
        # (frontend/launch_maps.py: recipes, with their box and swizzle)
        "made_tensor_maps": launch_maps.with_encodings(func.made_tensor_maps, tensor_maps),
        "constexprs": {k: v for k, v in func.constexprs.items()},
        # what computes each tl.dot and how its operands reach it, a line each (backends/cuda/dot.py)
        "explain": list(explain),
    }
    return CompiledKernel(asm, metadata, func)


def _type_string(p: Param) -> str:
    from .ir.types import PointerType
    if p.type == TMAP:
        return "tmap"
    if isinstance(p.type, PointerType):
        return f"*{p.type.pointee.name}" + (f":{p.align}" if p.align else "")
    return p.type.name
