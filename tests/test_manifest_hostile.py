"""Hostile manifest values: every scalar of a manifest, replaced by one its tag cannot hold or of
the wrong kind, is a ManifestError at its own line (never an internal error)."""
from __future__ import annotations

import pytest
import yaml

from mytriton.aot import ManifestError, load_manifest
from mytriton.aot.yamldoc import YamlDoc, construct
from test_aot_support import KERNELS, write_project

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

TUNED_KERNEL = '''

@triton.jit
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass
'''

# A valid manifest with a scalar of every kind the reader takes: keys at every level, package,
# version, targets, kernel references, signature types, constexpr values (product and explicit),
# num_warps, num_stages, every autotune field.
FULL = """\
package: pkg
version: 1.0.0
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs: {BLOCK: [64, 128]}
    num_warps: [4]
    num_stages: 2
  - kernel: kernels/k.py:scale_kernel
    signature:
      x_ptr: "*fp32"
      out_ptr: "*fp32"
      n: i32
      alpha: fp32
    specializations:
      - {BLOCK: 64, EVEN: true, num_warps: 4, num_stages: 2}
  - kernel: kernels/k.py:tuned_kernel
    signature: {x_ptr: "*fp32", n: i32}
    autotune:
      key: [n]
      configs:
        - {BLOCK: 64, num_warps: 2, num_stages: 3}
      problems:
        - {n: 1000, kind: big}
      inputs: kernels/k.py:not_a_kernel
      tolerance: {rtol: 0.1, atol: 0.01}
"""

# (bad scalar as written, fragment of the message)
UNHOLDABLE = [
    ('!!int ""', "tag:yaml.org,2002:int cannot hold ''"),
    ('!!int "_"', "tag:yaml.org,2002:int cannot hold '_'"),
    ('!!int "-"', "tag:yaml.org,2002:int cannot hold '-'"),
    ('!!int "0x"', "tag:yaml.org,2002:int cannot hold '0x'"),
    ('!!float ""', "tag:yaml.org,2002:float cannot hold ''"),
    ('!!float "_"', "tag:yaml.org,2002:float cannot hold '_'"),
    ('!!bool ""', "tag:yaml.org,2002:bool cannot hold ''"),
    ('!!bool "maybe"', "tag:yaml.org,2002:bool cannot hold 'maybe'"),
    ('!!timestamp "x"', "tag:yaml.org,2002:timestamp cannot hold 'x'"),
    ('!!timestamp ""', "tag:yaml.org,2002:timestamp cannot hold ''"),
    ('!!timestamp "2020-13-45"', "tag:yaml.org,2002:timestamp cannot hold '2020-13-45'"),
    ('"\\U00110000"', "invalid YAML: while scanning a double-quoted scalar the escape \\U00110000 is past the "
                     "last Unicode character (U+10FFFF)"),
    ('"\\UFFFFFFFF"', "the escape \\UFFFFFFFF is past the last Unicode character (U+10FFFF)"),
    ('"a\\ud800"', "the escape of U+D800 is a UTF-16 surrogate, not a character"),
    ("!nosuchtag x", "could not determine a constructor for the tag '!nosuchtag'"),
]
# Values YAML builds that no manifest field takes (the fragment is how the message shows them).
WRONG_KIND = [
    ('!!binary ""', "b''"),
    ("2020-01-01", "datetime.date(2020, 1, 1)"),
]


def scalar_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, line) of every scalar node in *text*, keys and values."""
    spans, todo = [], [yaml.compose(text)]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.ScalarNode):
            spans.append((node.start_mark.index, node.end_mark.index, node.start_mark.line + 1))
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
        else:
            todo += [part for pair in node.value for part in pair]
    return sorted(spans)


SPANS = scalar_spans(FULL)


def load_with(tmp_path, start: int, end: int, scalar: str):
    text = FULL[:start] + scalar + FULL[end:]
    path = write_project(tmp_path, text, kernels=KERNELS + TUNED_KERNEL)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    return path, str(info.value)


def test_the_full_manifest_is_valid(tmp_path):
    manifest = load_manifest(str(write_project(tmp_path, FULL, kernels=KERNELS + TUNED_KERNEL)))
    assert [entry.name for entry in manifest.kernels] == ["add_kernel", "scale_kernel", "tuned_kernel"]
    assert len(SPANS) > 50


@pytest.mark.parametrize("scalar, fragment", UNHOLDABLE + WRONG_KIND, ids=[s for s, _ in UNHOLDABLE + WRONG_KIND])
def test_every_scalar_position_reports_a_bad_value_at_its_line(tmp_path, scalar, fragment):
    for start, end, line in SPANS:
        path, message = load_with(tmp_path, start, end, scalar)
        where = f"{FULL[start:end]!r} (line {line})"
        assert message.startswith(f"{path}:{line}: "), (where, message)
        assert fragment in message, (where, message)


def test_bad_scalar_as_the_whole_manifest(tmp_path):
    for scalar, fragment in UNHOLDABLE[:3]:
        path = write_project(tmp_path, f"{scalar}\n")
        with pytest.raises(ManifestError) as info:
            load_manifest(str(path))
        assert str(info.value) == f"{path}:1: the manifest must be a mapping, got a value tagged " \
                                  f"{scalar.split()[0].replace('!!', 'tag:yaml.org,2002:')}"


def test_merge_keys_are_refused_at_their_line(tmp_path):
    path = write_project(tmp_path, "package: pkg\nbase: &b {targets: [sm_90]}\n<<: *b\nkernels: []\n")
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    assert str(info.value) == f"{path}:3: merge keys ('<<') are not supported in the manifest: write the keys out"


SAFE_TAGS = sorted(tag for tag in yaml.constructor.SafeConstructor.yaml_constructors if tag)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(tag=st.sampled_from(SAFE_TAGS + ["!local", "tag:yaml.org,2002:merge"]), value=st.text(max_size=12))
def test_constructing_any_tagged_scalar_is_a_value_or_a_yaml_error(tag, value):
    node = yaml.ScalarNode(tag, value, yaml.Mark("m.yaml", 0, 2, 0, None, None), None)
    try:
        construct(node)
    except yaml.YAMLError as exc:
        assert exc.problem_mark.line == 2


ESCAPES = st.sampled_from(["\\x00", "\\xff", "\\u0041", "\\uD800", "\\uDFFF", "\\U0010FFFF", "\\U00110000",
                           "\\UFFFFFFFF", "\\q", "\\", "\\N", "\\_", "\\L", "\\P", "\\e", "\\/"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(parts=st.lists(st.one_of(ESCAPES, st.text(alphabet="ab:[]{}#'\"&*!| \n-", max_size=4)), max_size=6))
def test_reading_any_double_quoted_text_is_a_document_or_a_manifest_error(parts):
    text = 'package: "' + "".join(parts) + '"\n'
    try:
        YamlDoc("m.yaml", text)
    except ManifestError as exc:
        assert exc.path == "m.yaml" and exc.line is not None and 1 <= exc.line <= text.count("\n") + 1
