"""Every command of the command line is run beside its API call and compared (issue 35,
item 1): `COMPARED` names, for each command, the test that does it; a command added to the
CLI and to no test fails here. The commands no other test compared (`compare`, and `tune
--against-nccl` with `--json`, which printed its text) are compared here."""

from __future__ import annotations

import importlib
import inspect
import json

import click
import pytest
from conftest import SCHEDULES

import schedc
from schedc.cli import cli
from schedc.render.documents import render
from schedc.render.text import to_json
from schedc.render.tuner import against_json, against_text

PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
TUNER = SCHEDULES / "examples" / "tuner_flat_8.sched"

# command words -> "module::test" that runs the command and its API call on the same input
# and compares what they give
COMPARED = {
    ("bound",): "test_api::test_bound_figures_match",
    ("calibrate",): "test_api::test_predict_and_calibrate_match",
    ("check",): "test_api::test_sweep_sensitivity_eval_and_check_match",
    ("compare",): "test_api_every_command::test_compare_is_the_api",
    ("emit",): "test_api::test_export_emit_tune_and_report_are_the_api_text",
    ("eval",): "test_api::test_sweep_sensitivity_eval_and_check_match",
    ("export", "astra"):
        "test_api_policies::test_export_astra_writes_the_folder_the_command_writes",
    ("export", "msccl"): "test_api::test_export_emit_tune_and_report_are_the_api_text",
    ("machine", "import"): "test_api_results::test_machine_show_and_import_are_the_api",
    ("machine", "show"): "test_api_results::test_machine_show_and_import_are_the_api",
    ("nccl",): "test_api_results::test_nccl_is_nccl_model",
    ("predict",): "test_predict_fitted::test_the_command_is_the_api_at_the_fit",
    ("report",): "test_api::test_export_emit_tune_and_report_are_the_api_text",
    ("scale",): "test_api::test_scale_matches",
    ("sensitivity",): "test_api::test_sweep_sensitivity_eval_and_check_match",
    ("solve",): "test_api::test_solve_for_a_param_gives_the_api_solution",
    ("sweep",): "test_api::test_sweep_sensitivity_eval_and_check_match",
    ("synthesize",): "test_api_results::test_synthesize_prints_the_api_text",
    ("time",): "test_api::test_time_json_is_the_api_timing",
    ("tune",): "test_api_every_command::test_tune_against_nccl_is_the_api",
    ("verify",): "test_api::test_verify_verdicts_match",
    ("whatif",): "test_api_results::test_whatif_is_whatif",
}


def _leaves(group: click.Group, words: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _leaves(command, (*words, name))
        else:
            yield (*words, name)


def test_every_command_is_compared_with_its_api_call():
    assert sorted(_leaves(cli)) == sorted(COMPARED)
    for words, where in COMPARED.items():
        module, name = where.split("::")
        test = getattr(importlib.import_module(module), name)
        source = inspect.getsource(test)
        # the test runs the command (the `run` fixture, the command's words as its first
        # arguments) and calls schedc
        assert "run" in inspect.signature(test).parameters and "schedc." in source, where
        quoted = ", ".join(f'"{w}"' for w in words)
        assert f"run, {quoted}" in source or f"run({quoted}" in source, (words, where)


def test_compare_is_the_api(run):
    session = schedc.load(PCIE)
    timings = schedc.compare(session)
    code, out, err = run("compare", PCIE)
    assert (code, err) == (0, "") and out == render("compare", "text", session.program, timings)
    code, out, _ = run("compare", PCIE, "--json")
    assert code == 0 and out == to_json(session.program, timings)
    assert [s["name"] for s in json.loads(out)["schedules"]] == ["ring", "hierarchical"]


@pytest.mark.parametrize("as_json", [False, True])
def test_tune_against_nccl_is_the_api(run, as_json):
    """`tune --against-nccl` (and, before, its `--json` printed the text), the rows the API's
    `tune(against_nccl=)` gives, rendered."""
    tuning = schedc.tune(schedc.load(TUNER), "allreduce", "8B:16GB", against_nccl="5%")
    (table,) = tuning.tables
    code, out, err = run("tune", TUNER, "--collective", "allreduce", "--sizes", "8B:16GB",
                         "--against-nccl", *(["--json"] if as_json else []))
    shown = (against_json(table.against, table.against_notes, "allreduce", "5%", str(TUNER))
             if as_json else against_text(table.against, table.against_notes, "allreduce", "5%"))
    assert (code, err) == (0, "") and out == shown and table.against
    if as_json:
        document = json.loads(out)
        assert document["schema"] == "schedc.tune-against-nccl/1"
        assert [(r["min_bytes"], r["max_bytes"]) for r in document["rows"]] == \
            [(a.min_bytes, a.max_bytes) for a in table.against]


def test_a_margin_without_against_nccl_is_refused(run):
    """`--margin` is `tune(against_nccl=MARGIN)`'s value: without `--against-nccl` it was
    silently dropped; it is refused, before anything is tuned."""
    code, out, err = run("tune", TUNER, "--collective", "allreduce", "--sizes", "8B:16GB",
                         "--margin", "10%")
    assert (code, out) == (2, "")
    assert err == ("error: --margin 10%: it is the margin of --against-nccl; add "
                   "--against-nccl, or leave --margin out\n")
