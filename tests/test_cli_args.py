"""The command line's numbers: --shard I/N, -j/--jobs N and --max-specializations N take ASCII
digits only, and a bad value (one starting with '-' too) is named with what is wrong with it."""
from __future__ import annotations

import pytest

from mytriton.aot import cli
from test_aot_support import assert_no_traceback, run_cli

SHARD = "argument --shard: expected I/N with 1 <= I <= N"
SHARD_FORM = "argument --shard: expected I/N of two whole numbers in ASCII digits (e.g. 2/8)"
JOBS = "argument -j/--jobs: expected a positive number of jobs in ASCII digits"
MAX = "argument --max-specializations: expected a positive number of specializations in ASCII digits"


def usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mytriton-build"), err
    return err.splitlines()[-1]


@pytest.mark.parametrize("argv, message", [
    (["m.yaml", "--shard", "-1/2"], f"{SHARD}, got '-1/2'"),
    (["m.yaml", "--shard", "0/2"], f"{SHARD}, got '0/2'"),
    (["m.yaml", "--shard", "3/2"], f"{SHARD}, got '3/2'"),
    (["m.yaml", "--shard", "1/-2"], f"{SHARD}, got '1/-2'"),
    (["m.yaml", "--shard", "-1/-2"], f"{SHARD}, got '-1/-2'"),
    (["m.yaml", "--shard=-1/2"], f"{SHARD}, got '-1/2'"),
    (["m.yaml", "--shard", "1_0/20"], f"{SHARD_FORM}, got '1_0/20'"),
    (["m.yaml", "--shard", "١/٢"], f"{SHARD_FORM}, got '١/٢'"),
    (["m.yaml", "--shard", " 1/2"], f"{SHARD_FORM}, got ' 1/2'"),
    (["m.yaml", "--shard", "+1/2"], f"{SHARD_FORM}, got '+1/2'"),
    (["m.yaml", "--shard", "1/2/3"], f"{SHARD_FORM}, got '1/2/3'"),
    (["m.yaml", "--shard", "-x"], f"{SHARD_FORM}, got '-x'"),
    (["m.yaml", "--shard", "1" * 5000 + "/2"], f"{SHARD_FORM}, got '{'1' * 5000}/2'"),
    (["m.yaml", "-j", "1_0"], f"{JOBS}, got '1_0'"),
    (["m.yaml", "-j", " 4 "], f"{JOBS}, got ' 4 '"),
    (["m.yaml", "-j", "٤"], f"{JOBS}, got '٤'"),
    (["m.yaml", "-j", "-1"], f"{JOBS}, got '-1'"),
    (["m.yaml", "-j", "-1/2"], f"{JOBS}, got '-1/2'"),
    (["m.yaml", "--jobs", "0"], f"{JOBS}, got '0'"),
    (["m.yaml", "-j", "+4"], f"{JOBS}, got '+4'"),
    (["m.yaml", "--max-specializations", "1_0"], f"{MAX}, got '1_0'"),
    (["m.yaml", "--max-specializations", "٤"], f"{MAX}, got '٤'"),
    (["m.yaml", "--max-specializations", "-5"], f"{MAX}, got '-5'"),
    (["m.yaml", "--max-specializations", "-5x"], f"{MAX}, got '-5x'"),
], ids=lambda value: " ".join(value)[:40] if isinstance(value, list) else "")
def test_bad_numbers_are_usage_errors_that_say_what_is_wrong(argv, message, capsys):
    assert usage_error(argv, capsys) == f"mytriton-build: error: {message}"


@pytest.mark.parametrize("argv, field, value", [
    (["m.yaml", "--shard", "2/8"], "shard", (2, 8)),
    (["m.yaml", "--shard=1/1"], "shard", (1, 1)),
    (["m.yaml", "--shard", "08/10"], "shard", (8, 10)),
    (["m.yaml", "-j", "4"], "jobs", 4),
    (["m.yaml", "-j4"], "jobs", 4),
    (["m.yaml", "--jobs=12"], "jobs", 12),
    (["m.yaml", "--max-specializations", "10000"], "max_specializations", 10000),
])
def test_good_numbers_are_read(argv, field, value):
    assert getattr(cli.parse_args(argv), field) == value


def test_cli_subprocess_says_what_is_wrong_with_a_negative_shard(tmp_path):
    result = run_cli(["m.yaml", "--shard", "-1/2"], cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"mytriton-build: error: {SHARD}, got '-1/2'"
    assert_no_traceback(result.stderr)


@pytest.mark.parametrize("after", ["--tune", "--emit", "-h", "-j4"])
def test_an_option_after_a_number_option_is_not_taken_for_its_value(after, capsys):
    assert usage_error(["m.yaml", "--shard", after], capsys) == \
        "mytriton-build: error: argument --shard: expected one argument"
