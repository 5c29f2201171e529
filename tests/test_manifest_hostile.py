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


# -- kernel and inputs files reached through symbolic links -----------------------------------------

ADD_ENTRY = ('  - kernel: {ref}\n    signature: {{x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", '
             'n: i32}}\n    constexprs: {{BLOCK: [64]}}\n')
TUNED_ENTRY = ('  - kernel: kernels/k.py:tuned_kernel\n    signature: {{x_ptr: "*fp32", n: i32}}\n    autotune:\n'
               '      key: [n]\n      configs: [{{BLOCK: 64}}]\n      problems: [{{n: 1}}]\n      inputs: {ref}\n')
HEAD = "package: pkg\ntargets: [sm_90]\nkernels:\n"


def linked_project(tmp_path, entry: str, ref: str, link: str, target):
    """A project in tmp_path/p whose *link* (relative to it) is a symbolic link to *target*."""
    project = tmp_path / "p"
    path = write_project(project, HEAD + entry.format(ref=ref), kernels=KERNELS + TUNED_KERNEL)
    (project / link).symlink_to(target)
    return path


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "k.py").write_text(KERNELS + TUNED_KERNEL)
    return folder


@pytest.mark.parametrize("entry, ref, link, line, what", [
    (ADD_ENTRY, "kernels/link.py:add_kernel", "kernels/link.py", 4, "kernel"),
    (ADD_ENTRY, "linked/k.py:add_kernel", "linked", 4, "kernel"),
    (TUNED_ENTRY, "kernels/link.py:not_a_kernel", "kernels/link.py", 10, "inputs"),
], ids=["kernel file", "kernel folder", "inputs file"])
def test_a_symbolic_link_out_of_the_manifest_folder_is_outside(tmp_path, outside, entry, ref, link, line, what):
    target = outside / "k.py" if link.endswith(".py") else outside
    path = linked_project(tmp_path, entry, ref, link, target)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    location = ref.rpartition(":")[0]
    assert str(info.value) == (f"{path}:{line}: {what} file '{location}' is outside the manifest's folder "
                               f"({path.parent}): it is {outside / 'k.py'} (through a symbolic link); move it "
                               "there, or pass --allow-outside")
    assert load_manifest(str(path), allow_outside=True).package == "pkg"


@pytest.mark.parametrize("entry, ref, link, target", [
    (ADD_ENTRY, "kernels/link.py:add_kernel", "kernels/link.py", "k.py"),
    (ADD_ENTRY, "alias/k.py:add_kernel", "alias", "kernels"),
    (TUNED_ENTRY, "kernels/link.py:not_a_kernel", "kernels/link.py", "k.py"),
], ids=["kernel file", "kernel folder", "inputs file"])
def test_a_symbolic_link_that_stays_inside_is_fine(tmp_path, entry, ref, link, target):
    path = linked_project(tmp_path, entry, ref, link, target)
    entry = load_manifest(str(path)).kernels[0]
    assert ref in (entry.portable_ref, entry.autotune and entry.autotune.inputs_ref)


def test_a_manifest_folder_reached_through_a_symbolic_link_is_its_folder(tmp_path):
    write_project(tmp_path / "real", HEAD + ADD_ENTRY.format(ref="kernels/k.py:add_kernel"))
    (tmp_path / "via").symlink_to(tmp_path / "real")
    assert load_manifest(str(tmp_path / "via" / "m.yaml")).kernels[0].name == "add_kernel"
