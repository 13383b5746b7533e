"""The command line over the public API: each command and its `schedc.*` call, run on the
shipped files, give the same results (the CLI's JSON against the API's dataclasses), and
the policies the commands apply (verify first, the integer search of structural params,
limits) hold for a script too."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import pytest
from conftest import ROOT, SCHEDULES, compiled, needs_shared_data

import schedc
import schedc.api

SEED = SCHEDULES / "seed"
HOSTS = "time(hierarchical) = time(ring)"
BROKEN = ROOT / "tests" / "fixtures" / "broken" / "dropped.sched"
SHIPPED = sorted(p for p in SCHEDULES.rglob("*.sched"))


def _json(run, *args) -> dict:
    code, out, err = run(*args)
    assert code == 0, err
    return json.loads(out)


def close(a: float, b) -> bool:
    return a == pytest.approx(float(b), rel=1e-12, abs=0)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(SCHEDULES).as_posix())
def test_time_json_is_the_api_timing(run, reuse_shipped, path):
    session = compiled(path)
    if not session.selected(required=False):
        return  # a machine or a library: no schedules to time (`time` says so, exit 2)
    timings = schedc.compare(session)
    document = _json(run, "time", "--json", path)
    assert [s["name"] for s in document["schedules"]] == [t.name for t in timings]
    for entry, timing in zip(document["schedules"], timings):
        assert close(entry["time_s"], timing.time), timing.name
        assert entry["rounds"] == timing.cost.rounds
        assert entry["formula"] == str(timing.cost.formula)
        assert close(entry["time_s"], schedc.time(session, timing.name).time)


def test_solve_for_a_structural_param_searches_the_integers(run, reuse_shipped, monkeypatch):
    """The issue's example: `schedc solve ... --for hosts` answered, the API raised. (The
    command reuses the compiled instances: `reuse_shipped`; spelled as the API's docstring
    spells the file, so that its example reuses them too.)"""
    monkeypatch.chdir(ROOT)
    path = "schedules/seed/nvlink_hosts.sched"
    found = schedc.solve(schedc.load(path), HOSTS, "hosts")
    assert isinstance(found, schedc.api.IntegerSearch)
    document = _json(run, "solve", "--json", path, HOSTS, "--for", "hosts")
    assert found.roots == (1,) and document["roots"] == list(found.roots)
    assert [(p["value"], p["left"], p["right"]) for p in document["points"]] == \
        [(p.n, pytest.approx(float(p.left), rel=1e-12), pytest.approx(float(p.right), rel=1e-12))
         for p in found.points]
    assert document["stopped"] == found.stopped and document["searched"] == list(found.searched)
    code, out, _ = run("solve", path, HOSTS, "--for", "hosts")
    assert code == 0 and "1 solution (the sides equal): hosts = 1" in out
    assert f"no crossover in {found.searched[0]}..{found.searched[1]}" in out


def test_solve_for_a_param_gives_the_api_solution(run):
    path = SEED / "nvlink_2x8.sched"
    solution = schedc.solve(schedc.load(path), HOSTS, "B_L")
    assert isinstance(solution, schedc.api.Solution) and solution.closest is not None
    document = _json(run, "solve", "--json", path, HOSTS, "--for", "B_L")
    assert len(document["solutions"]) == len(solution.roots)
    assert [(i["lo"], i["smaller"]) for i in document["intervals"]] == \
        [(float(i.lo), solution.name(i.smaller)) for i in solution.intervals]
    assert close(document["closest"]["lo"], solution.closest.lo)


def test_the_api_verifies_before_reporting_as_the_commands_do(run):
    session = schedc.load(BROKEN)
    code, out, err = run("time", BROKEN)
    with pytest.raises(schedc.VerificationFailed) as refused:
        schedc.time(session, "ring")
    assert (code, out) == (refused.value.exit_code, "") and code == 1
    assert err == refused.value.render() + "\n"
    for call in (lambda: schedc.compare(session), lambda: schedc.bound(session),
                 lambda: schedc.sensitivity(session),
                 lambda: schedc.export_msccl(session, "ring"),
                 lambda: schedc.solve(session, "time(ring) = 1 s", "V")):
        with pytest.raises(schedc.VerificationFailed) as again:
            call()
        assert again.value.render() == refused.value.render()
    unverified = schedc.time(session, "ring", verify=False)  # the --no-verify escape
    code, out, _ = run("time", "--json", "--no-verify", BROKEN)
    assert code == 0 and close(json.loads(out)["schedules"][0]["time_s"], unverified.time)


def test_verify_verdicts_match(run, reuse_shipped):
    document = _json(run, "verify", "--json", SCHEDULES)
    files = schedc.verify_files(SCHEDULES)
    assert [d["file"] for d in document["files"]] == [str(f.path) for f in files if not f.error]
    for entry, checked in zip(document["files"], files):
        assert [(s["name"], s["ok"], s["method"]) for s in entry["schedules"]] == \
            [(v.name, v.ok, v.method) for v in checked.verdicts]
    session = schedc.load(BROKEN)
    code, out, _ = run("verify", "--json", BROKEN)
    (verdict,) = schedc.verify(session)
    assert code == 1 and json.loads(out)["files"][0]["schedules"][0]["ok"] is verdict.ok is False


@pytest.mark.parametrize("name", ["pcie_2x4", "nvlink_2x8", "capacity"])
def test_bound_figures_match(run, name):
    path = SEED / f"{name}.sched"
    groups = schedc.bound(schedc.load(path))
    document = _json(run, "bound", "--json", path)
    collectives = document.get("collectives") or [document]
    assert len(collectives) == len(groups)
    for entry, group in zip(collectives, groups):
        assert close(entry["bound_s"], group.best_value) and entry["binds"] == group.binds
        assert [(s["name"], s["time_s"]) for s in entry["schedules"]] == \
            [(e.timing.name, pytest.approx(float(e.timing.time), rel=1e-12))
             for e in group.schedules]


def test_scale_matches(run):
    path = SEED / "nvlink_hosts.sched"
    results = schedc.scale(schedc.load(path), "hosts", bounds=False)
    document = _json(run, "scale", "--json", "--in", "hosts", "--no-bound", path)
    entries = document["schedules"]
    pieces = [(r.name, piece) for r in results for piece in r.pieces]
    assert [(e["name"], e["formula"]) for e in entries] == \
        [(name, str(piece.formula)) for name, piece in pieces]
    for entry, (_, piece) in zip(entries, pieces):
        assert [(t["value"], t["time_s"]) for t in entry["times"]] == \
            [(n, pytest.approx(float(t), rel=1e-12)) for n, t in piece.times]


def test_sweep_sensitivity_eval_and_check_match(run):
    path = SEED / "nvlink_2x8.sched"
    session = schedc.load(path)
    swept = schedc.sweep(session, "B_L=100GB/s:900GB/s:5")
    document = _json(run, "sweep", "--json", path, "--vary", "B_L=100GB/s:900GB/s:5")
    assert list(document["schedules"]) == list(swept.times)
    for name, times in document["schedules"].items():
        assert times == pytest.approx(list(swept.times[name]), rel=1e-12)
    rows = schedc.sensitivity(session)
    document = _json(run, "sensitivity", "--json", path)
    assert [s["name"] for s in document["schedules"]] == [r.name for r in rows]
    for entry, row in zip(document["schedules"], rows):
        assert close(entry["time_s"], row.time)
        assert [(p["param"], p["elasticity_up"]) for p in entry["sensitivities"]] == \
            [(s.param.name, pytest.approx(float(s.elasticity_up), rel=1e-12)) for s in row.params]
    capacity = SEED / "capacity.sched"
    reports = schedc.evaluate(schedc.load(capacity))
    document = _json(run, "eval", "--json", capacity)
    assert reports and [(r["name"], r["value"]) for r in document["reports"]] == \
        [(r.name, pytest.approx(float(r.value), rel=1e-12)) for r in reports]
    checked = schedc.check(SEED)
    document = _json(run, "check", "--json", SEED)
    assert [(f["file"], [e["passed"] for e in f["expects"]]) for f in document["files"]] == \
        [(f.path, [o.passed for o in f.outcomes]) for f in checked]
    assert document["failed"] == sum(f.failed for f in checked) == 0


def test_export_emit_tune_and_report_are_the_api_text(run, tmp_path):
    path = SEED / "nvlink_2x8.sched"
    session = schedc.load(path)
    code, out, _ = run("export", "msccl", path, "-s", "ring", "--channels", "2")
    assert code == 0 and out == schedc.export_msccl(session, "ring", channels=2)
    code, out, _ = run("emit", "formula", path)
    assert code == 0 and out == schedc.emit("formula", path)
    flat = SCHEDULES / "examples" / "tuner_flat_8.sched"
    tuning = schedc.tune(schedc.load(flat), "allreduce", "8B:16GB")
    document = _json(run, "tune", "--json", flat, "--collective", "allreduce", "--sizes", "8B:16GB")
    (table,) = tuning.tables
    assert [r["fastest"] for r in document["ranges"]] == \
        [s.fastest for s in table.envelope.stretches]
    assert (document["lo"], document["hi"]) == (table.envelope.lo, table.envelope.hi)
    assert (document["nodes"], document["ranks"]) == (table.nodes, table.ranks)
    page = tmp_path / "page.html"
    pcie = SEED / "pcie_2x4.sched"
    code, _, _ = run("report", pcie, "-o", page)
    assert code == 0 and page.read_text(encoding="utf-8") == schedc.report(schedc.load(pcie))


def test_predict_and_calibrate_match(run):
    name = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
    machine, log = SCHEDULES / "calibration" / f"{name}.sched", needs_shared_data("nccl-tests", f"{name}.txt")
    compared = schedc.predict(schedc.load(machine), [log])
    document = _json(run, "predict", "--json", machine, "--against", log)
    # (the command's rows also list the outliers, which the API's comparison leaves out)
    assert [r["predicted_s"] for r in document["rows"] if not r["outlier"]] == \
        pytest.approx(list(compared.predicted))
    fitted = schedc.calibrate(schedc.load(machine), [log])
    document = json.loads(run("calibrate", "--json", log, "--machine", machine)[1])
    assert {name: p["value"] for name, p in document["params"].items()} == \
        {p.name: pytest.approx(p.value, rel=1e-9) for p in fitted.params}
    assert document["converged"] is fitted.converged


def test_limits_apply_to_the_api():
    with pytest.raises(schedc.SchedcError, match="--max-transfers"):
        schedc.load(SEED / "nvlink_2x8.sched", max_transfers=10).timing("ring")


def test_the_api_examples_run(monkeypatch, reuse_shipped):
    """The docstrings' examples, with `session` the seed's nvlink_2x8 (paths from the root;
    a shipped file is compiled once, with its instances)."""
    monkeypatch.chdir(ROOT)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    session = schedc.load("schedules/seed/nvlink_2x8.sched")
    for module in (schedc.api, *(sys.modules[f"schedc.api.{m}"] for m in
                                 ("compiling", "analysing", "measuring", "exporting",
                                  "machines", "changing", "forall", "tuning", "reporting",
                                  "calibrating", "predicting"))):
        for test in finder.find(module, globs={"schedc": schedc, "session": session}):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= 15


def test_the_version_is_the_package_metadata():
    from importlib.metadata import version
    assert schedc.__version__ == version("schedc")
    done = subprocess.run([sys.executable, "-m", "schedc", "--version"], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    assert done.stdout == f"schedc, version {schedc.__version__}\n"


def test_py_typed_is_shipped():
    assert (ROOT / "schedc" / "py.typed").is_file()
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"schedc" = ["py.typed"]' in text


def test_import_schedc_is_cheap():
    probe = ("import sys, schedc, schedc.api; heavy = ('sympy', 'numpy', 'networkx', 'lark', "
             "'importlib.metadata'); print(sorted(m for m in heavy if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_every_name_of_the_root_resolves():
    for name in schedc.__all__:
        assert getattr(schedc, name) is not None, name
    with pytest.raises(AttributeError):
        schedc.no_such_function  # noqa: B018
