"""The command line's contract: JSON schema, text tables, stage dumps, determinism."""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction

import pytest
import sympy
from conftest import SCHEDULES, MiB

from schedc.cli import main
from schedc.render.text import dump_json, json_number

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"
SCHEDULE_KEYS = {"name", "collective", "ranks", "rounds", "rounds_cross_host", "transfers", "time_s",
                 "formula", "regime_formula", "regime_conditions", "bytes_cross_host",
                 "bytes_logical", "bytes_cross_host_formula", "bytes_logical_formula",
                 "round_classes", "algbw_GBps", "busbw_GBps", "busbw_factor"}


@pytest.fixture(scope="module")
def document():
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.raises(SystemExit) as exc:
        main(["time", str(SEED), "--json"])
    assert exc.value.code == 0
    return json.loads(buffer.getvalue())


def test_json_schema(document):
    assert document["schema"] == "schedc.time/1"
    assert set(document) == {"schema", "file", "alpha", "params", "hosts", "schedules"}
    assert document["hosts"] == ["node[0]", "node[1]"]
    assert [s["name"] for s in document["schedules"]] == ["ring", "interleaved", "hierarchical"]
    for s in document["schedules"]:
        assert set(s) == SCHEDULE_KEYS
        for c in s["round_classes"]:
            assert set(c) == {"count", "time_s", "formula", "regime_formula", "bottleneck",
                              "bottleneck_resources", "tied_bottlenecks"}
    assert document["params"]["V"] == {"value": 192 * MiB, "unit": "B", "text": "192 MiB"}


def test_json_formulas_parse_back_and_evaluate_to_time_s(document):
    symbols = {name: sympy.Symbol(name) for name in document["params"]}
    point = {symbols[n]: sympy.nsimplify(p["value"]) for n, p in document["params"].items()}
    for s in document["schedules"]:
        for key in ("formula", "regime_formula"):
            value = float(sympy.sympify(s[key], locals=symbols).subs(point))
            assert value == pytest.approx(s["time_s"], rel=1e-12)
        for relation in s["regime_conditions"]:
            assert bool(sympy.sympify(relation, locals=symbols).subs(point))
        assert float(sympy.sympify(s["bytes_logical_formula"], locals=symbols).subs(point)) \
            == s["bytes_logical"]


def test_json_reference_values(document):
    ring, interleaved, hierarchical = document["schedules"]
    assert (ring["rounds"], ring["rounds_cross_host"], ring["bytes_cross_host"]) == (30, 30, 720 * MiB)
    assert interleaved["bytes_cross_host"] == 5760 * MiB
    assert (hierarchical["rounds"], hierarchical["rounds_cross_host"]) == (16, 2)
    assert hierarchical["bytes_logical"] == 5760 * MiB
    assert hierarchical["time_s"] == pytest.approx(1.2995e-3, abs=5e-8)


def test_set_changes_the_nominal_point_only(run):
    code, out, _ = run("time", SEED, "--json", "--set", "B_L=300GB/s", "-s", "hierarchical")
    (h,) = json.loads(out)["schedules"]
    assert code == 0
    assert h["time_s"] == pytest.approx(1.691e-3, abs=5e-7)
    assert h["formula"] == "16*alpha + V/(8*B_N) + 7*V/(4*B_L)"


def test_compare_table(run):
    code, out, _ = run("compare", SEED)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["schedule", "rounds", "cross-host", "rounds", "cross-host", "bytes",
                                "logical", "bytes", "time", "algbw", "(GB/s)", "busbw", "(GB/s)",
                                "bottleneck"]
    # algbw = 192 MiB / time, busbw = algbw × 2 (16 - 1) / 16: 201326592 / 7.5746472 ms =
    # 26.58 GB/s, × 1.875 = 49.84; hierarchical's 16 α + V/(8 B_N) + 7 V/(4 B_L) = 1.29953 ms
    # gives 154.92 GB/s, × 1.875 = 290.48.
    assert lines[2].split() == ["ring", "30", "30", "720", "MiB", "5,760", "MiB", "7.5746", "ms",
                                "26.58", "49.84", "nic"]
    assert lines[4].split() == ["hierarchical", "16", "2", "384", "MiB", "5,760", "MiB", "1.2995", "ms",
                                "154.92", "290.48", "nvlink,", "nic"]
    assert "= 30*alpha + 15*V/(8*B_N)   while B_L >= B_N" in out


def test_time_text(run):
    code, out, _ = run("time", SEED, "-s", "ring")
    assert code == 0
    assert "  regime            30*alpha + 15*V/(8*B_N)" in out
    assert "    valid while     B_L >= B_N" in out
    assert "  bytes cross-host  720 MiB  (15*V/4)" in out


def test_json_numbers():
    """Exact integers stay integers; what JSON cannot hold (oo, nan, inf) is null."""
    values = (Fraction(3), Fraction(1, 4), sympy.Integer(7), sympy.Rational(1, 8), None, sympy.oo,
              sympy.nan, float("inf"))
    assert [json_number(v) for v in values] == [3, 0.25, 7, 0.125, None, None, None, None]
    assert isinstance(json_number(Fraction(3), integer=False), float)
    assert json_number(sympy.sqrt(2)) == 2 ** 0.5
    with pytest.raises(ValueError):
        dump_json({"time_s": float("nan")})


@pytest.mark.parametrize("args", [("compare", SEED), ("time", SEED, "--json"), ("emit", "ir", SEED)])
def test_output_is_deterministic(run, args):
    first = run(*args)
    assert first[0] == 0
    assert run(*args) == first


def test_help_and_version(run):
    code, out, _ = run("--help")
    assert code == 0 and "compare" in out and "time" in out and "emit" in out
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("schedc, version")


def test_usage_errors_exit_2(run):
    assert run("time")[0] == 2
    assert run("emit", "bytecode", SEED)[0] == 2
    assert run("nonsense")[0] == 2
