"""YAML read through ``yaml.compose`` so every value keeps its line for error messages.

Scalars are constructed exactly as ``yaml.safe_load`` would construct them; mappings and lists
are walked here so that each error can name the manifest file and the line of the bad node.
"""
from __future__ import annotations

import difflib
import math
from typing import Any

import yaml

from .errors import ManifestError

# Deeper YAML is no manifest: PyYAML's composer recurses once per level and would hit
# Python's recursion limit (a RecursionError) long before running out of anything else.
MAX_DEPTH = 64


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents nested more than :data:`MAX_DEPTH` levels."""

    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"the YAML is nested more than {MAX_DEPTH} levels deep",
                                              self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def scan_flow_scalar_non_spaces(self, double, start_mark):
        """PyYAML's, refusing the escapes of no character as a ScannerError: past U+10FFFF
        (``chr`` raises ValueError or OverflowError, with the scanner at the escape's digits) and
        the UTF-16 surrogates (a string holding one cannot be written as UTF-8)."""
        try:
            chunks = super().scan_flow_scalar_non_spaces(double, start_mark)
        except (ValueError, OverflowError):
            escape = "\\" + self.peek(-1) + self.prefix(self.ESCAPE_CODES.get(self.peek(-1), 0))
            raise yaml.scanner.ScannerError("while scanning a double-quoted scalar", start_mark,
                                            f"the escape {escape} is past the last Unicode character (U+10FFFF)",
                                            self.get_mark()) from None
        surrogate = next((c for chunk in chunks for c in chunk if "\ud800" <= c <= "\udfff"), None)
        if surrogate is not None:
            raise yaml.scanner.ScannerError("while scanning a double-quoted scalar", start_mark,
                                            f"the escape of U+{ord(surrogate):04X} is a UTF-16 surrogate, not a "
                                            "character (write one past U+FFFF as \\UXXXXXXXX)", start_mark)
        return chunks


def construct(node: yaml.Node) -> Any:
    """The value of a scalar *node*, as ``yaml.safe_load`` makes it; ``yaml.YAMLError`` for a value
    its tag cannot hold. SafeConstructor checks an explicitly tagged value no further than its
    conversion does, so ``!!int abc`` raises ValueError, ``!!int ""`` IndexError, ``!!bool ""``
    KeyError, ``!!timestamp x`` AttributeError: any exception constructing a scalar is the value's.
    A NaN is Python's NaN (see below)."""
    try:
        value = yaml.constructor.SafeConstructor().construct_object(node)
    except yaml.YAMLError:
        raise
    except Exception as exc:  # noqa: BLE001 - see above: the scalar, not the program, is wrong
        detail = f" ({exc})" if isinstance(exc, (ValueError, ArithmeticError)) and str(exc) else ""
        raise yaml.constructor.ConstructorError(None, None, f"{node.tag} cannot hold {node.value!r}{detail}",
                                                node.start_mark) from None
    # YAML's .nan is the NaN: Python's (float("nan"), math.nan, numpy.nan), whatever bits PyYAML's
    # inf / inf gave it (the sign bit, on x86), so that a launch with a NaN finds it
    return math.nan if type(value) is float and math.isnan(value) else value


def did_you_mean(name: str, choices) -> str:
    """``"; did you mean 'x'?"`` when *name* looks like a misspelling of one of *choices*, else ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6) if isinstance(name, str) else []
    return f"; did you mean '{close[0]}'?" if close else ""


def kind_name(node: yaml.Node) -> str:
    """How a user would call the YAML value in *node* ("a mapping", "a list", "the string 'x'")."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    try:
        value = construct(node)
    except yaml.YAMLError:
        return f"a value tagged {node.tag}"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


class YamlDoc:
    """A parsed YAML file plus helpers that raise :class:`ManifestError` at a node's line."""

    def __init__(self, path: str, text: str):
        self.path = path
        try:
            self.root = yaml.compose(text, Loader=_Loader)
        except yaml.MarkedYAMLError as exc:
            raise self._syntax_error(exc) from None
        except yaml.reader.ReaderError as exc:      # a character YAML does not allow (e.g. NUL)
            line = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
            character = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
            raise ManifestError(path, line, f"invalid YAML: the character {character} is not allowed "
                                            "in a YAML file") from None
        except yaml.YAMLError as exc:
            raise ManifestError(path, None, f"invalid YAML: {exc}") from None
        except RecursionError:                      # should not happen past _Loader's depth check
            raise ManifestError(path, None, "invalid YAML: nested too deeply") from None

    def _syntax_error(self, exc: yaml.MarkedYAMLError) -> ManifestError:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        hint = ""
        if "alias" in (exc.problem or ""):
            hint = ' (pointer types start with "*", which YAML reads as an alias: quote them, e.g. "*fp32:16")'
        return ManifestError(self.path, line, f"invalid YAML: {problem}{hint}")

    # -- errors ---------------------------------------------------------------------------------

    def error(self, node: yaml.Node | None, message: str) -> ManifestError:
        return ManifestError(self.path, line_of(node), message)

    # -- typed access ---------------------------------------------------------------------------

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """``(key, key_node, value_node)`` for a mapping whose keys are unique strings."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping, got {kind_name(node)}")
        items, seen = [], {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":     # composed, never merged: no constructor runs
                raise self.error(key_node, f"merge keys ('<<') are not supported in {what}: write the keys out")
            key = self.scalar(key_node, f"a key in {what}")
            if not isinstance(key, str):
                raise self.error(key_node, f"keys in {what} must be names, got {kind_name(key_node)}")
            if key in seen:
                raise self.error(key_node, f"duplicate key '{key}' in {what} (first at line {seen[key]})")
            seen[key] = line_of(key_node)
            items.append((key, key_node, value_node))
        return items

    def sequence(self, node: yaml.Node, what: str, *, allow_empty: bool = False) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, f"{what} must be a list, got {kind_name(node)}")
        if not node.value and not allow_empty:
            raise self.error(node, f"{what} is an empty list")
        return list(node.value)

    def scalar(self, node: yaml.Node, what: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, f"{what} must be a single value, got {kind_name(node)}")
        try:
            return construct(node)
        except yaml.YAMLError as exc:
            raise self.error(node, f"invalid value for {what}: {getattr(exc, 'problem', exc)}") from None

    def string(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node, what)
        if not isinstance(value, str) or not value:
            raise self.error(node, f"{what} must be a non-empty string, got {kind_name(node)}")
        return value

    def check_keys(self, node: yaml.Node, keys: list[str], allowed: tuple[str, ...], what: str,
                   required: tuple[str, ...] = ()) -> None:
        """Reject keys not in *allowed* and report the first missing *required* key."""
        for key, key_node, _ in self.mapping(node, what):
            if key not in allowed:
                raise self.error(key_node, f"unknown key '{key}' in {what} (expected one of: {', '.join(allowed)})"
                                           + did_you_mean(key, allowed))
        for key in required:
            if key not in keys:
                raise self.error(node, f"{what} is missing the required key '{key}'")


def line_of(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None
