"""`report` statements: the seed's capacity table (§2) and `schedc eval`."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import ROOT, SCHEDULES, write

import schedc
from schedc.analysis.check import check_program
from schedc.analysis.solve.reports import evaluate_reports, report_values
from schedc.elaborate.loader import load_program
from schedc.elaborate.program import parse_override
from schedc.language import syntax as ast
from schedc.units import BYTES, DIMENSIONLESS, SECONDS

pytestmark = pytest.mark.usefixtures("reuse_shipped")  # the shipped files compile once

CAPACITY = SCHEDULES / "seed" / "capacity.sched"
GB, TB = 10**9, 10**12


def values(path, *sets):
    program = load_program(path, tuple(parse_override(s) for s in sets))
    return {v.name: v for v in report_values(program)}


def test_the_seeds_capacity_table():
    v = values(CAPACITY)
    assert (v["train_8B"].value, v["train_8B"].dim) == (128 * GB, BYTES)  # 8B × 16 B
    assert v["left_on_2_gpus"].value == 32 * GB  # 2 × 80 GB - 128 GB
    assert v["train_284B"].value == Fraction(4544, 1000) * TB  # "about 4.5 TB"
    assert v["host_memory"].value == 640 * GB
    assert v["deepseek_v4_pro"].value == 800 * GB  # 1.6T × 0.5 B
    assert (v["deepseek_hosts"].value, v["deepseek_hosts"].dim) == (2, DIMENSIONLESS)
    assert v["kimi_k3"].value == Fraction(14, 10) * TB  # 2.8T × 0.5 B
    assert v["kimi_hosts"].value == 3
    assert (v["alpha"].value, v["alpha"].dim) == (Fraction(25, 30 * 10**6), SECONDS)  # 0.83 µs


def test_the_expects_of_the_capacity_file_hold():
    checked = check_program(schedc.load(CAPACITY))
    assert [r.name for r in checked.reports][:2] == ["train_8B", "left_on_2_gpus"]
    assert len(checked.outcomes) == 9
    assert all(o.passed for o in checked.outcomes), [o for o in checked.outcomes if not o.passed]


def _base(value) -> Fraction:
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    return Fraction(int(value.expr.p), int(value.expr.q))


def test_params_can_be_set():
    v = values(CAPACITY, "gpu_memory=141GB")  # H200 hosts: 1,128 GB each
    assert v["host_memory"].value == 1128 * GB
    assert (v["deepseek_hosts"].value, v["kimi_hosts"].value) == (1, 2)


def test_eval_text(run, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run("eval", "schedules/seed/capacity.sched")
    assert code == 0, err
    assert out == """\
train_8B         128 GB
left_on_2_gpus   32 GB
train_284B       4.544 TB
host_memory      640 GB
deepseek_v4_pro  800 GB
deepseek_hosts   2
kimi_k3          1.4 TB
kimi_hosts       3
alpha            833.33 ns
"""


def test_eval_json(run):
    code, out, err = run("eval", CAPACITY, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "schedc.eval/1"
    assert set(document) == {"schema", "file", "params", "reports"}
    first, *_, last = document["reports"]
    assert first == {"name": "train_8B", "value": 128 * GB, "unit": "B", "text": "128 GB"}
    assert last == {"name": "alpha", "value": pytest.approx(25e-6 / 30), "unit": "s",
                    "text": "833.33 ns"}


def test_extra_handlers_reach_the_reports(tmp_path):
    # How `schedc check` passes its time(...) handler: here one that answers 2 ms for any
    # schedule, as a formula in a param, to show that formulas are settled at the nominal point.
    from schedc.model.values import Quantity

    path = write(tmp_path, "t.sched", "param a = 1 ms\nreport t = 3 * time(ring)\nreport u = t + a\n")
    program = load_program(path)
    a = program.params["a"].symbol
    reports = evaluate_reports(program, {ast.TimeOf: lambda node, env: Quantity(2 * a, SECONDS)})
    assert [(v.name, v.value) for v in reports.values] == [("t", Fraction(6, 1000)), ("u", Fraction(7, 1000))]


def test_a_file_without_reports(run):
    code, out, err = run("eval", SCHEDULES / "seed" / "nvlink_2x8.sched")
    assert (code, out, err) == (0, "no report statements\n", "")


@pytest.mark.parametrize("body, message, col", [
    ("report B = 1 GB", "'B' is already defined at {path}:1:1", 1),
    ("report x = 1 GB\nreport x = 2 GB", "'x' is already defined at {path}:3:1", 1),
    ("report x = [g[0]]", "a list here holds numbers or quantities, not a device", 13),
    ("report x = g", "a report is a number or a quantity, not a group of devices", 12),
    ("report x = time(ring)", "no schedule named 'ring'; the file has no result schedules", 17),
    ("report x = B + 1 s", "cannot add a bandwidth (bytes/s) and a duration (seconds)", 12),
])
def test_diagnostics(run, tmp_path, body, message, col):
    path = write(tmp_path, "bad.sched", f"param B = 1 GB/s\ntopology {{ gpu g[2] }}\n{body}\n")
    code, out, err = run("eval", path)
    assert code == 2
    assert out == ""
    line = body.count("\n") + 3
    assert err.splitlines()[0] == f"{path}:{line}:{col}: error: {message.format(path=path)}"
