"""The build manifest (DESIGN.md §3): parse, validate against the real kernels, expand specializations.

Every error names the manifest file and line::

    manifests/x.yaml:7: unknown key 'singature' in kernel entry (expected one of: kernel, ...)
"""
from __future__ import annotations

import hashlib
import itertools
import keyword
import os
import re
from dataclasses import dataclass, field
from typing import Any

from . import kernel_source
from .errors import ManifestError
from .signature import sort_targets, target_error, type_error
from .yamldoc import YamlDoc, kind_name, line_of

TOP_KEYS = ("package", "targets", "kernels")
KERNEL_KEYS = ("kernel", "signature", "constexprs", "specializations", "num_warps")
DEFAULT_NUM_WARPS = (4,)
# Names the generated loader defines besides the kernels (see templates/loader/__init__.py.j2).
LOADER_NAMES = ("DeviceArray", "cdiv", "_runtime", "_os", "_HERE", "_path")
_PACKAGE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Specialization:
    """One compiled variant of a kernel: constexpr values (in parameter order) and num_warps."""

    id: str                                 # file-name safe, e.g. "BM64_BN32_w4"
    constexprs: tuple[tuple[str, Any], ...]
    num_warps: int
    line: int | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """How progress lines and errors show it: ``BM=64 BN=32 w4``."""
        return " ".join([f"{name}={value}" for name, value in self.constexprs] + [f"w{self.num_warps}"])


@dataclass(frozen=True)
class KernelEntry:
    name: str                               # the function's name; the loader attribute
    source: kernel_source.KernelSource
    params: tuple[tuple[str, str], ...]     # runtime parameters with their type strings, in order
    constexpr_names: tuple[str, ...]
    specializations: tuple[Specialization, ...]
    line: int | None = field(default=None, compare=False)
    jit_fn: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Manifest:
    path: str                               # as given on the command line
    package: str
    targets: tuple[str, ...]                # oldest first; empty when the manifest names none
    kernels: tuple[KernelEntry, ...]
    package_line: int | None = field(default=None, compare=False)
    targets_line: int | None = field(default=None, compare=False)


def load_manifest(path: str) -> Manifest:
    """Read and validate the manifest at *path*, importing its kernels; raises :class:`ManifestError`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(path, None, f"cannot read manifest: {exc.strerror or exc}") from None
    doc = YamlDoc(path, text)
    if doc.root is None:
        raise ManifestError(path, None, "the manifest is empty")
    return _Parser(doc, os.path.dirname(os.path.abspath(path))).manifest()


class _Parser:
    def __init__(self, doc: YamlDoc, base_dir: str):
        self.doc, self.base_dir = doc, base_dir

    def manifest(self) -> Manifest:
        doc = self.doc
        items = {key: (k, v) for key, k, v in doc.mapping(doc.root, "the manifest")}
        doc.check_keys(doc.root, list(items), TOP_KEYS, "the manifest", required=("package", "kernels"))
        package_node = items["package"][1]
        package = doc.scalar(package_node, "package")
        if not (isinstance(package, str) and _PACKAGE_RE.fullmatch(package) and not keyword.iskeyword(package)):
            raise doc.error(package_node, f"package {package!r} is not a valid Python identifier "
                                          "(it names the generated package and its folder)")
        targets, targets_line = (), None
        if "targets" in items:
            targets, targets_line = self.targets(items["targets"][1]), line_of(items["targets"][1])
        kernels = [self.kernel_entry(node) for node in doc.sequence(items["kernels"][1], "kernels")]
        seen = {}
        for entry in kernels:
            if entry.name in seen:
                raise ManifestError(doc.path, entry.line, f"kernel '{entry.name}' is listed twice "
                                                          f"(first at line {seen[entry.name]})")
            seen[entry.name] = entry.line
        return Manifest(doc.path, package, targets, tuple(kernels), line_of(package_node), targets_line)

    def targets(self, node) -> tuple[str, ...]:
        names = []
        for item in self.doc.sequence(node, "targets"):
            value = self.doc.scalar(item, "a target")
            if (problem := target_error(value)) is not None:
                raise self.doc.error(item, problem)
            names.append(value)
        return sort_targets(names)

    # -- one kernel entry -----------------------------------------------------------------------

    def kernel_entry(self, node) -> KernelEntry:
        doc = self.doc
        items = {key: (k, v) for key, k, v in doc.mapping(node, "kernel entry")}
        doc.check_keys(node, list(items), KERNEL_KEYS, "kernel entry", required=("kernel", "signature"))
        if "constexprs" in items and "specializations" in items:
            raise doc.error(items["specializations"][0],
                            "a kernel entry takes either 'constexprs' (a product) or 'specializations' "
                            "(an explicit list), not both")
        ref_node = items["kernel"][1]
        ref = doc.string(ref_node, "kernel")
        try:
            source = kernel_source.resolve(ref, self.base_dir)
            fn = kernel_source.load(source)
        except kernel_source.KernelImportError as exc:
            raise doc.error(ref_node, str(exc)) from None
        if source.function in LOADER_NAMES:
            raise doc.error(ref_node, f"a kernel cannot be named '{source.function}': the generated "
                                      f"package defines that name (reserved: {', '.join(LOADER_NAMES)})")
        constexpr_names = tuple(name for name in fn.arg_names if name in fn.constexpr_names)
        kernel = _KernelInfo(source.function, tuple(fn.arg_names), constexpr_names)
        params = self.signature(items["signature"], kernel)
        num_warps = DEFAULT_NUM_WARPS
        if "num_warps" in items:
            num_warps = self.num_warps_list(items["num_warps"][1])
        if "specializations" in items:
            combos = self.explicit_specializations(items["specializations"][1], kernel, num_warps)
        else:
            combos = self.product(items.get("constexprs"), kernel, num_warps, node)
        return KernelEntry(source.function, source, params, constexpr_names,
                           self.name_specializations(combos), line_of(node), fn)

    def signature(self, key_and_value, kernel: "_KernelInfo") -> tuple[tuple[str, str], ...]:
        doc = self.doc
        key_node, node = key_and_value
        params = []
        for name, name_node, type_node in doc.mapping(node, "signature"):
            if name in kernel.constexpr_names:
                raise doc.error(name_node, f"'{name}' is a tl.constexpr parameter of {kernel.name}; give its "
                                           "values under 'constexprs' or 'specializations', not in 'signature'")
            if name not in kernel.arg_names:
                raise doc.error(name_node, f"unknown parameter '{name}' in signature: {kernel.name} has no "
                                           f"such parameter (runtime parameters: {kernel.runtime_list})")
            text = doc.scalar(type_node, f"the type of '{name}'")
            if not isinstance(text, str):
                raise doc.error(type_node, f"the type of '{name}' must be a type string such as \"*fp32:16\" "
                                           f"or i32, got {kind_name(type_node)}")
            if (problem := type_error(text)) is not None:
                raise doc.error(type_node, f"parameter '{name}': {problem}")
            params.append((name, text))
        given = [name for name, _ in params]
        missing = [name for name in kernel.runtime_names if name not in given]
        if missing:
            raise doc.error(key_node, f"signature of {kernel.name} is missing parameter(s) "
                                  f"{', '.join(repr(m) for m in missing)} "
                                  f"(expected every runtime parameter, in order: {kernel.runtime_list})")
        if tuple(given) != kernel.runtime_names:
            raise doc.error(key_node, f"signature parameters are out of order: got {', '.join(given)}; "
                                  f"{kernel.name} declares {kernel.runtime_list}")
        return tuple(params)

    def num_warps_list(self, node) -> tuple[int, ...]:
        values = []
        for item in self.doc.sequence(node, "num_warps"):
            value = self.num_warps_value(item)
            if value in values:
                raise self.doc.error(item, f"duplicate value {value} in num_warps")
            values.append(value)
        return tuple(values)

    def num_warps_value(self, node) -> int:
        value = self.doc.scalar(node, "num_warps")
        if type(value) is not int or value < 1 or value > 32 or value & (value - 1):
            raise self.doc.error(node, f"num_warps must be a power of two from 1 to 32, got {kind_name(node)}")
        return value

    def constexpr_value(self, node, name: str):
        value = self.doc.scalar(node, f"the value of '{name}'")
        if not isinstance(value, (bool, int, float, str)):
            raise self.doc.error(node, f"the value of constexpr '{name}' must be a number, a boolean or a "
                                       f"string, got {kind_name(node)}")
        return value

    def check_constexpr_name(self, name: str, node, kernel: "_KernelInfo", extra: tuple[str, ...] = ()):
        if name in kernel.constexpr_names or name in extra:
            return
        if name in kernel.arg_names:
            raise self.doc.error(node, f"'{name}' is a runtime parameter of {kernel.name}, not a tl.constexpr "
                                       "(list it under 'signature')")
        expected = ", ".join(kernel.constexpr_names + extra) or "none"
        raise self.doc.error(node, f"unknown constexpr '{name}': not a tl.constexpr parameter of "
                                   f"{kernel.name} (expected: {expected})")

    def product(self, key_and_value, kernel: "_KernelInfo", num_warps, entry_node) -> list:
        doc = self.doc
        values: dict[str, list] = {}
        where = entry_node
        if key_and_value is not None:
            key_node, node = key_and_value
            where = key_node
            items = doc.mapping(node, "constexprs")
            if not items:
                raise doc.error(node, "constexprs is an empty mapping")
            for name, name_node, list_node in items:
                self.check_constexpr_name(name, name_node, kernel)
                values[name] = []
                for item in doc.sequence(list_node, f"constexprs.{name}"):
                    value = self.constexpr_value(item, name)
                    if value in values[name]:
                        raise doc.error(item, f"duplicate value {value!r} in constexprs.{name}")
                    values[name].append(value)
        missing = [name for name in kernel.constexpr_names if name not in values]
        if missing:
            raise doc.error(where, f"no values for tl.constexpr parameter(s) {', '.join(map(repr, missing))} "
                                   f"of {kernel.name} (add them under 'constexprs' or 'specializations')")
        line = line_of(where)
        names = kernel.constexpr_names
        return [(tuple(zip(names, combo)), warps, line)
                for combo in itertools.product(*(values[name] for name in names))
                for warps in num_warps]

    def explicit_specializations(self, node, kernel: "_KernelInfo", num_warps) -> list:
        doc = self.doc
        combos = []
        for item in doc.sequence(node, "specializations"):
            given, warps = {}, None
            for name, name_node, value_node in doc.mapping(item, "a specialization"):
                self.check_constexpr_name(name, name_node, kernel, extra=("num_warps",))
                if name == "num_warps":
                    warps = (self.num_warps_value(value_node),)
                else:
                    given[name] = self.constexpr_value(value_node, name)
            missing = [name for name in kernel.constexpr_names if name not in given]
            if missing:
                raise doc.error(item, f"specialization does not set tl.constexpr parameter(s) "
                                      f"{', '.join(map(repr, missing))} of {kernel.name}")
            constexprs = tuple((name, given[name]) for name in kernel.constexpr_names)
            combos += [(constexprs, w, line_of(item)) for w in (warps or num_warps)]
        return combos

    def name_specializations(self, combos) -> tuple[Specialization, ...]:
        seen: dict[tuple, int | None] = {}
        for constexprs, warps, line in combos:
            key = (tuple(value for _, value in constexprs), warps)
            if key in seen:
                label = Specialization("", constexprs, warps).label
                raise ManifestError(self.doc.path, line,
                                    f"duplicate specialization {label} (first at line {seen[key]})")
            seen[key] = line
        return tuple(Specialization(spec_id, constexprs, warps, line)
                     for spec_id, (constexprs, warps, line) in zip(spec_ids(combos), combos))


@dataclass(frozen=True)
class _KernelInfo:
    name: str
    arg_names: tuple[str, ...]
    constexpr_names: tuple[str, ...]

    @property
    def runtime_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.arg_names if name not in self.constexpr_names)

    @property
    def runtime_list(self) -> str:
        return ", ".join(self.runtime_names) or "none"


def spec_ids(combos) -> list[str]:
    """Readable, file-name safe ids (``BM64_BN32_w4``); made unique with a hash suffix if needed."""
    ids = ["_".join([f"{name}{_id_part(value)}" for name, value in constexprs] + [f"w{warps}"])
           for constexprs, warps, _ in combos]
    # Values like 0.5 and "0.5" would share an id; so would BM/bm on a case-insensitive disk.
    folded = [spec_id.lower() for spec_id in ids]
    for i, (constexprs, warps, _) in enumerate(combos):
        if folded.count(folded[i]) > 1:
            digest = hashlib.sha256(repr((constexprs, warps)).encode()).hexdigest()[:8]
            ids[i] = f"{ids[i]}_{digest}"
    return ids


def _id_part(value) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    text = repr(value) if isinstance(value, float) else str(value)
    text = text.replace("-", "m").replace(".", "p").replace("+", "")
    return re.sub(r"[^A-Za-z0-9]", "_", text)
