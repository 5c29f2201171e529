"""Triton's ``@tl.core._aggregate``: a user class whose instances are values of the language -- its
annotated fields run-time values (tensors, descriptors, other aggregates) or compile-time ones
(annotated ``tl.constexpr``). Kernels construct them (``__init__`` is plain Python, run while the
kernel compiles), pass them to ``@jit`` functions, carry them through loops and merge them after
run-time ``if``s, field by field (a ``Composite``), and call their methods (``@jit`` functions
taking ``self``, or ``triton.constexpr_function``s)."""
from __future__ import annotations

from .core import Composite, tensor


def _is_constexpr(annotation) -> bool:
    from . import constexpr
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return annotation is constexpr


def _aggregate(cls):
    """Make ``cls`` an aggregate of the language (Triton's ``triton.language.core._aggregate``)."""
    annotations = dict(vars(cls).get("__annotations__", {}))
    fields = tuple(annotations)
    static_fields = tuple(f for f in fields if _is_constexpr(annotations[f]))
    part_fields = tuple(f for f in fields if f not in static_fields)
    user_init = vars(cls).get("__init__")

    class aggregate_value(Composite):
        __mytriton_aggregate__ = True

        def __new__(this_cls, *args, **kwargs):
            instance = object.__new__(this_cls)
            if user_init is not None:
                user_init(instance, *args, **kwargs)
            for name in fields:
                if name not in vars(instance):
                    raise AttributeError(f"constructor for {cls.__name__} did not initialize attribute '{name}'")
            return instance

        def __init__(self, *args, **kwargs):
            pass                                   # (__new__ ran the class's own __init__)

        def __setattr__(self, name, value):
            if name not in fields:
                raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
            if name in static_fields and isinstance(value, (tensor, Composite)):
                raise TypeError(f"{cls.__name__}.{name} is a tl.constexpr field: it takes compile-time values")
            object.__setattr__(self, name, value)

        @property
        def parts(self):
            return tuple(vars(self)[f] for f in part_fields)

        @property
        def static(self):
            return (cls.__qualname__, tuple(repr(vars(self)[f]) for f in static_fields))

        def with_parts(self, parts):
            out = object.__new__(type(self))
            for f in static_fields:
                object.__setattr__(out, f, vars(self)[f])
            for f, v in zip(part_fields, parts):
                object.__setattr__(out, f, v)
            return out

        @property
        def type(self):
            from .triton_types import type_of
            return (cls.__qualname__, tuple((f, type_of(vars(self)[f])) for f in fields))

        def __repr__(self):
            return f"{cls.__name__}({', '.join(f'{f}={vars(self)[f]!r}' for f in fields)})"

    for name, member in vars(cls).items():
        if name not in ("__init__", "__annotations__", "__dict__", "__weakref__", "__module__", "__qualname__",
                        "__doc__"):
            setattr(aggregate_value, name, member)
    aggregate_value.__name__ = cls.__name__
    aggregate_value.__qualname__ = cls.__qualname__
    aggregate_value.__module__ = cls.__module__
    aggregate_value.__doc__ = cls.__doc__
    aggregate_value.__annotations__ = annotations
    aggregate_value.__mytriton_class__ = cls      # (the class as written: what a cache key describes)
    return aggregate_value


def is_aggregate_class(value) -> bool:
    return isinstance(value, type) and vars(value).get("__mytriton_aggregate__", False) is True
