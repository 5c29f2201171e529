"""Specializations and their ids: values of distinct identity (kind and exact bits) are distinct
specializations, values of one identity are duplicates; ids are unique (up to case too), stable and
short enough to be file names whatever the names and values."""
from __future__ import annotations

import pytest

from mytriton.aot import ManifestError, build_packages, load_manifest
from mytriton.aot.manifest import MAX_ID_LENGTH, MAX_NAME_LENGTH
from test_aot_support import KERNELS, write_project

HEAD = "package: pkg\ntargets: [sm_90]\nkernels:\n"
SCALE = '''

@triton.jit
def s_kernel(x_ptr, out_ptr, n, S: tl.constexpr):
    offs = tl.program_id(0) * 64 + tl.arange(0, 64)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) / S, mask=mask)
'''
ENTRY = '  - kernel: kernels/k.py:s_kernel\n    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32}\n'


def specializations(tmp_path, body: str, kernels: str = KERNELS + SCALE):
    return load_manifest(str(write_project(tmp_path, HEAD + ENTRY + body, kernels=kernels))).kernels[0].specializations


def refused(tmp_path, body: str) -> str:
    text = HEAD + ENTRY + body
    path = write_project(tmp_path, text, kernels=KERNELS + SCALE)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.rstrip().endswith("#<"))
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    return str(info.value).split(": ", 1)[1]


@pytest.mark.parametrize("values, ids", [
    ("[0.0, -0.0]", ["S0p0_w4", "Sm0p0_w4"]),
    ("[1, true]", ["S1_w4", "STrue_w4"]),
    ("[1, 1.0]", ["S1_w4", "S1p0_w4"]),
    ("[1, true, 1.0, 0.0, -0.0, false, 0]", ["S1_w4", "STrue_w4", "S1p0_w4", "S0p0_w4", "Sm0p0_w4", "SFalse_w4",
                                             "S0_w4"]),
])
def test_values_of_distinct_identity_are_distinct_specializations(tmp_path, values, ids):
    product = specializations(tmp_path, f"    constexprs: {{S: {values}}}\n")
    assert [s.id for s in product] == ids
    explicit = specializations(tmp_path, "    specializations:\n" + "".join(
        f"      - {{S: {v}}}\n" for v in values.strip("[]").split(", ")))
    assert [s.id for s in explicit] == ids
    assert [repr(dict(s.constexprs)["S"]) for s in product] == [repr(dict(s.constexprs)["S"]) for s in explicit]


def test_a_manifest_nan_is_python_s_nan(tmp_path):
    """``.nan`` and ``!!float nan`` are the NaN a launch passes (float("nan"), math.nan): PyYAML's
    inf / inf would set the sign bit."""
    from mytriton.runtime.driver import constexpr_identity
    (only,) = specializations(tmp_path, "    constexprs: {S: [.nan]}\n")
    assert only.id == "Snan_w4" and constexpr_identity(dict(only.constexprs)["S"]) == constexpr_identity(float("nan"))
    assert refused(tmp_path, "    constexprs:\n      S: [.nan, !!float nan]  #<\n").startswith(
        "duplicate value nan in constexprs.S")


@pytest.mark.parametrize("body, message", [
    ("    constexprs:\n      S: [.nan, .nan]  #<\n", "duplicate value nan in constexprs.S"),
    ("    constexprs:\n      S: [-0.0, 1, -0.0]  #<\n", "duplicate value -0.0 in constexprs.S"),
    ("    constexprs:\n      S: [true, 1, 1.0, true]  #<\n", "duplicate value True in constexprs.S"),
    ("    specializations:\n      - {S: .nan}\n      - {S: .nan}  #<\n",
     "duplicate specialization S=nan w4 (first at line 7)"),
    ("    specializations:\n      - {S: -0.0}\n      - {S: 0.0}\n      - {S: -0.0}  #<\n",
     "duplicate specialization S=-0.0 w4 (first at line 7)"),
])
def test_values_of_one_identity_are_duplicates(tmp_path, body, message):
    assert refused(tmp_path, body).startswith(message)


def test_autotune_configs_are_told_apart_by_identity(tmp_path):
    tuned = ("    autotune:\n      key: [n]\n      configs:\n        - {S: 0.0}\n        - {S: -0.0}\n"
             "        - {S: 1}\n        - {S: 1.0}\n        - {S: true}\n"
             "      problems: [{n: 1}]\n      inputs: kernels/k.py:not_a_kernel\n")
    assert [s.id for s in specializations(tmp_path, tuned)] == ["S0p0_w4", "Sm0p0_w4", "S1_w4", "S1p0_w4",
                                                                 "STrue_w4"]
    twice = tuned.replace("        - {S: true}\n", "        - {S: .nan}\n        - {S: .nan}  #<\n")
    assert refused(tmp_path, twice).startswith("duplicate config S=nan w4 (first at line 13)")


def test_ids_equal_up_to_case_or_spelling_get_a_hash(tmp_path):
    ids = [s.id for s in specializations(tmp_path, '    constexprs: {S: ["True", true, "A", "a", "a b", "a/b"]}\n')]
    assert len({i.lower() for i in ids}) == 6
    assert all(i.startswith(prefix) and len(i) == len(prefix) + 8 for i, prefix in
               zip(ids, ["STrue_w4_", "STrue_w4_", "SA_w4_", "Sa_w4_", "Sa_b_w4_", "Sa_b_w4_"]))


LONG = '''

@triton.jit
def long_kernel(x_ptr, NAME: tl.constexpr, %s: tl.constexpr):
    pass
''' % ("L" * 200)


def long_entry(values: list[str]) -> str:
    return ('  - kernel: kernels/k.py:long_kernel\n    signature: {x_ptr: "*fp32"}\n    specializations:\n'
            + "".join(f'      - {{NAME: "{v}", {"L" * 200}: 1}}\n' for v in values))


def long_ids(tmp_path, values: list[str]) -> list[str]:
    path = write_project(tmp_path, HEAD + long_entry(values), kernels=KERNELS + LONG)
    return [s.id for s in load_manifest(str(path)).kernels[0].specializations]


def test_ids_of_long_values_and_names_are_bounded_unique_and_stable(tmp_path):
    a, b, short = "x" * 300, "x" * 299 + "y", "abc"
    ids = long_ids(tmp_path, [a, b, short])
    assert all(len(i) <= MAX_ID_LENGTH and (c.isalnum() or c == "_" for c in i) for i in ids), ids
    assert len({i.lower() for i in ids}) == 3
    assert ids[0].startswith("NAMExxxx") and ids[2].startswith("NAMEabc_LLLL")
    # an id of a cut part is a function of its own values: the same beside other specializations
    assert long_ids(tmp_path, [a]) == ids[:1] and long_ids(tmp_path, [b, short, a]) == [ids[1], ids[2], ids[0]]


def test_many_constexprs_keep_ids_bounded(tmp_path):
    names = [f"C{i}" for i in range(60)]
    kernel = (KERNELS + "\n\n@triton.jit\ndef many_kernel(x_ptr, " + ", ".join(f"{n}: tl.constexpr" for n in names)
              + "):\n    pass\n")
    body = ('  - kernel: kernels/k.py:many_kernel\n    signature: {x_ptr: "*fp32"}\n    constexprs:\n'
            + "".join(f"      {n}: [1000000]\n" for n in names[:-1]) + f"      {names[-1]}: [1, 2]\n")
    ids = [s.id for s in load_manifest(str(write_project(tmp_path, HEAD + body, kernels=kernel))).kernels[0]
           .specializations]
    assert len(ids) == 2 and ids[0] != ids[1] and all(len(i) <= MAX_ID_LENGTH for i in ids)
    assert ids[0].startswith("C01000000_C11000000_")


def test_a_long_string_constexpr_builds(tmp_path):
    path = write_project(tmp_path, HEAD + long_entry(["x" * 300, "x" * 299 + "y"]), kernels=KERNELS + LONG)
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None)
    folder = tmp_path / "out" / "pkg" / "kernels" / "long_kernel"
    assert len(list(folder.glob("*.sm_90.cubin"))) == 2


def test_zero_and_negative_zero_build_two_kernels(tmp_path):
    path = write_project(tmp_path, HEAD + ENTRY + "    constexprs: {S: [0.0, -0.0]}\n", kernels=KERNELS + SCALE)
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None)
    folder = tmp_path / "out" / "pkg" / "kernels" / "s_kernel"
    assert sorted(p.name for p in folder.glob("*w4.sm_90.cubin")) == ["S0p0_w4.sm_90.cubin", "Sm0p0_w4.sm_90.cubin"]
    assert (folder / "S0p0_w4.cu").read_bytes() != (folder / "Sm0p0_w4.cu").read_bytes()


@pytest.mark.parametrize("where", ["package", "kernel"])
def test_names_too_long_for_a_folder_are_manifest_errors(tmp_path, where):
    name = "k" * (MAX_NAME_LENGTH + 1)
    if where == "package":
        text = f"package: {name}\ntargets: [sm_90]\nkernels:\n" + ENTRY + "    constexprs: {S: [1]}\n"
        expected = f"{where} '{name}' is longer than {MAX_NAME_LENGTH} characters (it names a folder)"
        kernels, line = KERNELS + SCALE, 1
    else:
        text = HEAD + f"  - kernel: kernels/k.py:{name}\n    signature: {{x_ptr: \"*fp32\"}}\n"
        kernels, line = KERNELS + f"\n\n@triton.jit\ndef {name}(x_ptr):\n    pass\n", 4
        expected = (f"kernel name '{name}' is longer than {MAX_NAME_LENGTH} characters (it names the folder "
                    f"kernels/{name}/)")
    path = write_project(tmp_path, text, kernels=kernels)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    assert str(info.value) == f"{path}:{line}: {expected}"


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from mytriton.aot.manifest import spec_ids  # noqa: E402
from mytriton.runtime.driver import constexpr_identity  # noqa: E402

VALUES = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.0, float("nan"), float("inf")]),
                   st.text(alphabet="aAbB01-./ _é", max_size=5), st.text(min_size=30, max_size=80))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(rows=st.lists(st.tuples(st.tuples(VALUES, VALUES), st.sampled_from([1, 4]), st.sampled_from([None, 2, 3])),
                     max_size=12),
       names=st.sampled_from([("A", "a"), ("BM", "bm"), ("X" * 40, "Y")]))
def test_ids_of_distinct_identities_are_distinct_up_to_case(rows, names):
    combos, seen = [], set()
    for values, warps, stages in rows:
        identity = (tuple(constexpr_identity(v) for v in values), warps, stages)
        if identity not in seen:
            seen.add(identity)
            combos.append((tuple(zip(names, values)), warps, None, stages))
    ids = spec_ids(combos)
    assert len({i.lower() for i in ids}) == len(combos), ids
    assert all(0 < len(i) <= MAX_ID_LENGTH and i.isascii() and all(c.isalnum() or c == "_" for c in i) for i in ids)
    assert spec_ids(combos) == ids


def test_kernel_names_equal_up_to_case_are_refused(tmp_path):
    kernels = KERNELS + "\n\n@triton.jit\ndef Add_kernel(x_ptr):\n    pass\n"
    text = (HEAD + '  - kernel: kernels/k.py:add_kernel\n    signature: {x_ptr: "*fp32", y_ptr: "*fp32", '
            'out_ptr: "*fp32", n: i32}\n    constexprs: {BLOCK: [64]}\n'
            '  - kernel: kernels/k.py:Add_kernel\n    signature: {x_ptr: "*fp32"}\n')
    path = write_project(tmp_path, text, kernels=kernels)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    assert str(info.value) == (f"{path}:7: kernels 'add_kernel' (line 4) and 'Add_kernel' differ only in case: on a "
                               "case-insensitive file system their folders kernels/add_kernel/ and kernels/Add_kernel/ "
                               "would be one")


def test_an_id_within_the_bound_stays_readable_and_one_past_it_is_cut_and_hashed(tmp_path):
    fits, over = "a" * (MAX_ID_LENGTH - 4), "b" * (MAX_ID_LENGTH - 3)      # S<value>_w4
    first, second = specializations(tmp_path, f'    constexprs: {{S: ["{fits}", "{over}"]}}\n')
    assert first.id == f"S{fits}_w4"
    assert second.id.startswith("S" + "b" * 31 + "_w4_") and len(second.id) == 1 + 31 + 4 + 8
