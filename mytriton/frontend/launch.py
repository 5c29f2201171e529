"""``kernel[grid](*args, **constexprs)``: bind the arguments, pick the specialization, compile it
once (per signature, alignment, constexprs and num_warps), and launch it through the runtime — or,
for numpy arrays (or with MYTRITON_INTERPRET=1), run it in the CPU interpreter."""
from __future__ import annotations

import os
import struct
import sys
import types
from dataclasses import replace

from ..errors import CompilationError
from ..ir.ssa import globals_changed
from . import descriptors, tuples
from .codegen import check_constexprs

_LAUNCH_OPTIONS = {"num_warps": 4, "stream": None, "num_stages": None, "num_ctas": None, "maxnreg": None,
                   "launch_cooperative_grid": False}


def make_binder(jit_fn):
    """A function with the kernel's own parameters (and defaults) plus the launch options, that
    returns (run-time args in order, constexpr values, num_warps, stream, num_stages, whether the
    launch is cooperative: Triton's ``launch_cooperative_grid``): Python binds the call,
    so a bad one fails with Python's message naming the kernel and the parameter."""
    params, runtime, constexprs, defaults = [], [], [], {}
    for name, p in jit_fn.signature.parameters.items():
        if p.default is not p.empty:
            defaults[f"_d_{name}"] = p.default
            params.append(f"{name}=_d_{name}")
        else:
            params.append(name)
        (constexprs if name in jit_fn.constexpr_names else runtime).append(name)
    jit_fn.check_parameter_names()
    # a constexpr named like an option (num_stages: tl.constexpr) is that option too: one name, one value
    options = ", ".join(f"{k}={v!r}" for k, v in _LAUNCH_OPTIONS.items() if k not in jit_fn.signature.parameters)
    src = (f"def {jit_fn.__name__}({', '.join(params)}{', ' if params else ''}*, {options}):\n"
           f"    return ({''.join(n + ', ' for n in runtime)}), "
           f"{{{', '.join(f'{n!r}: {n}' for n in constexprs)}}}, num_warps, stream, num_stages, "
           f"launch_cooperative_grid\n")
    namespace = dict(defaults)
    exec(compile(src, f"<arguments of {jit_fn.__name__}>", "exec"), namespace)
    return namespace[jit_fn.__name__], runtime


_driver = None


def _interpret() -> bool:
    """MYTRITON_INTERPRET=1: every launch runs in the CPU interpreter. Read at each launch (a
    program may set it between launches) from os.environ's own table where it has one, which
    costs a dict lookup where ``os.environ.get`` encodes the key first (~0.8 us, measured on this
    project's machine: a tenth of a JIT launch)."""
    data = _ENV_DATA
    if data is None:
        return os.environ.get("MYTRITON_INTERPRET") == "1"
    return data.get(_INTERPRET_KEY) == _ONE


try:     # (os.environ keeps its variables in _data, keyed and valued as encodekey/encodevalue make them)
    _ENV_DATA = os.environ._data
    _INTERPRET_KEY, _ONE = os.environ.encodekey("MYTRITON_INTERPRET"), os.environ.encodevalue("1")
except AttributeError:      # pragma: no cover - another Python's os module
    _ENV_DATA = None


def _runtime():
    global _driver
    if _driver is None:
        from ..runtime import driver
        _driver = driver
    return _driver


_native_tried = False


def _use_native_launcher(driver) -> None:
    """Register the native launch path for the JIT's launches, once, at its first compile for the
    GPU (``runtime/native.cached_library``: built once per machine where a C compiler and the
    Python headers are there). Otherwise, or where a package registered its own first, launches
    keep their pure-Python launchers, and ``driver.native_launcher_status()`` says why."""
    global _native_tried
    if _native_tried:
        return
    _native_tried = True
    if driver.native_launcher_status() == "none registered":
        from ..runtime import native
        path, why = native.cached_library()
        if path is not None:
            driver.use_native_launcher(path)
        else:
            driver.note_native_launcher(why if why.startswith("disabled") else f"not built for the JIT: {why}")


def _is_numpy(x) -> bool:
    """A host array (numpy scalars are scalar arguments, not arrays)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def launch(jit_fn, grid, args, kwargs):
    binder = jit_fn._binder
    if binder is None:
        binder = jit_fn._binder = make_binder(jit_fn)
    bind, names = binder
    runtime, constexprs, num_warps, stream, num_stages, cooperative = bind(*args, **kwargs)
    # the fast path: a launch whose arguments have been seen before, in the same kinds, goes
    # straight to the kernel that launch compiled (see _fast_keys)
    fast = _fast_lookup(jit_fn, runtime, constexprs, num_warps, num_stages)
    if fast is not None and fast[1] is not None:
        kernel = fast[1]
        if not (kernel.globals_read and globals_changed(kernel.globals_read)):
            keep = kernel.jit_params
            grid = _grid(grid, names, runtime, constexprs, num_warps)
            if kernel.descriptor_params:
                runtime = _flatten(names, runtime, kernel.tma_params)
            (kernel.launch_cooperative if cooperative else kernel.launch)(
                grid, runtime if keep is None else [runtime[i] for i in keep], stream=stream)
            return kernel
    check_constexprs(jit_fn, constexprs)       # (before anything hashes or prints a constexpr)
    if _interpret() or any(
            _is_numpy(v.base if descriptors.is_descriptor(v) else v) for v in _leaves(runtime)):
        from ..backends.interpreter import interpret
        return interpret(jit_fn, _grid(grid, names, runtime, constexprs, num_warps), list(zip(names, runtime)),
                         constexprs, num_warps)
    driver = _runtime()
    signature, devices, ones = [], {}, {}
    for name, value in zip(names, runtime):
        if type(value) is tuple:
            # a tuple: each element specialized as an argument of its own would be (frontend/tuples.py)
            signature.append(tuples.signature_of(value, _element_type(jit_fn, name, driver, devices)))
            continue
        if descriptors.is_descriptor(value):
            # a tensor descriptor: its type (element, block shape, padding) is the specialization;
            # its base's device is the launch's (the TensorDescriptor checked its 16-byte alignment)
            try:
                ty, _, device = driver.launch_argument_info(value.base)
            except TypeError as e:
                raise type(e)(f"{jit_fn.__name__}: parameter '{name}': its base: {e}") from None
            devices[name] = device
            signature.append(descriptors.type_of(value, ty).text())
            continue
        if type(value) is int and value == 1 and name not in jit_fn.not_specialized:
            # as Triton does: an integer argument equal to 1 is compiled in as the constant 1 (a
            # stride of 1 makes its accesses contiguous) and is not passed to the kernel (unless
            # do_not_specialize lists it)
            ones[name] = 1
            signature.append("1")
            continue
        if value is None:
            # as Triton does: None is a compile-time value (`if x is not None:` folds)
            ones[name] = None
            signature.append("none")
            continue
        signature.append(_argument_type(jit_fn, name, value, driver, devices))
    # the device the launch runs on (-1: the current context's, for int addresses): its compute
    # capability is the compile target
    device = driver.launch_device(jit_fn.__name__, devices)
    try:      # the constexprs by identity: -0.0 and 0.0 (or 1, 1.0 and True) compare equal but compile differently
        key = (device, *signature, num_warps, type(num_warps), num_stages, type(num_stages),
               *_constexpr_key(constexprs.values()))
        kernel = jit_fn._cache.get(key)
    except TypeError:                          # an unhashable value the key holds as it is (opaque)
        key = (device, *signature, num_warps, type(num_warps), num_stages, type(num_stages), repr(constexprs))
        kernel = jit_fn._cache.get(key)
    if kernel is None or (kernel.globals_read and globals_changed(kernel.globals_read)):
        with jit_fn._lock:                     # (a module constant the kernel baked in changed: recompile)
            kernel = jit_fn._cache.get(key)
            if kernel is None or (kernel.globals_read and globals_changed(kernel.globals_read)):
                # devices of one compute capability share the compiled kernel (it loads per device)
                cc = driver.compute_capability(None if device < 0 else device)
                # as Triton: Hopper's architecture-specific target (wgmma) on compute capability 9.0
                target = "sm_%d%d" % cc + ("a" if cc == (9, 0) else "")
                kernel = jit_fn._cache.get((target, *key[1:]))
                if kernel is None or (kernel.globals_read and globals_changed(kernel.globals_read)):
                    kernel = _compile_for_target(jit_fn, names, signature, constexprs, ones, num_warps,
                                                 num_stages, target, driver)
                    jit_fn._cache[(target, *key[1:])] = kernel
                jit_fn._cache[key] = kernel
    keep = kernel.jit_params
    grid = _grid(grid, names, runtime, constexprs, num_warps)
    if kernel.descriptor_params:               # (run-time descriptors and tuples are passed as their leaves)
        runtime = _flatten(names, runtime, kernel.tma_params)
    (kernel.launch_cooperative if cooperative else kernel.launch)(
        grid, runtime if keep is None else [runtime[i] for i in keep], stream=stream)
    if fast is not None:                       # (only a launch that worked is remembered)
        jit_fn._fast[fast[0]] = kernel
    return kernel


def _constant(leaf_type) -> bool:
    """A tuple element compiled in (None, or an int equal to 1), not passed."""
    return leaf_type is None or leaf_type == "i32:1"


def _leaves(runtime):
    """The run-time arguments with every tuple replaced by its elements (recursively)."""
    for value in runtime:
        if type(value) is tuple:
            yield from _leaves(value)
        else:
            yield value


def _flatten(names, runtime, tma) -> list:
    """The values a launch passes: tuples and descriptors replaced by their leaves."""
    if any(type(v) is tuple for v in runtime):
        pairs = [pair for n, v in zip(names, runtime)
                 for pair in (tuples.leaf_values(n, v) if type(v) is tuple else [(n, v)])]
        names, runtime = [n for n, _ in pairs], [v for _, v in pairs]
    return descriptors.flatten(names, runtime, tma)[1]


def _argument_type(jit_fn, name: str, value, driver, devices: dict, where: str | None = None) -> str:
    """The type of a pointer or scalar argument of the parameter ``name`` (``where`` names it in
    errors and in ``devices``, which gets the device of a pointer): as Triton does, pointers
    promise 16-byte alignment and integers divisibility by 16 where they have it (the runtime
    checks both promises at every launch of that specialization), but not for the parameters
    do_not_specialize(_on_alignment) lists."""
    where = where or name
    try:
        ty, address, device = driver.launch_argument_info(value)
    except TypeError as e:          # (its own class: an integer too large is an OverflowError too)
        raise type(e)(f"{jit_fn.__name__}: parameter '{where}': {e}") from None
    if address is not None:
        devices[where] = device
        aligned = address % 16 == 0 and name not in jit_fn.not_aligned
    else:
        aligned = ty in ("i32", "i64") and value % 16 == 0 and name not in jit_fn.not_aligned
    return ty + ":16" if aligned else ty


def _element_type(jit_fn, name: str, driver, devices: dict):
    """The type of each element of the tuple argument ``name`` as the JIT specializes it (a function
    of the element, for ``tuples.signature_of``): None for None, ``i32:1`` for an int equal to 1
    (compiled in), else what a parameter of its own would get; the devices of pointers go into
    ``devices``, each as ``name[k]`` (k: the leaf's place in order)."""
    counter = iter(range(1 << 30))

    def element(value):
        where = f"{name}[{next(counter)}]"          # (its leaves numbered in order)
        if value is None:
            return None
        if descriptors.is_descriptor(value):
            raise TypeError(f"{jit_fn.__name__}: parameter '{name}': a tensor descriptor inside a tuple is not "
                            "supported; pass it as a parameter of its own")
        if type(value) is int and value == 1 and name not in jit_fn.not_specialized:
            return "i32:1"
        return _argument_type(jit_fn, name, value, driver, devices, where)
    return element


_TensorDescriptor = descriptors.TensorDescriptor


def _fast_keys(runtime):
    """What of each run-time argument decides the specialization a launch uses, cheaply read: for
    a PyTorch tensor (or subclass) its dtype, 16-byte alignment and device; for a ``DeviceArray``
    the same; for an int its range (i32/i64/u64) and divisibility by 16; for a float, a bool or
    None its type; for a tuple its elements' keys; for a tensor descriptor its base's key, block
    shape and padding. None when an argument is of any other kind (CuPy arrays, numpy scalars,
    ...): such launches take the full path."""
    driver = _runtime()
    tensor, device_array = driver._TENSOR_INFO[0], driver.DeviceArray   # (torch.Tensor once seen)
    keys = []
    for value in runtime:            # (the commonest kinds first: this runs at every launch)
        t = type(value)
        if t is int:
            keys.append((-0x80000000 <= value < 0x80000000, -1 << 63 <= value < 1 << 63, not value & 15, value == 1))
        elif t is tensor:
            keys.append((value.dtype, not value.data_ptr() & 15, value.get_device()))
        elif t is device_array:
            ptr, dtype, device = value._launch
            keys.append((dtype, not ptr & 15, device))
        elif t is float or t is bool or value is None:
            keys.append(t)
        elif t is tuple:
            inner = _fast_keys(value)
            if inner is None:
                return None
            keys.append((t, *inner))
        elif t is _TensorDescriptor:
            base = _fast_keys([value.base])
            if base is None:
                return None
            keys.append((t, base[0], tuple(value.block_shape), value.padding))
        elif tensor is not None and isinstance(value, tensor):       # (a subclass: nn.Parameter)
            keys.append((value.dtype, not value.data_ptr() & 15, value.get_device()))
        else:
            return None
    return keys


def _constexpr_key(values) -> tuple:
    """What tells these constexpr values from others, for the keys of compiled kernels: each
    value's type and exact value (``_identity``), read cheaply for the common kinds (ints, bools,
    strs, None, and floats but zeros and NaNs, whose ``==`` with the type tells them; dtypes and
    the other kinds ``_identity`` keeps as they are, once it has seen one)."""
    key = []
    for v in values:
        kind = type(v)
        if kind is int or kind is bool or kind is str or v is None:
            key += (kind, v)
        elif kind is float:
            key += (kind, v if v == v and v != 0.0 else struct.pack("<d", v))
        elif kind in _AS_THEY_ARE:
            key += (kind, v)
        else:
            identity = _identity(v)
            key += (kind, v if kind in _AS_THEY_ARE else identity)
    return tuple(key)


# the types whose values _identity keeps as they are (a dtype's, a function's): learned as it meets them
_AS_THEY_ARE: set = set()


def _identity(value, depth: int = 0):
    """A constexpr value's exact identity, hashable: a float by its bits (``0.0`` and ``-0.0``
    differ; a NaN is the NaN of its bits), a complex by its parts' bits, numpy's scalars by their
    type and the number's bits, tuples, lists, sets, dicts and SimpleNamespaces by their type and
    their items' identities; any other value (a dtype, a function, a module, a class) with its type,
    as it is: its own equality, an object's identity or a dtype's value. Types are compared
    exactly (``issubclass`` of the type, never ``isinstance``, which may ask the value)."""
    kind = type(value)
    if kind is float:
        return struct.pack("<d", value)
    if issubclass(kind, complex):
        bits = struct.pack("<dd", value.real, value.imag)
        return bits if kind is complex else (kind, bits)
    if depth > 64:                             # (deeper than codegen admits: as it is)
        return kind, value
    if issubclass(kind, (tuple, list)):        # (tuple, list and tl's Shape: the kinds admitted)
        return (kind, *(_identity(v, depth + 1) for v in value))
    if kind is set or kind is frozenset:
        return kind, frozenset(_identity(v, depth + 1) for v in value)
    if kind is dict:
        return (kind, *((_identity(k, depth + 1), _identity(v, depth + 1)) for k, v in value.items()))
    if kind is types.SimpleNamespace:
        return (kind, *((k, _identity(v, depth + 1)) for k, v in vars(value).items()))
    if kind not in (int, bool, str, bytes, type(None)):
        number = _runtime().constexpr_identity(value)      # numpy's scalars: the number's bits
        if number is not None:
            return kind, number
        _AS_THEY_ARE.add(kind)                # (constexpr_identity's answer depends on the type alone)
    return kind, value


def _fast_lookup(jit_fn, runtime, constexprs, num_warps, num_stages):
    """``(key, kernel or None)`` of the fast path, or None where the launch's arguments or
    constexprs cannot be keyed cheaply (it then takes the full path and is not remembered)."""
    if _interpret():
        return None
    keys = _fast_keys(runtime)
    if keys is None:
        return None
    try:
        key = (num_warps, type(num_warps), num_stages, type(num_stages), *keys, *_constexpr_key(constexprs.values()))
        return key, jit_fn._fast.get(key)
    except TypeError:                          # an unhashable value the key holds as it is (opaque)
        return None


def _grid(grid, names, runtime, constexprs, num_warps):
    """The launch grid; a callable grid gets every argument by name, as Triton's does (``meta``)."""
    if not callable(grid):
        return grid
    return grid({**dict(zip(names, runtime)), **constexprs, "num_warps": num_warps})


def _compile_for_target(jit_fn, names, signature, constexprs, ones, num_warps, num_stages, target, driver):
    """The kernel of one specialization; the parameters in ``ones`` (equal to 1, or None) are
    compiled in as constants and left out of its launches (``kernel.jit_params``: the positions
    passed)."""
    from ..compiler import compile
    _use_native_launcher(driver)
    params = [(n, t) for n, t in zip(names, signature) if n not in ones]
    desc_types = {n: descriptors.parse(t) for n, t in params if isinstance(t, str) and t.startswith("tensordesc")}
    try:
        ck = compile(jit_fn, signature=dict(params), constexprs={**constexprs, **ones}, target=target,
                     num_warps=num_warps, num_stages=num_stages)
        cubin = ck.asm["cubin"]
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__   # (a builtin's refusal, frameless)
    # the kernel's parameters: descriptors as their leaves, with a tensor map where the compiler
    # chose TMA for them (frontend/descriptors.py)
    # (name -> the box and swizzle its tensor map is encoded with where the kernel's TMA copies fill
    # a dot's ring, else None: the descriptor's block, unswizzled)
    tma = {n: ck.metadata["tensor_maps"].get(f"{n}__tmap") for n in desc_types
           if f"{n}__tmap" in ck.metadata["signature"]}
    # (tuples as their leaves but the constants compiled in: frontend/tuples.py)
    leaves = [leaf for n, t in params
              for leaf in (replace(desc_types[n], tma=n in tma).leaves(n) if n in desc_types else
                           [(ln, lt) for ln, lt in tuples.leaves(n, t) if not _constant(lt)]
                           if tuples.is_tuple_type(t) else [(n, t)])]
    kernel = driver.Kernel(jit_fn.__name__, leaves, num_warps, ck.metadata["shared"],
                           {target: cubin}, symbol=ck.metadata["name"],
                           made_tensor_maps=ck.metadata["made_tensor_maps"])
    has_tuples = any(tuples.is_tuple_type(t) for t in signature)
    kernel.descriptor_params, kernel.tma_params = bool(desc_types) or has_tuples, tma
    # whether each argument is passed, in the argument list with descriptors and tuples flattened
    # to their leaves
    flat = [passed for n, t in zip(names, signature)
            for passed in ([True] * len(descriptors.leaf_names(n, desc_types[n].rank, n in tma)) if n in desc_types
                           else [not _constant(lt) for _, lt in tuples.leaves(n, t)] if tuples.is_tuple_type(t)
                           else [n not in ones])]
    kernel.jit_params = None if all(flat) else [i for i, passed in enumerate(flat) if passed]
    kernel.globals_read = ck.function.globals_read
    kernel.asm = ck.asm                  # as Triton's launch handle: kernel[grid](...).asm["ptx"]
    return kernel
