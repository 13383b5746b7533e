"""Every option defined once, in the API (issue 35, item 1): each command's frozen options
dataclass (`schedc.api.options`) holds its options' types, ranges and defaults; the API
functions' keyword defaults are its fields' defaults, the command line's click options are
made from the same fields, and every value a field refuses is refused alike by the API call
and by the command, with the same message (the values are derived from the fields' ranges,
so a new option is tested without a new line here). Options that are not fields (what a later
stage reads: a param's name, a range, a file) and text fields have an invalid value each in a
table (PLAIN, TEXT_REFUSED), which a new option must join (issue 35, item 4)."""

from __future__ import annotations

import functools
import inspect
from dataclasses import FrozenInstanceError, fields

import click
import pytest
from conftest import ROOT, SCHEDULES

import schedc
from schedc.api.analysing import BoundOptions, ScaleOptions, SweepOptions, TimedOptions
from schedc.api.changing import WhatIfOptions
from schedc.api.compiling import EmitOptions, LoadOptions
from schedc.api.exporting import ExportMscclOptions, ValidateOptions
from schedc.api.reporting import ReportOptions
from schedc.api.tuning import TuneOptions
from schedc.api.forall import ForAllOptions
from schedc.api.machines import ImportOptions, ShowOptions
from schedc.api.calibrating import CalibrateOptions
from schedc.api.measuring import PredictOptions
from schedc.api.nccl import NcclOptions
from schedc.api.options import rules
from schedc.api.synthesizing import SynthesizeOptions
from schedc.cli import cli
from schedc.errors import UsageError

PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
FLAT = SCHEDULES / "examples" / "tuner_flat_8.sched"
TOPO = ROOT / "tests" / "fixtures" / "topo" / "ndv4-topo.xml"
XML = ROOT / "tests" / "fixtures" / "hierarchical.xml"
LOG = ROOT / "tests" / "fixtures" / "no-such-log.txt"  # never read: the checks come first
EQUATION = "time(ring) = 1 s"


def _pcie():
    return schedc.load(PCIE)


# (the options, the API call taking them as keywords, the command taking them as options:
# its words before the options; the fields the command does not take are left out by name)
COMMANDS = [
    (LoadOptions, lambda **kw: schedc.load(PCIE, **kw), ("time", PCIE), ()),
    (LoadOptions, lambda **kw: schedc.verify_files(PCIE, **kw), ("verify", PCIE), ()),
    (LoadOptions, lambda **kw: schedc.check(PCIE, **kw), ("check", PCIE), ()),
    (EmitOptions, lambda **kw: schedc.emit("ast", PCIE, **kw), ("emit", "ast", PCIE),
     ("stage", "pair")),
    (TimedOptions, lambda **kw: schedc.solve(_pcie(), EQUATION, "V", **kw),
     ("solve", PCIE, EQUATION, "--for", "V"), ()),
    (TimedOptions, lambda **kw: schedc.sensitivity(_pcie(), **kw), ("sensitivity", PCIE), ()),
    (TimedOptions, lambda **kw: schedc.evaluate(_pcie(), **kw), ("eval", PCIE), ()),
    (TimedOptions, lambda **kw: schedc.check(PCIE, **kw), ("check", PCIE), ()),
    (SweepOptions, lambda **kw: None, ("sweep", PCIE, "--vary", "V=1MiB:2MiB"), ()),
    (BoundOptions, lambda **kw: schedc.bound(_pcie(), **kw), ("bound", PCIE), ()),
    (ScaleOptions, lambda **kw: schedc.scale(schedc.load(HOSTS), "hosts", **kw),
     ("scale", HOSTS, "--in", "hosts"), ()),
    (ExportMscclOptions, lambda **kw: schedc.export_msccl(_pcie(), "ring", **kw),
     ("export", "msccl", PCIE, "-s", "ring"), ("layout",)),
    (ValidateOptions, lambda **kw: schedc.validate_msccl(str(XML), **{"executor": "msccl", **kw}),
     ("verify", XML, "--executor", "msccl"), ("executor",)),
    (TuneOptions, lambda **kw: schedc.tune(schedc.load(FLAT), **{"collective": "allreduce",
                                                                 "sizes": "8B:16GB", **kw}),
     ("tune", FLAT, "--collective", "allreduce", "--sizes", "8B:16GB"), ("collective",)),
    (ReportOptions, lambda **kw: schedc.report(_pcie(), **kw), ("report", PCIE), ()),
    (NcclOptions, lambda **kw: schedc.nccl_model(_pcie(), **kw), ("nccl", PCIE), ()),
    (CalibrateOptions, lambda **kw: schedc.calibrate_files([LOG], [PCIE], **kw),
     ("calibrate", LOG, "--machine", PCIE), ()),
    (PredictOptions, lambda **kw: schedc.predict_against(_pcie(), [LOG], **kw),
     ("predict", PCIE, "--against", LOG), ()),
    (ImportOptions, lambda **kw: schedc.import_machine(TOPO, **kw),
     ("machine", "import", TOPO), ()),
    (ShowOptions, lambda **kw: schedc.machine_summary(_pcie(), **kw),
     ("machine", "show", PCIE), ()),
    (ForAllOptions, lambda **kw: schedc.verify_for_all(HOSTS, "hosts", **kw),
     ("verify", HOSTS, "--for-all", "hosts"), ()),
    (WhatIfOptions, lambda **kw: schedc.whatif(_pcie(), **kw), ("whatif", PCIE), ()),
    (SynthesizeOptions, lambda **kw: schedc.synthesize(PCIE, **{"collective": "allgather", **kw}),
     ("synthesize", PCIE, "--collective", "allgather"), ("collective",)),
]


def _command(words: tuple) -> click.Command:
    """The click command that `words` (its names first) run."""
    command: click.Command = cli
    for word in words:
        if not isinstance(command, click.Group) or not isinstance(word, str) or \
                word not in command.commands:
            break
        command = command.commands[word]
    return command


def _refused_values(rule) -> list:
    """Values the rule refuses, from its range: one below, one above, a name not a choice."""
    if rule.kind in ("whole", "wholes", "bytes"):
        values = ([rule.lo - 1] if rule.lo is not None else []) + \
            ([rule.hi + 1] if rule.hi is not None else [])
        return [[v] if rule.kind == "wholes" else v for v in values]
    return {"seconds": [0, float("inf")], "share": [1.5], "choice": ["no-such-name"],
            "factor": [1, 0.5, float("nan")]}.get(rule.kind, [])


def _words(words: tuple) -> str:
    return " ".join(getattr(w, "name", w) for w in words)


def _cases():
    for options, call, words, skipped in COMMANDS:
        for name, (_, rule) in rules(options).items():
            if name not in skipped:
                for value in _refused_values(rule):
                    yield pytest.param(options, call, words, name, rule, value,
                                       id=f"{_words(words[:2])}{rule.flag}={value}")


def _typed(rule, value) -> list[str]:
    """`value` as the command line spells the option."""
    if rule.kind == "share":
        return [rule.flag, f"{value * 100:g}%"]
    if rule.kind == "wholes":
        return [a for v in value for a in (rule.flag, str(v))]
    return [rule.flag, f"{value:g}" if isinstance(value, float) else str(value)]


@pytest.mark.parametrize(("options", "call", "words", "name", "rule", "value"), list(_cases()))
def test_a_refused_value_is_refused_alike(run, options, call, words, name, rule, value):
    """The dataclass refuses it, the API call with the same message, and the command with
    the same message and exit code 2, printing nothing (a name outside a choice is refused by
    click's Choice, made from the same names, with click's words)."""
    with pytest.raises(UsageError) as made:
        options(**{name: value})
    with pytest.raises(UsageError) as called:
        call(**{name: value})
    assert called.value.message == made.value.message
    code, out, err = run(*words, *_typed(rule, value))
    assert code == 2 and out == ""
    if rule.kind == "choice":
        assert all(repr(c) in err for c in rule.choices)
    else:
        assert err == made.value.render() + "\n"


def _api_functions():
    """(API function, options) pairs: the function's keywords named as fields take them."""
    return [
        (schedc.load, LoadOptions), (schedc.verify_files, LoadOptions),
        (schedc.check, LoadOptions), (schedc.emit, LoadOptions), (schedc.emit, EmitOptions),
        (schedc.synthesize, LoadOptions), (schedc.calibrate_files, LoadOptions),
        (schedc.verify_for_all, LoadOptions), (schedc.solve, TimedOptions),
        (schedc.sensitivity, TimedOptions), (schedc.evaluate, TimedOptions),
        (schedc.check, TimedOptions), (schedc.sweep, SweepOptions), (schedc.bound, BoundOptions),
        (schedc.scale, ScaleOptions), (schedc.export_msccl, ExportMscclOptions),
        (schedc.validate_msccl, ValidateOptions), (schedc.tune, TuneOptions),
        (schedc.report, ReportOptions), (schedc.nccl_model, NcclOptions),
        (schedc.predict_nccl, NcclOptions), (schedc.calibrate, CalibrateOptions),
        (schedc.calibrate_logs, CalibrateOptions), (schedc.calibrate_files, CalibrateOptions),
        (schedc.import_machine, ImportOptions), (schedc.machine_summary, ShowOptions),
        (schedc.verify_for_all, ForAllOptions), (schedc.whatif, WhatIfOptions),
        (schedc.synthesize, SynthesizeOptions), (schedc.predict, PredictOptions),
        (schedc.predict_nccl, PredictOptions), (schedc.predict_against, PredictOptions),
        (schedc.outlier_rows, PredictOptions), (schedc.predict_file, PredictOptions),
        (schedc.predict_file, LoadOptions),
    ]


@pytest.mark.parametrize(("function", "options"), _api_functions(),
                         ids=lambda x: getattr(x, "__name__", ""))
def test_the_api_defaults_are_the_fields(function, options):
    """A keyword of an API function named as a field has the field's default (so a script
    and the command line start from the same values)."""
    signature = inspect.signature(function).parameters
    shared = [f for f in fields(options) if f.name in signature]
    assert shared, f"{function.__name__} takes no option of {options.__name__}"
    for field in shared:
        default = signature[field.name].default
        if default is not inspect.Parameter.empty:
            assert default == field.default, (function.__name__, field.name)


@pytest.mark.parametrize(("options", "call", "words", "skipped"),
                         [c for c in COMMANDS], ids=lambda x: getattr(x, "__name__", None))
def test_the_command_line_options_are_the_fields(options, call, words, skipped):
    """Every field is an option of its command (or a documented exception), passed to the
    command under the field's name, and click's default, converted as a value typed on the
    command line, is the field's default."""
    command = _command(words)
    by_flag = {opt: p for p in command.params for opt in p.opts}
    context = click.Context(command)
    for name, (spec, rule) in rules(options).items():
        if name in skipped:
            continue
        param = by_flag.get(rule.flag)
        assert param is not None, f"{words[0]} has no {rule.flag}"
        assert param.name == name
        default = param.get_default(context)
        if default is None or type(default).__module__.startswith("click"):  # (click's UNSET)
            assert spec.default in (None, ()), (name, default)
            continue
        if rule.kind != "wholes":
            default = param.type_cast_value(context, default)
        assert default == spec.default, name


def test_the_options_are_frozen_and_checked_once():
    options = ExportMscclOptions(channels=2)
    with pytest.raises(FrozenInstanceError):
        options.channels = 0  # type: ignore[misc]
    assert LoadOptions(None, None).limits == schedc.Limits()  # None: the default
    # the provenance an imported machine's file cites: the options not at their defaults
    assert ImportOptions(hosts=2, fabric="single-switch").command(TOPO) == \
        "schedc machine import ndv4-topo.xml --hosts 2 --fabric single-switch"
    with pytest.raises(UsageError, match="--max-bytes is less than --min-bytes"):
        ExportMscclOptions(min_bytes=10, max_bytes=9)
    with pytest.raises(UsageError, match="--nvlinks and --sm go together"):
        ImportOptions(nvlinks=12)


def test_a_size_field_reads_units_alike_in_the_api_and_on_the_command_line(run):
    """A byte field ("bytes": `byte_count`) takes a whole number or text with a unit, in the
    dataclass, the API call and the command; a bad size is refused alike by all three."""
    assert ExportMscclOptions(min_bytes="4KiB", max_bytes="192MiB").max_bytes == 192 * 2**20
    assert ExportMscclOptions(min_bytes="4KiB").min_bytes == 4096
    assert NcclOptions(max_bytes="1GiB").max_bytes == 2**30
    xml = schedc.export_msccl(_pcie(), "ring", min_bytes="4KiB", max_bytes="192MiB")
    assert 'minBytes="4096" maxBytes="201326592"' in xml
    code, out, err = run("export", "msccl", PCIE, "-s", "ring", "--min-bytes", "4KiB",
                         "--max-bytes", "192MiB")
    assert code == 0 and out == xml, err
    for value in ("1.5B", "12GB/s", "lots"):
        with pytest.raises(UsageError) as made:
            NcclOptions(max_bytes=value)
        with pytest.raises(UsageError) as called:
            schedc.nccl_model(_pcie(), max_bytes=value)
        assert called.value.message == made.value.message
        code, out, err = run("nccl", PCIE, "--max-bytes", value)
        assert (code, out, err) == (2, "", made.value.render() + "\n")


# A text field is read by a later stage, with its own words, so no refused value follows from
# its rule: each has one here, and a text field without one fails the test below (the keys
# are (options, field); None: checked elsewhere, said why).
TEXT_REFUSED = {
    (TuneOptions, "margin"): None,  # only with --against-nccl: tests/test_api_policies.py
    (NcclOptions, "collective"): "allreduce_x",
    (CalibrateOptions, "split"): "sideways",
    (PredictOptions, "within"): "lots",
    (ImportOptions, "fabric"): "mesh",
    (ImportOptions, "nic_speed"): "fast",
    (WhatIfOptions, "cls"): "no_such_class",
    (SynthesizeOptions, "name"): "1st",
    (SynthesizeOptions, "over"): "ranks; param x = 1",
    (SynthesizeOptions, "size"): "no_such_size",
    (SynthesizeOptions, "root"): "no_such_rank",
}


def _text_cases():
    for options, call, words, skipped in COMMANDS:
        for name, (_, rule) in rules(options).items():
            if rule.kind == "text" and name not in skipped:
                yield pytest.param(options, call, words, name, rule,
                                   id=f"{_words(words[:2])}{rule.flag}")


@pytest.mark.parametrize(("options", "call", "words", "name", "rule"), list(_text_cases()))
def test_a_bad_text_option_is_refused_alike(run, options, call, words, name, rule):
    """Issue 35, item 4: an invalid value of each text option, through the API call and the
    command: the same positioned message (`render()`), exit 2, nothing on stdout."""
    assert (options, name) in TEXT_REFUSED, f"no refused value for {rule.flag}: add one"
    value = TEXT_REFUSED[options, name]
    if value is None:
        return
    with pytest.raises(schedc.SchedcError) as called:
        call(**{name: value})
    code, out, err = run(*words, rule.flag, value)
    assert (code, out) == (2, "")
    assert err == called.value.render() + "\n"


# Options (and arguments) that are not fields of an options dataclass: what a later stage
# reads (a param's name, a range, a file). Each has an invalid value here, run through the
# API call and the command (words before it, the value, words after it); a new option must
# join this table, the fields, or OUTSIDE (tests below).
DGX = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
PLAIN = {
    "--set": (("time", PCIE), (), lambda v: schedc.load(PCIE, [v]), "nosuch=1"),
    "--schedule": (("time", PCIE), (), lambda v: schedc.compare(_pcie(), [v]), "nosuch"),
    "--fail": (("time", PCIE), (), lambda v: schedc.compare(schedc.load(PCIE, fail=[v])),
               "nosuch"),
    "--derate": (("time", PCIE), (), lambda v: schedc.compare(schedc.load(PCIE, derate=[v])),
                 "x=lots"),
    "--machine": (("time", XML), (), lambda v: schedc.compare(schedc.load(XML, machine=v)),
                  "nosuch.sched"),
    "--ranks": (("time", PCIE), (), lambda v: schedc.compare(schedc.load(PCIE, ranks=v)), "x"),
    "--pair": (("emit", "routes", PCIE), (),
               lambda v: schedc.emit("routes", PCIE, pair=tuple(v)), ("nosuch", "x")),
    "--explain": (("nccl", PCIE), (), lambda v: schedc.nccl_model(_pcie(), explain=[v]),
                  "lots"),
    "--input": (("nccl", PCIE), (), lambda v: schedc.nccl_model(_pcie(), inputs=(v,)),
                "nosuch=1"),
    "--fitted": (("predict", PCIE, "--against", LOG), (),
                 lambda v: schedc.predict_against(_pcie(), [LOG], fitted=v), "nosuch.sched"),
    "--against": (("predict", PCIE), (), lambda v: schedc.predict_against(_pcie(), [v]),
                  str(LOG)),
    "--manifest": (("calibrate",), (), lambda v: schedc.calibrate_files(manifest=v),
                   "nosuch.txt"),
    "--fit": (("calibrate", f"shared:{DGX}.txt", "--machine",
               SCHEDULES / "calibration" / f"{DGX}.sched"), (),
              lambda v, log=None: schedc.calibrate_files(
                  [log], [SCHEDULES / "calibration" / f"{DGX}.sched"], fit=[v]), "nosuch"),
    "--vary": (("sweep", PCIE), (), lambda v: schedc.sweep(_pcie(), v), "nosuch=1:2"),
    "--sizes": (("tune", FLAT, "--collective", "allreduce"), (),
                lambda v: schedc.tune(schedc.load(FLAT), "allreduce", v), "lots"),
    "--nodes": (("tune", FLAT, "--collective", "allreduce", "--sizes", "8B:16GB"), (),
                lambda v: schedc.tune(schedc.load(FLAT), "allreduce", "8B:16GB", nodes=v), "x"),
    "--nodes-param": (("tune", FLAT, "--collective", "allreduce", "--sizes", "8B:16GB"), (),
                      lambda v: schedc.tune(schedc.load(FLAT), "allreduce", "8B:16GB",
                                            nodes_param=v), "hosts"),
    "--for": (("solve", PCIE, EQUATION), (), lambda v: schedc.solve(_pcie(), EQUATION, v),
              "nosuch"),
    "--in": (("scale", HOSTS), (), lambda v: schedc.scale(schedc.load(HOSTS), v), "nosuch"),
    "--for-all": (("verify", HOSTS), (), lambda v: schedc.verify_for_all(HOSTS, v), "nosuch"),
    "EQUATION": (("solve", PCIE), ("--for", "V"), lambda v: schedc.solve(_pcie(), v, "V"),
                 "time(nosuch) = 1 s"),
    "FILE": (("time",), (), lambda v: schedc.load(v), "nosuch.sched"),
    "LOGS": (("calibrate",), ("--machine", PCIE),
             lambda v: schedc.calibrate_files([v], [PCIE]), str(LOG)),
    "PATHS": (("check",), (), lambda v: schedc.check([v]), "nosuch.sched"),
    "TOPOLOGY": (("machine", "import"), (), lambda v: schedc.import_machine(v), "nosuch.xml"),
}
# Options checked elsewhere, and why: outputs (`check_output` in the API refuses a directory
# or an input, tests/test_api_policies.py), and choices among the API's names (click's
# Choice made from them, as for every "choice" field above).
OUTSIDE = {"--output", "--csv", "--plot", "--host-svg", "--fabric-svg", "--write",
           "--format", "STAGE"}


@pytest.mark.parametrize("flag", sorted(PLAIN), ids=str)
def test_a_bad_value_of_a_plain_option_is_refused_alike(run, flag):
    """Issue 35, item 4: the options that are not fields, each with an invalid value, give
    the API's message on the command line too (positioned, exit 2, nothing on stdout)."""
    before, after, call, value = PLAIN[flag]
    if flag == "--fit":  # a fit needs a real log: the shared data's, or the test skips
        from conftest import needs_shared_data
        log = str(needs_shared_data("nccl-tests", f"{DGX}.txt"))
        before = tuple(log if w == f"shared:{DGX}.txt" else w for w in before)
        call = functools.partial(call, log=log)
    with pytest.raises(schedc.SchedcError) as called:
        call(value)
    typed = list(value) if isinstance(value, tuple) else [value]
    words = [*before, *([flag] if flag.startswith("--") else []), *typed, *after]
    code, out, err = run(*words)
    assert (code, out) == (2, "")
    assert err == called.value.render() + "\n"


def test_every_option_of_every_command_is_checked_here():
    """Every option and argument of every command that takes a value is a field of an
    options dataclass (refused values derived from it), in PLAIN, or in OUTSIDE."""
    from schedc.api.verifying import VerifyOptions

    def commands(group, path=()):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from commands(command, (*path, name))
            else:
                yield (*path, name), command

    fields_ = {rule.flag for options in {c[0] for c in COMMANDS} | {VerifyOptions}
               for _, rule in rules(options).values()}
    unchecked = set()
    for path, command in commands(cli):
        for param in command.params:
            if isinstance(param, click.Argument):
                name = param.name.upper()
            elif getattr(param, "is_flag", False) or "--help" in param.opts:
                continue
            else:
                name = max(param.opts, key=len)
                if fields_ & set(param.opts):
                    continue
            if name not in PLAIN and name not in OUTSIDE:
                unchecked.add(f"{' '.join(path)} {name}")
    assert unchecked == set()
