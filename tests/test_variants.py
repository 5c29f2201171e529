"""Specialized variants (mytriton/aot/variants.py) on the CPU: which promises the analysis gives a
specialization, read from the kernel (not from names), and what the manifest, the build, the
package and its loader say of them."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from mytriton.aot import ManifestError, build_packages, kernel_source, variants
from mytriton.aot.manifest import load_manifest
from test_aot_support import REPO, tree_bytes, write_project

ANALYZED = '''\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def gemm_renamed(p0, p1, p2, q0, q1, q2, q3, q4, q5, q6, q7, q8, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    """A row-major GEMM whose parameters say nothing of what they are: q3..q8 are its strides."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    k = tl.arange(0, BK)
    a = p0 + m[:, None] * q3 + k[None, :] * q4
    b = p1 + k[:, None] * q5 + n[None, :] * q6
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, q2, BK):
        x = tl.load(a, mask=(m[:, None] < q0) & (k[None, :] < q2 - kk), other=0.0)
        y = tl.load(b, mask=(k[:, None] < q2 - kk) & (n[None, :] < q1), other=0.0)
        acc = tl.dot(x, y, acc)
        a += BK * q4
        b += BK * q5
    tl.store(p2 + m[:, None] * q7 + n[None, :] * q8, acc.to(tl.float16), mask=(m[:, None] < q0) & (n[None, :] < q1))


@triton.jit
def column_copy(src, dst, rows, stride_row, stride_col, BLOCK: tl.constexpr):
    """Copies a column: along its one axis the rows step by stride_row, so that is the unit stride
    (stride_col only picks the column)."""
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + r * stride_row + 3 * stride_col, mask=r < rows)
    tl.store(dst + r, x, mask=r < rows)


@triton.jit(do_not_specialize=["stride"], do_not_specialize_on_alignment=["x", "n"])
def strided_scale(x, out, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs * stride, mask=offs < n)
    tl.store(out + offs, v * 2.0, mask=offs < n)


@triton.jit
def wrapped_rows(src, dst, n, stride_n, BLOCK: tl.constexpr):
    """Offsets wrapped around the row (``% n``, as Triton's tutorial GEMM wraps its tiles): a run
    only where n is a multiple of 16, so stride_n is the unit stride only in the common case."""
    cols = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % n
    tl.store(dst + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), tl.load(src + cols * stride_n))


@triton.jit
def scalar_sum(x, out, n, count):
    """Reads one value at a time: no access it makes can move a vector, whatever it is promised."""
    total = 0.0
    for i in range(0, count):
        total += tl.load(x + i * n)
    tl.store(out, total)
'''

PLAIN_GEMM = {"p0": "*fp16", "p1": "*fp16", "p2": "*fp16", **{f"q{i}": "i32" for i in range(9)}}


def analyze(tmp_path: Path, function: str, signature: dict, constexprs: dict, num_warps: int = 4):
    """The Variant the analysis gives one specialization of a kernel of ANALYZED."""
    (tmp_path / "analyzed.py").write_text(ANALYZED)
    source = kernel_source.resolve(f"analyzed.py:{function}", str(tmp_path))
    fn = kernel_source.load(source)
    job = variants.AnalysisJob(source, tuple(signature.items()), tuple(constexprs.items()), num_warps,
                               kernel_key=fn.cache_key)
    result = variants.analyze_job(job)
    assert isinstance(result, variants.Variant), result
    return result


def test_the_unit_strides_are_read_from_the_kernel_not_from_names(tmp_path):
    got = analyze(tmp_path, "gemm_renamed", PLAIN_GEMM, {"BM": 64, "BN": 64, "BK": 32})
    # q4, q6, q8 are the inner strides (k of A, n of B and C): compiled in as 1; the pointers aligned;
    # K (q2), N (q1) and the row strides divisible by 16; M (q0) only bounds rows, so it stays plain
    assert dict(got.signature) == {"p0": "*fp16:16", "p1": "*fp16:16", "p2": "*fp16:16", "q0": "i32",
                                   "q1": "i32:16", "q2": "i32:16", "q3": "i32:16", "q4": "i32:1", "q5": "i32:16",
                                   "q6": "i32:1", "q7": "i32:16", "q8": "i32:1"}
    assert got.why == ("promises p0, p1, p2 16-byte aligned; q1, q2, q3, q5, q7 divisible by 16; q4, q6, q8 equal "
                       "to 1 (unit strides); leaves q0 plain (no memory access depends on it)")


def test_the_stride_of_the_fastest_axis_is_the_unit_one(tmp_path):
    got = analyze(tmp_path, "column_copy", {"src": "*fp32", "dst": "*fp32", "rows": "i32", "stride_row": "i32",
                                            "stride_col": "i32"}, {"BLOCK": 128})
    assert dict(got.signature)["stride_row"] == "i32:1"
    assert dict(got.signature)["stride_col"] in ("i32", "i32:16")       # (never compiled in as 1)


@pytest.mark.skipif(not hasattr(__import__("mytriton.passes.axisinfo", fromlist=["x"]).AxisAnalysis, "rule_mod"),
                    reason="this axis analysis keeps no runs through %")
def test_unit_strides_are_looked_for_with_the_other_promises_made(tmp_path):
    got = analyze(tmp_path, "wrapped_rows", {"src": "*fp32", "dst": "*fp32", "n": "i32", "stride_n": "i32"},
                  {"BLOCK": 128})
    assert dict(got.signature) == {"src": "*fp32:16", "dst": "*fp32:16", "n": "i32:16", "stride_n": "i32:1"}


def test_do_not_specialize_leaves_parameters_as_triton_does(tmp_path):
    got = analyze(tmp_path, "strided_scale", {"x": "*fp32", "out": "*fp32", "n": "i32", "stride": "i32"},
                  {"BLOCK": 128})
    # stride: do_not_specialize (neither 1 nor :16); x and n: no alignment or divisibility promise
    assert dict(got.signature) == {"x": "*fp32", "out": "*fp32:16", "n": "i32", "stride": "i32"}


def test_no_variant_where_no_promise_changes_an_access_or_all_are_written(tmp_path):
    got = analyze(tmp_path, "scalar_sum", {"x": "*fp32", "out": "*fp32", "n": "i32", "count": "i32"}, {})
    assert got.signature is None
    assert got.why == "no promise changes what the compiler proves of its memory accesses"
    written = analyze(tmp_path, "column_copy", {"src": "*fp32:16", "dst": "*fp32:16", "rows": "i32:16",
                                                "stride_row": "i32:1", "stride_col": "i32:16"}, {"BLOCK": 128})
    assert written.signature is None and written.why == "its signature promises all it can already"


def test_a_kernel_that_does_not_compile_has_no_variant_and_says_why(tmp_path):
    got = analyze(tmp_path, "gemm_renamed", PLAIN_GEMM, {"BM": 64, "BN": 64, "BK": 48})
    assert got.signature is None and got.why.startswith("the analysis failed ("), got.why


def test_gemm_plain_gets_the_promises_gemm_yaml_writes_by_hand():
    """manifests/gemm_plain.yaml's specializations get what manifests/gemm.yaml spells out, except
    that M (which bounds rows only) stays plain."""
    hand = load_manifest(str(REPO / "manifests" / "gemm.yaml"))
    plain = load_manifest(str(REPO / "manifests" / "gemm_plain.yaml"))
    for written, entry in zip(hand.kernels[:1], plain.kernels[:1]):
        spec = entry.specializations[1]
        job = variants.AnalysisJob(entry.source, entry.params, spec.constexprs, spec.num_warps, spec.num_stages,
                                   kernel_key=entry.jit_fn.cache_key)
        got = dict(variants.analyze_job(job).signature)
        assert got == {**dict(written.params), "M": "i32"}


def test_the_analysis_key_covers_what_the_answer_depends_on(tmp_path):
    from mytriton.aot.package import templates_dir
    from mytriton.aot.toolchain import current
    toolchain = current(templates_dir())
    source = kernel_source.KernelSource("k.py:f", "f")
    job = variants.AnalysisJob(source, (("x", "*fp32"), ("n", "i32")), (("B", 64),), 4)
    key = variants.analysis_key(toolchain, "abc", job)
    others = [variants.analysis_key(toolchain, "abd", job),
              variants.analysis_key(toolchain, "abc", variants.AnalysisJob(source, (("x", "*fp32:16"), ("n", "i32")),
                                                                         (("B", 64),), 4)),
              variants.analysis_key(toolchain, "abc", variants.AnalysisJob(source, job.signature, (("B", 64.0),), 4)),
              variants.analysis_key(toolchain, "abc", variants.AnalysisJob(source, job.signature, (("B", 64),), 8))]
    assert len({key, *others}) == 5 and variants.analysis_key(toolchain, None, job) is None


# -- the manifest ---------------------------------------------------------------------------------

ADD = '''\
package: small
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32", y_ptr: "*fp32", out_ptr: "*fp32:16", n: i32}
    constexprs:
      BLOCK: [64, 256]
'''


@pytest.mark.parametrize("value, message", [
    ("yes please", "m.yaml:6: specialize must be true or false (whether to also build the specialized variants "
                   "of its specializations), got str 'yes please'"),
    ("1", "m.yaml:6: specialize must be true or false (whether to also build the specialized variants of its "
          "specializations), got int 1"),
])
def test_specialize_must_be_a_boolean(tmp_path, value, message):
    path = write_project(tmp_path, ADD.replace("    constexprs:", f"    specialize: {value}\n    constexprs:"))
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    assert str(info.value) == f"{path.parent}/{message}" or str(info.value).endswith(message), str(info.value)


def test_a_misspelled_specialize_gets_did_you_mean(tmp_path):
    path = write_project(tmp_path, ADD.replace("    constexprs:", "    specialise: false\n    constexprs:"))
    with pytest.raises(ManifestError, match=r"m\.yaml:6: unknown key 'specialise' in kernel entry .*; did you mean "
                                            r"'specialize'\?"):
        load_manifest(str(path))


# -- the build ------------------------------------------------------------------------------------

def build(manifest: Path, out: Path, **options) -> list[str]:
    lines: list[str] = []
    options.setdefault("notify", lambda remark: None)
    build_packages([str(manifest)], out_dir=str(out), jobs=1, echo=lines.append, **options)
    return lines


def test_the_build_says_what_it_made_and_manifest_json_lists_the_variants(tmp_path):
    lines = build(write_project(tmp_path, ADD), tmp_path / "out")
    assert re.fullmatch(r"small: 2 specializations \(\+2 specialized variants\) for sm_90: 4 compiled, 0 cached in "
                        r"\d+\.\d s -> .*/out/small", lines[-1]), lines[-1]
    info = json.loads((tmp_path / "out/small/manifest.json").read_text())
    spec = info["kernels"]["add_kernel"]["specializations"][0]
    specialized, plain = spec["variants"]
    assert specialized["signature"] == [["x_ptr", "*fp32:16"], ["y_ptr", "*fp32:16"], ["out_ptr", "*fp32:16"],
                                        ["n", "i32:16"]]
    assert plain == {"name": "plain", "signature": [["x_ptr", "*fp32"], ["y_ptr", "*fp32"], ["out_ptr", "*fp32:16"],
                                                    ["n", "i32"]]}
    assert specialized["images"]["sm_90"] == "kernels/add_kernel/BLOCK64_w4.specialized.sm_90.cubin"
    assert spec["specialize"]["why"] == "promises x_ptr, y_ptr 16-byte aligned; n divisible by 16"
    loader = (tmp_path / "out/small/__init__.py").read_text()
    assert loader.count("'specialized': {") == 2 and "'signature': [('x_ptr', '*fp32:16')," in loader


def test_specialize_false_builds_the_signature_as_written(tmp_path):
    lines = build(write_project(tmp_path, ADD.replace("    constexprs:", "    specialize: false\n    constexprs:")),
                  tmp_path / "out")
    assert "2 specializations for sm_90: 2 compiled" in lines[-1] and not any("analyzed" in line for line in lines)
    info = json.loads((tmp_path / "out/small/manifest.json").read_text())
    spec = info["kernels"]["add_kernel"]["specializations"][0]
    assert [v["name"] for v in spec["variants"]] == ["plain"]
    assert spec["specialize"] == {"analysis": None, "signature": None, "why": "specialize: false in the manifest"}
    assert "specialized" not in (tmp_path / "out/small/__init__.py").read_text().split('"""', 2)[2]


def test_analyses_are_kept_in_the_shared_cache_and_shards_assemble_the_same_package(tmp_path):
    manifest = write_project(tmp_path, ADD.replace("BLOCK: [64, 256]", "BLOCK: [64, 128, 256]"))
    cache = tmp_path / "cache"
    local = build(manifest, tmp_path / "local", cache_dir=cache)
    assert local[0].startswith("analyzed 3 specializations") and len(list((cache / "variants").rglob("*.json"))) == 3
    fresh = tmp_path / "cache2"
    for i in (1, 2):
        build(manifest, tmp_path / "sharded", cache_dir=fresh, shard=(i, 2))
    assembled = build(manifest, tmp_path / "sharded", cache_dir=fresh)
    # the shards analyzed and compiled everything: the assembling build analyzes and compiles nothing
    assert not any(line.startswith("analyzed") for line in assembled), assembled
    assert "0 compiled, 6 cached" in assembled[-1], assembled[-1]
    assert tree_bytes(tmp_path / "sharded" / "small") == tree_bytes(tmp_path / "local" / "small")
    again = build(manifest, tmp_path / "third", cache_dir=cache)
    assert not any(line.startswith("analyzed") for line in again) and "0 compiled, 6 cached" in again[-1]


def test_a_damaged_analysis_in_the_shared_cache_is_analyzed_again(tmp_path):
    manifest = write_project(tmp_path, ADD)
    cache = tmp_path / "cache"
    build(manifest, tmp_path / "one", cache_dir=cache)
    for path in (cache / "variants").rglob("*.json"):
        record = json.loads(path.read_text())
        inner = json.loads(record["record"])
        inner["signature"] = [["x_ptr", "*fp32:16"], ["y_ptr", "*fp32"], ["out_ptr", "*fp32"], ["n", "i32:1"]]
        path.write_text(json.dumps({"sha256": record["sha256"], "record": json.dumps(inner, sort_keys=True)}))
    lines = build(manifest, tmp_path / "two", cache_dir=cache)
    assert lines[0].startswith("analyzed 2 specializations"), lines
    assert tree_bytes(tmp_path / "two" / "small") == tree_bytes(tmp_path / "one" / "small")


def test_a_cached_record_that_breaks_the_plain_promises_is_refused():
    from mytriton.aot.cache import variant_from
    plain = (("x", "*fp32:16"), ("n", "i32"))
    assert variant_from({"signature": [["x", "*fp32:16"], ["n", "i32:16"]], "why": "w"}, plain).signature == \
        (("x", "*fp32:16"), ("n", "i32:16"))
    for bad in ([["x", "*fp32"], ["n", "i32:16"]],           # drops x's promise
                [["x", "*fp32:16"], ["n", "i32"]],           # promises nothing more
                [["n", "i32:16"], ["x", "*fp32:16"]],        # other order
                [["x", "*fp32:16"], ["n", "fp32"]],          # another type
                [["x", "*fp32:16"]], "x", [["x", 1, 2]]):
        assert variant_from({"signature": bad, "why": "w"}, plain) is None, bad
    assert variant_from({"signature": None, "why": "none"}, plain).why == "none"
    assert variant_from({"signature": None}, plain) is None


# -- tuning ---------------------------------------------------------------------------------------

def test_a_tuning_record_says_which_variant_each_config_ran_and_the_report_notes_plain_runs(tmp_path):
    """--tune-from takes a record whose problems say which variant each config was timed on (a
    config runs its specialized variant where the problem's arguments keep its promises); the
    report notes the configs timed on their plain variant; a malformed ``variants`` is refused."""
    import copy
    from mytriton.aot import UsageError, tuning
    from test_autotune_build import RECORD, TUNED
    record = copy.deepcopy(RECORD)
    record["kernels"]["add_kernel"]["problems"][0]["variants"] = ["specialized", "specialized", "plain"]
    record["kernels"]["add_kernel"]["problems"][1]["variants"] = ["specialized"] * 3
    (tmp_path / "rec.json").write_text(json.dumps(record))
    path = write_project(tmp_path, TUNED)
    lines = build(path, tmp_path / "out", tune_from=[str(tmp_path / "rec.json")])
    assert "(+3 specialized variants)" in lines[-1]
    report = (tmp_path / "out" / "tuned" / "tuning.txt").read_text()
    assert ("note: BLOCK=1024 w4 @ n=1000: timed on its plain variant (the problem's arguments break a promise of "
            "its specialized variant)") in report
    assert report.count("timed on its plain variant") == 1
    manifest = load_manifest(str(path))
    for bad in (["specialized"], ["specialized", "fast", "plain"], "plain"):
        record["kernels"]["add_kernel"]["problems"][1]["variants"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(record))
        with pytest.raises(UsageError, match=r"problem 2 \(n=1000000 kind=big\): variants must list one of "
                                             r"\"specialized\", \"plain\" or null per config \(3\)"):
            tuning.load_recorded([str(tmp_path / "bad.json")], [manifest])
