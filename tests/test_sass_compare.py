"""benchmarks/sass_compare.py: its parsers (exact), and a run of mytriton's side on the CPU."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import sass_compare  # noqa: E402


def test_resources_reads_the_first_functions_line():
    text = ("Resource usage:\n Common:\n  GLOBAL:0\n Function k_row_sum_kernel:\n"
            "  REG:34 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0\n")
    assert sass_compare.resources(text) == {"REG": 34, "STACK": 0, "SHARED": 1024, "LOCAL": 0, "TEXTURE": 0,
                                            "SURFACE": 0, "SAMPLER": 0}


def test_opcodes_count_predicated_instructions_by_their_first_part():
    sass = """
        /*0160*/              @!P1 BRA 0x710 ;                        /* 0x000005a000649947 */
        /*02e0*/              @!P5 LDG.E.128 R8, desc[UR8][R20.64+0x200] ;
        /*0310*/                   LDG.E R4, desc[UR8][R20.64] ;
        /*0320*/              @UP0 FFMA R1, R2, R3, R1 ;
        /*0330*/                   FFMA R1, R2, R3, R1 ;
                                                                      /* 0x000fe200078e00ff */
    """
    assert sass_compare.opcodes(sass) == {"BRA": 1, "LDG": 2, "FFMA": 2}


def test_hottest_loop_is_the_backward_branch_span_with_the_most_ffmas():
    sass = """
        /*0100*/                   FFMA R1, R2, R3, R1 ;
        /*0110*/                   LDG.E R4, desc[UR8][R20.64] ;
        /*0120*/              @P0 BRA 0x100 ;
        /*0130*/                   FFMA R1, R2, R3, R1 ;
        /*0140*/              @!P1 FFMA R1, R2, R3, R1 ;
        /*0150*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0160*/              @P1 BRA 0x130 ;
        /*0170*/                   BRA 0x180 ;
        /*0180*/                   EXIT ;
    """
    assert sass_compare.hottest_loop(sass) == (4, 2)
    assert sass_compare.hottest_loop("/*0000*/ EXIT ;") == (0, 0)


def test_loop_order_runs_the_memory_ops_and_math_in_issue_order():
    body = ["@!P5 LDG.E R1, desc[UR6][R2.64+0x80]", "LDG.E R3, desc[UR6][R2.64]", "IADD3 R0, R0, 0x1, RZ",
            "FADD R4, R4, R1", "@P0 LDG.E.128 R8, desc[UR6][R6.64]", "FFMA R4, R8, R9, R4", "FFMA R5, R8, R9, R5",
            "STS [R3], R0", "BAR.SYNC.DEFER_BLOCKING 0x0", "BRA 0x100"]
    assert sass_compare.loop_order(body) == "LDG2 FADD1 LDG1 FFMA2 STS1 BAR1"
    assert sass_compare.loop_order([]) == ""


def run(*args):
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sass_compare.py"), *args], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


def test_help_works():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout and "row_sum" in result.stdout


def test_a_config_must_name_every_constexpr():
    result = run("matmul", "--config", "BM=64")
    assert result.returncode == 2 and "--config must give BM, BN" in result.stderr


@pytest.mark.skipif(sass_compare.cuobjdump() is None, reason="no cuobjdump (pip install nvidia-cuda-cuobjdump)")
def test_mytriton_side_of_one_configuration(tmp_path):
    result = run("row_sum", "--config", "BLOCK=256", "--warps", "1", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("BLOCK=256 w1 :16"))
    regs = int(line.split("mytriton REG")[1].split()[0])
    assert 16 <= regs <= 255
    assert "LDG" in result.stdout and (tmp_path / "mytriton.sass").read_text().count("LDG.E.128") >= 2
