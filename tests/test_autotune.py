"""@autotune / @heuristics / Config on the CPU: Triton's signatures, the heuristics' constexprs, the
interpreter's choice (the first config), conflicts and bad keys, the choice per key and on disk
(timing replaced by a recorded table), and compile() / the build tool looking through them."""
import numpy as np
import pytest

import mytriton as triton
from mytriton.frontend.autotune import Autotuner, Config, unwrap
from tests.kernels import autotuned as A

RNG = np.random.default_rng(3)


def test_config_spells_like_triton():
    c = Config({"BLOCK": 128}, num_warps=8, num_stages=2)
    assert c.all_kwargs() == {"BLOCK": 128, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert str(c) == "BLOCK: 128, num_warps: 8, num_stages: 2, num_ctas: 1"
    assert c == Config({"BLOCK": 128}, num_warps=8, num_stages=2) and c != Config({"BLOCK": 64})
    assert triton.Config is Config


@pytest.mark.parametrize("n", [1000, 1024])
def test_interpreter_runs_the_first_config_with_the_heuristics(n):
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    A.scaled_add[A.grid](x, y, out, n, 0.5)
    np.testing.assert_allclose(out, x + np.float32(0.5) * y, rtol=1e-6)
    assert A.scaled_add.best_config == A.scaled_add.configs[0]


def test_redefining_a_tuned_constexpr_is_an_error():
    x = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK. Make sure that you don't re-define"):
        A.scaled_add[(1,)](x, x, x, 64, 1.0, BLOCK=64)


def test_a_key_that_is_not_a_parameter_is_an_error():
    with pytest.raises(ValueError, match=r"key names \['m'\] that are not parameters of scaled_add"):
        triton.autotune(configs=[Config({})], key=["m"])(unwrap(A.scaled_add))
    with pytest.raises(ValueError, match="configs must list at least one Config"):
        triton.autotune(configs=[], key=[])(unwrap(A.scaled_add))


def test_compile_looks_through_the_decorators():
    ck = triton.compile(A.scaled_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                       "alpha": "fp32"}, {"BLOCK": 64, "EVEN": True})
    assert ck.metadata["name"] == "k_scaled_add" and "mask" not in ck.asm["cu"].split("k_scaled_add")[-1]


class FakeKernel:
    """Stands in for a @jit kernel on a GPU: records launches; the table gives each config's time."""

    arg_names = ["x", "n"]
    __name__ = "fake"
    cache_key = "digest of the fake kernel's source"

    def __init__(self, times):
        self.times, self.launches = times, []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append((grid, args, kwargs))


def tuner(times, tmp_path, monkeypatch, **options):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))
    configs = [Config({"B": b}, num_warps=w) for b, w in ((64, 2), (128, 4), (256, 8))]
    fake = FakeKernel(times)
    t = Autotuner(fake, fake.arg_names, configs, ["n"], do_bench=lambda call: (call(), fake.times[fake.launches[-1][2]["B"]])[1],
                  **options)
    monkeypatch.setattr(Autotuner, "_gpu", staticmethod(lambda: "Test GPU sm_90"))
    return t, fake


def test_the_fastest_config_is_chosen_per_key_and_kept_on_disk(tmp_path, monkeypatch):
    t, fake = tuner({64: 3.0, 128: 1.0, 256: 2.0}, tmp_path, monkeypatch)
    t[(1,)]("x", 4096)
    assert t.best_config.kwargs == {"B": 128} and fake.launches[-1][2]["B"] == 128
    assert len(fake.launches) == 3 + 1                    # three timed, one launch
    assert t.timings[(4096,)] == {c: fake.times[c.kwargs["B"]] for c in t.configs}
    t[(1,)]("x", 4096)                                     # the same key: no timing
    assert len(fake.launches) == 5
    files = list((tmp_path / "autotune").glob("*.json"))
    assert len(files) == 1 and '"config": "B: 128, num_warps: 4, num_stages: 3, num_ctas: 1"' in files[0].read_text()
    # a new process (a new Autotuner) with other timings reads the recorded choice: nothing is timed
    t2, fake2 = tuner({64: 0.5, 128: 1.0, 256: 2.0}, tmp_path, monkeypatch)
    t2[(1,)]("x", 4096)
    assert t2.best_config.kwargs == {"B": 128} and len(fake2.launches) == 1
    # another key is timed again
    t2[(1,)]("x", 8192)
    assert t2.best_config.kwargs == {"B": 64} and len(fake2.launches) == 1 + 3 + 1


def test_cache_results_false_keeps_nothing_on_disk(tmp_path, monkeypatch):
    t, _ = tuner({64: 3.0, 128: 1.0, 256: 2.0}, tmp_path, monkeypatch, cache_results=False)
    t[(1,)]("x", 4096)
    assert t.best_config.kwargs == {"B": 128} and not (tmp_path / "autotune").exists()


def test_configs_that_fail_are_skipped_with_their_reason(tmp_path, monkeypatch):
    from mytriton.errors import CompilationError
    t, fake = tuner({64: 3.0, 128: 1.0, 256: 2.0}, tmp_path, monkeypatch)

    def bench(call):
        call()
        b = fake.launches[-1][2]["B"]
        if b == 128:
            raise CompilationError("too much shared memory: 300000 bytes")
        return fake.times[b]
    t.user_do_bench = bench
    t[(1,)]("x", 4096)
    assert t.best_config.kwargs == {"B": 256}
    assert list(t.failures[(4096,)].values()) == ["CompilationError: error: too much shared memory: 300000 bytes"]


def test_pruning_by_early_prune_and_perf_model(tmp_path, monkeypatch):
    t, fake = tuner({64: 3.0, 128: 1.0, 256: 2.0}, tmp_path, monkeypatch, prune_configs_by={
        "early_config_prune": lambda configs, named: [c for c in configs if c.kwargs["B"] <= named["n"] // 16],
        "perf_model": lambda **kw: kw["B"], "top_k": 1})
    t[(1,)]("x", 2048)                                     # B <= 128, then the model's best: B = 64
    assert t.best_config.kwargs == {"B": 64} and len(fake.launches) == 1


def test_heuristics_see_every_argument_by_name():
    from mytriton.frontend.autotune import Heuristics
    seen = []
    fake = FakeKernel({})
    h = Heuristics(fake, fake.arg_names, {"EVEN": lambda a: seen.append(dict(a)) or a["n"] % a["B"] == 0,
                                          "HALF": lambda a: a["B"] // 2})
    h[(1,)]("x", 128, B=64)
    h[(1,)]("x", 100, B=64)
    assert seen == [{"x": "x", "n": 128, "B": 64}, {"x": "x", "n": 100, "B": 64}]
    assert [kw for _, _, kw in fake.launches] == [{"B": 64, "EVEN": True, "HALF": 32}, {"B": 64, "EVEN": False, "HALF": 32}]
