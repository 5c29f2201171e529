"""The build manifest: parse, validate against the real kernels, expand specializations.

Every error names the manifest file and line::

    manifests/x.yaml:7: unknown key 'singature' in kernel entry (expected one of: kernel, ...)

The keys (``TOP_KEYS``, ``KERNEL_KEYS``, ``AUTOTUNE_KEYS``)::

    package: name                  an ASCII identifier that shadows no module; names the package
    version: 1.2.0                 optional, PEP 440 (default 0.1.0)
    targets: [sm_80, sm_90a]       optional where --target is given
    kernels:                       one entry per kernel:
      - kernel: file.py:function   a path inside the manifest's folder, or module:function
        signature: {x: "*fp32:16", n: i32, stride: "i32:1"}
                                   every run-time parameter in order, as Triton's AOT type strings
        constexprs: {BLOCK: [64, 128]}      a product of values, or
        specializations: [{BLOCK: 64, num_warps: 4, num_stages: 3}, ...]   an explicit list
        num_warps: [4, 8]          optional (default [4]); num_stages: N optional (a build option)
        autotune: {key, configs, problems, inputs, tolerance}   instead of constexprs/specializations
        specialize: true           optional (default true): also build, for each specialization
                                   whose signature leaves promises out, the specialized variant
                                   Triton's JIT would compile for the common case (pointers :16,
                                   integers :16, unit strides :1; see aot/variants.py), launched
                                   where the arguments keep its promises; false builds the
                                   signature as written only
"""
from __future__ import annotations

import collections
import hashlib
import itertools
import keyword
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import kernel_source
from ..runtime.driver import constexpr_identity
from .errors import ManifestError
from .signature import sort_targets, target_error, type_error, type_suggestion
from .yamldoc import YamlDoc, did_you_mean, kind_name, line_of

TOP_KEYS = ("package", "version", "targets", "kernels")
KERNEL_KEYS = ("kernel", "signature", "constexprs", "specializations", "num_warps", "num_stages", "autotune",
               "specialize")
AUTOTUNE_KEYS = ("key", "configs", "problems", "inputs", "tolerance")
# What an entry with ``autotune:`` lists under autotune.configs instead.
VARIANT_KEYS = ("constexprs", "specializations", "num_warps", "num_stages")
DEFAULT_NUM_WARPS = (4,)
DEFAULT_VERSION = "0.1.0"
# A manifest expanding to more specializations than this is almost certainly a mistake (each is a
# compile of a second or so per target); ``--max-specializations N`` raises the limit.
MAX_SPECIALIZATIONS = 4096
# Specialization ids name files (kernels/<kernel>/<id>.sm_121a.cubin): bounded far below the 255
# bytes a file name may have; package and kernel names name folders.
MAX_ID_LENGTH = 96
MAX_NAME_LENGTH = 100
# Names the generated loader defines besides the kernels (see templates/loader/__init__.py.j2).
LOADER_NAMES = ("DeviceArray", "cdiv", "_runtime", "_os", "_HERE", "_path")
# Modules a generated package must not shadow once installed (besides the standard library):
# what the loader imports, the build tool and its dependencies, and the tools that install it.
PROTECTED_MODULES = frozenset({
    "cuda", "numpy", "mytriton", "yaml", "jinja2", "markupsafe",
    "pip", "setuptools", "pkg_resources", "_distutils_hack", "wheel", "build", "packaging",
})
# ... and distributions it must not replace (`pip install` of a package of that name uninstalls them).
PROTECTED_DISTRIBUTIONS = frozenset({
    "mytriton", "cuda-bindings", "cuda-pathfinder", "cuda-python", "cuda-toolkit", "numpy", "pyyaml",
    "jinja2", "markupsafe", "pip", "setuptools", "wheel", "build", "packaging",
})
# PEP 440, appendix B (the canonical public version pattern), matched case-insensitively.
_PEP440 = re.compile(r"""
    v?(?:(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_\.]?(?P<pre_l>(a|b|c|rc|alpha|beta|pre|preview))[-_\.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_\.]?(?P<post_l>post|rev|r)[-_\.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_\.]?(?P<dev_l>dev)[-_\.]?(?P<dev_n>[0-9]+)?)?)
    (?:\+(?P<local>[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?
""", re.VERBOSE | re.IGNORECASE)


def name_problem(name: object) -> str | None:
    """Why *name* cannot be a name in generated Python code, or None: it must be an ASCII Python
    identifier and not a keyword (``class``, ``None``)."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        return "is not an ASCII Python identifier"
    if keyword.iskeyword(name):
        return "is a Python keyword"
    return None


def package_problem(name: object) -> str | None:
    """Why *name* cannot name a generated package, or None."""
    problem = name_problem(name)
    if problem is not None:
        return f"{problem} (it names the generated package and its folder)"
    if len(name) > MAX_NAME_LENGTH:
        return f"is longer than {MAX_NAME_LENGTH} characters (it names a folder)"
    folded = name.lower()
    if folded in {m.lower() for m in sys.stdlib_module_names} or folded in PROTECTED_MODULES:
        return ("would shadow the module of that name once installed (standard library, mytriton, or "
                "what the loader, the build or pip need): choose another name")
    if re.sub(r"[-_.]+", "-", folded) in PROTECTED_DISTRIBUTIONS:
        return "is the name of a distribution that `pip install` would replace: choose another name"
    return None


@dataclass(frozen=True)
class Specialization:
    """One compiled variant of a kernel: constexpr values (in parameter order) and num_warps; and
    the ``num_stages`` it is built with (a compile option, not chosen at launch: None is the
    compiler's default)."""

    id: str                                 # file-name safe, e.g. "BM64_BN32_w4"
    constexprs: tuple[tuple[str, Any], ...]
    num_warps: int
    line: int | None = field(default=None, compare=False)
    num_stages: int | None = None

    @property
    def label(self) -> str:
        """How progress lines and errors show it: ``BM=64 BN=32 w4`` (``s3``: num_stages)."""
        stages = [] if self.num_stages is None else [f"s{self.num_stages}"]
        return " ".join([f"{name}={value}" for name, value in self.constexprs] + [f"w{self.num_warps}"] + stages)


@dataclass(frozen=True)
class Autotune:
    """A kernel entry's ``autotune:``: its specializations are the configs to time on ``problems``
    (each a mapping of launch-argument values holding every ``key`` parameter, passed whole to the
    ``inputs`` function); the loader launches the one measured fastest on the nearest problem."""

    key: tuple[str, ...]                    # runtime scalar parameters the choice depends on
    problems: tuple[dict, ...]              # as written, in manifest order
    inputs: kernel_source.KernelSource      # (problem dict) -> (grid, args); imported only to tune
    inputs_ref: str                         # as manifest.json and tuning.json record it
    rtol: float | None = None               # the tolerance of the output check (None: by dtype)
    atol: float | None = None
    inputs_line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class KernelEntry:
    name: str                               # the function's name; the loader attribute
    source: kernel_source.KernelSource
    params: tuple[tuple[str, str], ...]     # runtime parameters with their type strings, in order
    constexpr_names: tuple[str, ...]
    specializations: tuple[Specialization, ...]
    line: int | None = field(default=None, compare=False)
    jit_fn: Any = field(default=None, compare=False, repr=False)
    # The kernel reference as manifest.json records it: a file path relative to the manifest's
    # folder, '/'-separated (never an absolute path of the build machine), or module:function.
    portable_ref: str = field(default="", compare=False)
    autotune: Autotune | None = None
    specialize: bool = True                 # also build specialized variants (aot/variants.py)


@dataclass(frozen=True)
class Manifest:
    path: str                               # as given on the command line
    package: str
    targets: tuple[str, ...]                # oldest first; empty when the manifest names none
    kernels: tuple[KernelEntry, ...]
    package_line: int | None = field(default=None, compare=False)
    targets_line: int | None = field(default=None, compare=False)
    version: str = DEFAULT_VERSION          # the generated package's version (PEP 440)


def load_manifest(path: str, *, max_specializations: int = MAX_SPECIALIZATIONS,
                  allow_outside: bool = False) -> Manifest:
    """Read and validate the manifest at *path*, importing its kernels; raises :class:`ManifestError`.

    More than *max_specializations* specializations in all is an error; so is a kernel file outside
    the manifest's folder (``../x.py``, an absolute path) unless *allow_outside*."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ManifestError(path, None, f"cannot read manifest: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ManifestError(path, line, f"the manifest is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                        f"cannot start or continue a character)") from None
    doc = YamlDoc(path, text)
    if doc.root is None:
        raise ManifestError(path, None, "the manifest is empty")
    return _Parser(doc, os.path.dirname(os.path.abspath(path)), max_specializations, allow_outside).manifest()


class _Parser:
    def __init__(self, doc: YamlDoc, base_dir: str, max_specializations: int = MAX_SPECIALIZATIONS,
                 allow_outside: bool = False):
        self.doc, self.base_dir = doc, base_dir
        self.max_specializations, self.allow_outside = max_specializations, allow_outside
        self.specialization_count = 0           # so far, over all kernel entries

    def manifest(self) -> Manifest:
        doc = self.doc
        items = {key: (k, v) for key, k, v in doc.mapping(doc.root, "the manifest")}
        doc.check_keys(doc.root, list(items), TOP_KEYS, "the manifest", required=("package", "kernels"))
        package_node = items["package"][1]
        package = doc.scalar(package_node, "package")
        if (problem := package_problem(package)) is not None:
            raise doc.error(package_node, f"package {package!r} {problem}")
        version = DEFAULT_VERSION
        if "version" in items:
            version = self.version(items["version"][1])
        targets, targets_line = (), None
        if "targets" in items:
            targets, targets_line = self.targets(items["targets"][1]), line_of(items["targets"][1])
        kernels = [self.kernel_entry(node) for node in doc.sequence(items["kernels"][1], "kernels")]
        seen = {}           # folded name -> (name, line): kernels/<name>/ must be one folder per kernel
        for entry in kernels:
            first = seen.get(entry.name.lower())
            if first is not None and first[0] == entry.name:
                raise ManifestError(doc.path, entry.line, f"kernel '{entry.name}' is listed twice "
                                                          f"(first at line {first[1]})")
            if first is not None:
                raise ManifestError(doc.path, entry.line, f"kernels '{first[0]}' (line {first[1]}) and "
                                                          f"'{entry.name}' differ only in case: on a case-insensitive "
                                                          f"file system their folders kernels/{first[0]}/ and "
                                                          f"kernels/{entry.name}/ would be one")
            seen[entry.name.lower()] = entry.name, entry.line
        return Manifest(doc.path, package, targets, tuple(kernels), line_of(package_node), targets_line, version)

    def version(self, node) -> str:
        """The package version: the text as written (``1.10`` stays ``1.10``, not the float 1.1)."""
        if isinstance(node, yaml.ScalarNode):
            self.doc.scalar(node, "version")        # a value its tag cannot hold (!!int "") is an error
        if not isinstance(node, yaml.ScalarNode) or node.tag not in _VERSION_TAGS:
            raise self.doc.error(node, f"version must be a version string such as \"1.2.0\", got {kind_name(node)}")
        text = node.value.strip()
        if not _PEP440.fullmatch(text):
            raise self.doc.error(node, f"version {text!r} is not a PEP 440 version (such as 1.2.0, 2.0rc1, "
                                       "1.0.post1 or 0.3.dev2)")
        return text

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
        if "autotune" in items:
            for key in VARIANT_KEYS:
                if key in items:
                    raise doc.error(items[key][0], f"a kernel entry with 'autotune' lists its variants under "
                                                   f"autotune.configs (each may set num_warps and num_stages), "
                                                   f"not under '{key}'")
        if "constexprs" in items and "specializations" in items:
            raise doc.error(items["specializations"][0],
                            "a kernel entry takes either 'constexprs' (a product) or 'specializations' "
                            "(an explicit list), not both")
        ref_node = items["kernel"][1]
        ref = doc.string(ref_node, "kernel")
        self.check_inside(kernel_source.file_location(ref), ref_node)
        try:
            source = kernel_source.resolve(ref, self.base_dir)
        except kernel_source.KernelImportError as exc:
            raise doc.error(ref_node, str(exc)) from None
        self.check_really_inside(source, ref_node)
        if (problem := name_problem(source.function)) is not None:
            raise doc.error(ref_node, f"kernel name '{source.function}' {problem}: the generated loader "
                                      "cannot define it")
        if len(source.function) > MAX_NAME_LENGTH:
            raise doc.error(ref_node, f"kernel name '{source.function}' is longer than {MAX_NAME_LENGTH} "
                                      f"characters (it names the folder kernels/{source.function}/)")
        if source.function in LOADER_NAMES or source.function.startswith("__"):
            raise doc.error(ref_node, f"a kernel cannot be named '{source.function}': the generated "
                                      f"package defines that name (reserved: {', '.join(LOADER_NAMES)} "
                                      "and __dunder__ names)")
        portable = self.portable_ref(source)
        try:
            fn = kernel_source.load(source)
        except kernel_source.KernelImportError as exc:
            raise doc.error(ref_node, str(exc)) from None
        for name in fn.arg_names:
            if (problem := name_problem(name)) is not None:
                raise doc.error(ref_node, f"parameter {name!r} of {source.function} {problem}: the generated "
                                          "loader cannot use it")
        constexpr_names = tuple(name for name in fn.arg_names if name in fn.constexpr_names)
        kernel = _KernelInfo(source.function, tuple(fn.arg_names), constexpr_names)
        params = self.signature(items["signature"], kernel)
        num_warps = DEFAULT_NUM_WARPS
        if "num_warps" in items:
            num_warps = self.num_warps_list(items["num_warps"][1])
        stages = self.num_stages_value(items["num_stages"][1]) if "num_stages" in items else None
        autotune = None
        if "autotune" in items:
            autotune, configs_node = self.autotune(items["autotune"], kernel, params)
            combos = self.explicit_specializations(configs_node, kernel, num_warps, None, what="config")
        elif "specializations" in items:
            combos = self.explicit_specializations(items["specializations"][1], kernel, num_warps, stages)
        else:
            combos = [(*combo, stages) for combo in self.product(items.get("constexprs"), kernel, num_warps, node)]
        specialize = self.specialize_value(items["specialize"][1]) if "specialize" in items else True
        return KernelEntry(source.function, source, params, constexpr_names,
                           self.name_specializations(combos, by_stages=autotune is not None), line_of(node), fn,
                           portable, autotune, specialize)

    def specialize_value(self, node) -> bool:
        value = self.doc.scalar(node, "specialize")
        if type(value) is not bool:
            raise self.doc.error(node, f"specialize must be true or false (whether to also build the specialized "
                                       f"variants of its specializations), got {kind_name(node)}")
        return value

    def autotune(self, key_and_value, kernel: "_KernelInfo", params) -> tuple[Autotune, Any]:
        """The entry's ``autotune:`` (and its ``configs`` node, read as specializations)."""
        doc = self.doc
        key_node, node = key_and_value
        items = {key: (k, v) for key, k, v in doc.mapping(node, "autotune")}
        doc.check_keys(node, list(items), AUTOTUNE_KEYS, "autotune",
                       required=("key", "configs", "problems", "inputs"))
        types = dict(params)
        key = []
        for item in doc.sequence(items["key"][1], "autotune.key"):
            name = doc.string(item, "a key parameter")
            if name not in types:
                what = ("a tl.constexpr parameter (the configs choose it)" if name in kernel.constexpr_names
                        else f"not a parameter of {kernel.name}")
                raise doc.error(item, f"autotune key '{name}' is {what}; the key names run-time scalar "
                                      f"parameters ({kernel.runtime_list})" + did_you_mean(name, kernel.runtime_names))
            if types[name].startswith("*"):
                raise doc.error(item, f"autotune key '{name}' is a pointer ({types[name]}); the key names run-time "
                                      "integer or float parameters (sizes, strides)")
            if name in key:
                raise doc.error(item, f"autotune key '{name}' is listed twice")
            key.append(name)
        problems, seen = [], {}
        for item in doc.sequence(items["problems"][1], "autotune.problems"):
            problem = {}
            for name, name_node, value_node in doc.mapping(item, "a problem"):
                value = doc.scalar(value_node, f"the value of '{name}'")
                if name in key and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise doc.error(value_node, f"problem value of key '{name}' must be a number, got "
                                                f"{kind_name(value_node)}")
                if name in key and not math.isfinite(value):
                    raise doc.error(value_node, f"problem value of key '{name}' must be finite (a launch takes the "
                                                f"config of the nearest problem), got {kind_name(value_node)}")
                if not isinstance(value, (bool, int, float, str)):
                    raise doc.error(value_node, f"problem value '{name}' must be a number, a boolean or a string, "
                                                f"got {kind_name(value_node)}")
                problem[name] = value
            missing = [name for name in key if name not in problem]
            if missing:
                raise doc.error(item, f"problem does not give the key parameter(s) {', '.join(map(repr, missing))}")
            values = tuple(problem[name] for name in key)
            if values in seen:
                raise doc.error(item, f"duplicate problem: the same key values as the problem at line {seen[values]}")
            seen[values] = line_of(item)
            problems.append(problem)
        inputs_node = items["inputs"][1]
        ref = doc.string(inputs_node, "autotune.inputs")
        self.check_inside(kernel_source.file_location(ref), inputs_node, what="inputs")
        try:
            inputs = kernel_source.resolve(ref, self.base_dir, what="inputs")
        except kernel_source.KernelImportError as exc:
            raise doc.error(inputs_node, str(exc)) from None
        self.check_really_inside(inputs, inputs_node, what="inputs")
        rtol = atol = None
        if "tolerance" in items:
            rtol, atol = self.tolerance(items["tolerance"][1])
        return Autotune(tuple(key), tuple(problems), inputs, self.portable_ref(inputs), rtol, atol,
                        line_of(inputs_node)), items["configs"][1]

    def tolerance(self, node) -> tuple[float | None, float | None]:
        doc = self.doc
        found = {}
        for name, name_node, value_node in doc.mapping(node, "autotune.tolerance"):
            if name not in ("rtol", "atol"):
                raise doc.error(name_node, f"unknown key '{name}' in autotune.tolerance (expected rtol, atol)")
            value = doc.scalar(value_node, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise doc.error(value_node, f"tolerance {name} must be a number >= 0, got {kind_name(value_node)}")
            found[name] = float(value)
        return found.get("rtol"), found.get("atol")

    def check_inside(self, location: str | None, ref_node, what: str = "kernel") -> None:
        """A kernel file outside the manifest's folder (``../x.py``, an absolute path) is an error
        unless the build allows it (``--allow-outside``): the manifest would not build elsewhere."""
        if location is None or self.allow_outside:
            return
        relative = os.path.normpath(location)
        if os.path.isabs(location) or relative == os.pardir or relative.startswith(os.pardir + os.sep):
            raise self.doc.error(ref_node, f"{what} file '{location}' is outside the manifest's folder "
                                           f"({self.base_dir}); move it there, or pass --allow-outside")

    def check_really_inside(self, source: kernel_source.KernelSource, ref_node, what: str = "kernel") -> None:
        """:meth:`check_inside` for the file itself: one reached through a symbolic link (of the
        file or a folder on its way) that leaves the manifest's folder is outside it too."""
        if source.file is None or self.allow_outside:
            return
        real, folder = os.path.realpath(source.file), os.path.realpath(self.base_dir)
        if os.path.commonpath([real, folder]) != folder:
            raise self.doc.error(ref_node, f"{what} file '{source.where}' is outside the manifest's folder "
                                           f"({self.base_dir}): it is {real} (through a symbolic link); move it "
                                           "there, or pass --allow-outside")

    def portable_ref(self, source: kernel_source.KernelSource) -> str:
        """The reference as manifest.json records it: relative to the manifest's folder."""
        if source.file is None:
            return source.ref
        return os.path.relpath(source.file, self.base_dir).replace(os.sep, "/") + ":" + source.function

    def count_specializations(self, count: int, node) -> None:
        """Add *count* to the manifest's specializations; past the limit, a manifest error at *node*."""
        self.specialization_count += count
        if self.specialization_count > self.max_specializations:
            raise self.doc.error(node, f"the manifest expands to more than {self.max_specializations} "
                                       f"specializations ({self.specialization_count} so far, counting this "
                                       "entry): list fewer values, or raise the limit with "
                                       "--max-specializations N")

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
                                           f"such parameter (runtime parameters: {kernel.runtime_list})"
                                           + did_you_mean(name, kernel.runtime_names))
            text = doc.scalar(type_node, f"the type of '{name}'")
            if not isinstance(text, str):
                raise doc.error(type_node, f"the type of '{name}' must be a type string such as \"*fp32:16\" "
                                           f"or i32, got {kind_name(type_node)}")
            if (problem := type_error(text)) is not None:
                raise doc.error(type_node, f"parameter '{name}': {problem}{type_suggestion(text)}")
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

    def num_stages_value(self, node) -> int:
        value = self.doc.scalar(node, "num_stages")
        if type(value) is not int or value < 1:
            raise self.doc.error(node, f"num_stages must be a positive integer (the shared-memory buffers of "
                                       f"a loop's pipelined dot operands), got {kind_name(node)}")
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
                                   f"{kernel.name} (expected: {expected})"
                                   + did_you_mean(name, kernel.constexpr_names + extra))

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
            lists = []
            for name, name_node, list_node in items:
                self.check_constexpr_name(name, name_node, kernel)
                lists.append((name, doc.sequence(list_node, f"constexprs.{name}")))
            # Count before building anything: a product of a million is refused at once.
            self.count_specializations(math.prod(len(nodes) for _, nodes in lists) * len(num_warps), key_node)
            for name, nodes in lists:
                values[name], seen = [], set()
                for item in nodes:
                    value = self.constexpr_value(item, name)
                    if constexpr_identity(value) in seen:       # 0.0 and -0.0, 1 and 1.0 are two values
                        raise doc.error(item, f"duplicate value {value!r} in constexprs.{name}")
                    seen.add(constexpr_identity(value))
                    values[name].append(value)
        else:
            self.count_specializations(len(num_warps), where)
        missing = [name for name in kernel.constexpr_names if name not in values]
        if missing:
            raise doc.error(where, f"no values for tl.constexpr parameter(s) {', '.join(map(repr, missing))} "
                                   f"of {kernel.name} (add them under 'constexprs' or 'specializations')")
        line = line_of(where)
        names = kernel.constexpr_names
        return [(tuple(zip(names, combo)), warps, line)
                for combo in itertools.product(*(values[name] for name in names))
                for warps in num_warps]

    def explicit_specializations(self, node, kernel: "_KernelInfo", num_warps, num_stages,
                                 what: str = "specialization") -> list:
        doc = self.doc
        combos = []
        listed = "autotune.configs" if what == "config" else "specializations"
        for item in doc.sequence(node, listed):
            given, warps, stages = {}, None, num_stages
            for name, name_node, value_node in doc.mapping(item, f"a {what}"):
                self.check_constexpr_name(name, name_node, kernel, extra=("num_warps", "num_stages"))
                if name == "num_warps":
                    warps = (self.num_warps_value(value_node),)
                elif name == "num_stages":
                    stages = self.num_stages_value(value_node)
                else:
                    given[name] = self.constexpr_value(value_node, name)
            missing = [name for name in kernel.constexpr_names if name not in given]
            if missing:
                raise doc.error(item, f"{what} does not set tl.constexpr parameter(s) "
                                      f"{', '.join(map(repr, missing))} of {kernel.name}")
            constexprs = tuple((name, given[name]) for name in kernel.constexpr_names)
            self.count_specializations(len(warps or num_warps), item)
            combos += [(constexprs, w, line_of(item), stages) for w in (warps or num_warps)]
        return combos

    def name_specializations(self, combos, by_stages: bool = False) -> tuple[Specialization, ...]:
        """Specializations from (constexprs, num_warps, line, num_stages); two that a launch could not
        tell apart (num_stages is not chosen at launch) are an error, except among tuned configs
        (*by_stages*), which the loader tells apart by the tuning's choice."""
        seen: dict[tuple, tuple[int | None, int | None]] = {}      # identity -> (line, num_stages)
        for constexprs, warps, line, stages in combos:
            key = (_identity(constexprs), warps) + ((stages,) if by_stages else ())
            if key in seen:
                label = Specialization("", constexprs, warps, num_stages=stages if by_stages else None).label
                first, first_stages = seen[key]
                why = "; num_stages does not tell specializations apart at launch" if first_stages != stages else ""
                raise ManifestError(self.doc.path, line, f"duplicate {'config' if by_stages else 'specialization'} "
                                                         f"{label} (first at line {first}{why})")
            seen[key] = line, stages
        return tuple(Specialization(spec_id, constexprs, warps, line, stages)
                     for spec_id, (constexprs, warps, line, stages) in zip(spec_ids(combos), combos))


_VERSION_TAGS = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


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


def _identity(constexprs) -> tuple:
    """What tells the constexpr values of two specializations apart (see ``constexpr_identity``)."""
    return tuple((name, constexpr_identity(value)) for name, value in constexprs)


_PART_LENGTH = 32       # one constexpr's name and value in an id too long for a file name


def spec_ids(combos) -> list[str]:
    """Readable, file-name safe ids (``BM64_BN32_w4``) of (constexprs, num_warps, line, num_stages)
    combos of distinct identity, at most MAX_ID_LENGTH characters. An id whose readable form is too
    long (a long name or value, many constexprs: each part is cut to _PART_LENGTH, then the whole)
    or equals another's up to case (0.5 and "0.5"; BM and bm on a case-insensitive disk) ends with
    a hash of its identity instead. Readable ids end in ``w<N>`` or ``s<N>`` and hashed ones in hex
    digits, so the two never meet; and no two ids are equal up to case."""
    readable = [_readable_id(constexprs, warps) for constexprs, warps, *_ in combos]
    # tuned configs may differ in num_stages alone: then the id says it (BM64_w4_s3)
    repeated = collections.Counter(readable)
    texts, cut = [], []
    for text, (constexprs, warps, _, stages) in zip(readable, combos):
        suffix = f"_s{stages}" if repeated[text] > 1 and stages is not None else ""
        cut.append(len(text + suffix) > MAX_ID_LENGTH)
        texts.append((_readable_id(constexprs, warps, _PART_LENGTH) if cut[-1] else text) + suffix)
    folded = collections.Counter(text.lower() for text in texts)
    digests = [hashlib.sha256(repr((_identity(c), w, s)).encode()).hexdigest() for c, w, _, s in combos]

    def hashed(text: str, digest: str, digits: int) -> str:
        return f"{text[:MAX_ID_LENGTH - 17].rstrip('_')}_{digest[:digits]}"
    ids = [hashed(text, digest, 8) if was_cut or folded[text.lower()] > 1 else text
           for text, was_cut, digest in zip(texts, cut, digests)]
    # (hashes of 8 digits that meet get 16)
    clashes = collections.Counter(spec_id.lower() for spec_id in ids)
    return [hashed(text, digest, 16) if clashes[spec_id.lower()] > 1 else spec_id
            for spec_id, text, digest in zip(ids, texts, digests)]


def _readable_id(constexprs, warps, part_length: int | None = None) -> str:
    """``BM64_BN32_w4``, each constexpr's part cut to *part_length* characters if given."""
    return "_".join([f"{name}{_id_part(value)}"[:part_length] for name, value in constexprs] + [f"w{warps}"])


def _id_part(value) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    text = repr(value) if isinstance(value, float) else str(value)
    text = text.replace("-", "m").replace(".", "p").replace("+", "")
    return re.sub(r"[^A-Za-z0-9]", "_", text)
