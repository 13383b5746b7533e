"""Every error a user can cause: exact message, exact line:col, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, write

ERRORS = Path(__file__).parent / "errors"
HEAD = 'import "machine.sched"\nallreduce V over ranks\n'

# (name, file text, expected first line of the diagnostic after "case.sched:")
CASES = [
    ("unexpected token", HEAD + "schedule x { copy all from g[0] to }\n",
     "3:36: error: unexpected '}'; expected an expression"),
    ("unexpected character", HEAD + "schedule x { copy all from g[0] to g[1] $ }\n",
     "3:41: error: unexpected character '$'; expected an expression, '&', ')', '*', '/', "
     "'//' or '%', '**', ',', '.', ':' or ..."),
    ("unknown name", HEAD + "schedule x { copy all from gg[0] to g[1] }\n",
     "3:28: error: unknown name 'gg'; did you mean 'g'?"),
    ("unknown schedule", HEAD + "schedule x { ring_allreduce(ranks) }\n",
     "3:14: error: unknown schedule 'ring_allreduce'"),
    ("adding bytes to seconds", HEAD + "let z = V + 3 us\n",
     "3:9: error: cannot add a size (bytes) and a duration (seconds)"),
    ("a size where a bandwidth belongs", HEAD + "topology { gpu h; link h <-> sw bw 64 MiB }\n",
     "3:36: error: 'bw' must be a bandwidth (bytes/s), not a size (bytes)"),
    ("a bandwidth where a size belongs", HEAD + "schedule x { send B from g[0] to g[1] }\n",
     "3:19: error: a message size must be a size (bytes), not a bandwidth (bytes/s)"),
    ("unknown unit", "param V = 64 kiB\n",
     "1:14: error: unknown unit 'kiB'; did you mean KiB?"),
    # Near misses of units: the caret on the unit, and what was probably meant.
    ("bits or bytes", "param V = 50 Gb/s\n",
     "1:14: error: unknown unit 'Gb/s'; did you mean Gbit/s or GB/s?"),
    ("mebibits", "param V = 64 Mib\n", "1:14: error: unknown unit 'Mib'; did you mean MiB?"),
    ("usec", "param V = 0.83 usec\n", "1:16: error: unknown unit 'usec'; did you mean us?"),
    ("per sec", "param V = 50 GB/sec\n", "1:14: error: unknown unit 'GB/sec'; did you mean GB/s?"),
    ("a unit with spaces", "param V = 50 GB / s\n",
     "1:14: error: unknown unit 'GB / s'; did you mean GB/s?"),
    ("a unit with a space", "param V = 50 GB/ sec\n",
     "1:14: error: unknown unit 'GB/ sec'; did you mean GB/s?"),
    ("a quantity over an unknown name", "param V = (50 GB) / s\n", "1:21: error: unknown name 's'"),
    ("glued percent", "let k = 7%3\n", "1:11: error: unexpected '3'; expected an expression, '&', "
     "'*', '/', '//' or '%', '**', '.', ';', '^', 'and' or ..."),
    ("rank index out of range", HEAD + "schedule x { copy all from g[0] to ranks[4] }\n",
     "3:42: error: index 4 out of range for a group of 4 (valid: 0..3)"),
    ("family index out of range", HEAD + "schedule x { copy all from g[4] to g[0] }\n",
     "3:30: error: index 4 out of range for a group of 4 (valid: 0..3)"),
    ("vector index out of range", HEAD + "schedule x { round { for j in 0..3: copy all from g[j] to g[j + 1] } }\n",
     "3:61: error: index 4 out of range for a group of 4 (valid: 0..3)"),
    ("host family index out of range", 'import "machine.sched"\ntopology { host n[2] { gpu d } }\n'
     "allreduce V over [n[0].d, n[2].d]\n",
     "3:29: error: index 2 out of range for a family 'n' of 2 (valid: 0..1)"),
    ("no route", 'import "machine.sched"\ntopology { gpu lonely }\nallreduce V over [g[0], lonely]\n'
     "schedule x { copy all from g[0] to lonely }\n",
     "4:14: error: no route from g[0] to lonely"),
    ("zero bandwidth", "param B = 0 GB/s\ntopology { switch s; gpu g; link g <-> s bw B }\n",
     "2:45: error: 'bw' must be positive; this one is 0 B/s"),
    ("negative bandwidth", "topology { switch s; gpu g; link g <-> s bw -5 GB/s }\n",
     "1:45: error: 'bw' must be positive; this one is -5 GB/s"),
    ("schedule calling itself", HEAD + "schedule a(g) { b(g) }\nschedule b(g) { a(g) }\n"
     "schedule x = a(ranks)\n",
     "4:17: error: schedule 'a' calls itself (a -> b -> a)"),
    ("import cycle", 'import "cycle_a.sched"\n',
     None),  # reported in the imported file: checked below
    ("missing import", 'import "nowhere.sched"\n',
     "1:1: error: no such file: {dir}/nowhere.sched"),
    ("loop of 10^12 rounds", HEAD + "schedule x { for s in 0..1000000000000 round { copy all from g[0] to g[1] } }\n",
     "3:23: error: this makes 1,000,000,000,001 rounds and loop iterations; the limit is 200,000 "
     "(raise it with --max-rounds)"),
    ("nested loops too large", HEAD + "schedule x { for s in 0..9999 { for t in 0..99 { copy all from g[0] to g[1] } } }\n",
     "3:14: error: this loop of 10,000 iterations would make about 2,010,000 rounds and loop "
     "iterations; the limit is 200,000 (raise it with --max-rounds)"),
    ("too many transfers in a round", HEAD + "schedule x { round { for j in 0..100000000: copy all from g[0] to g[1] } }\n",
     "3:31: error: this loop makes 100,000,001 iterations in one go; the limit is 20,000,000 "
     "(raise it with --max-transfers)"),
    ("not a rank", HEAD + "topology { gpu extra; link extra <-> sw bw B }\n"
     "schedule x { copy all from extra to g[1] }\n",
     "4:28: error: extra is not a rank of the collective (allreduce over 4 ranks)"),
    ("transfer to itself", HEAD + "schedule x { copy all from g[1] to g[1] }\n",
     "3:14: error: a transfer from g[1] to itself"),
    ("symbolic loop bound", HEAD + "schedule x { for s in 0..V round { copy all from g[0] to g[1] } }\n",
     "3:26: error: a range bound must be a concrete integer, but this depends on params (V)"),
    ("part index out of range", HEAD + "schedule x { copy part(3 of 3) from g[0] to g[1] }\n",
     "3:24: error: index 3 out of range for a part index of 3 parts (valid: 0..2)"),
    ("calls inside a round", HEAD + "schedule y(g) { copy all from g[0] to g[1] }\n"
     "schedule x { round { y(ranks) } }\n",
     "4:22: error: a call cannot appear inside a round; a round holds transfers, loops, conditions and lets"),
    ("missing argument", HEAD + "schedule y(g, h) { copy all from g[0] to h[1] }\nschedule x = y(ranks)\n",
     "4:14: error: 'y' needs argument 'h'"),
    ("redefinition", HEAD + "let V = 3\n",
     "3:1: error: 'V' is already defined at {dir}/machine.sched:2:1"),
    ("param from params", "param A = 1 GB/s\nparam C = 2 * A\n",
     "2:11: error: a param's value must be a number with a unit, not an expression of params; "
     "use 'let' for derived values"),
    ("no collective yet", "schedule x { }\n",
     "1:1: error: schedule 'x' comes before any collective in this file; declare one first, "
     "e.g. 'allreduce V over ranks'"),
    ("region expected", HEAD + "schedule x { copy 3 from g[0] to g[1] }\n",
     "3:19: error: expected a region of the buffer (all, part(i of k), ...), not a number"),
    ("empty message", HEAD + "schedule x { send 0 B from g[0] to g[1] }\n",
     "3:19: error: a message size must be positive; this one is 0 B"),
    ("negative message", HEAD + "schedule x { send -1 MiB from g[0] to g[1] }\n",
     "3:19: error: a message size must be positive; this one is -1 MiB"),
    ("negative buffer", 'import "machine.sched"\nallreduce -V over ranks\n',
     "2:11: error: the size of a collective must be positive; this one is -64 MiB"),
    ("parameter given twice", HEAD + "schedule y(g, g) { copy all from g[0] to g[1] }\n",
     "3:15: error: parameter 'g' is given twice"),
    ("index out of range in a library schedule",
     'import "machine.sched"\nimport "library.sched"\nallreduce V over ranks\nschedule x = twice(ranks)\n',
     "4:14: error: index 4 out of range for a group of 4 (valid: 0..3)"),
    ("not a rank, in a library schedule",
     'import "machine.sched"\nimport "library.sched"\nallreduce V over ranks\n'
     "schedule x = gather_at(ranks, sw)\n",
     "4:14: error: sw is not a rank of the collective (allreduce over 4 ranks)"),
    ("half one-way link", HEAD + "topology { gpu h; link h -> sw bw B half }\n",
     "3:19: error: 'half' makes both directions of a link share one resource; a one-way link "
     "(->) has one direction"),
    # A file's own guard: `if CONDITION: error ...` at the top level, after its params.
    ("a file's guard", 'param n = 5\nif n > 4: error "at most 4 ranks here, not", n\n',
     "2:1: error: at most 4 ranks here, not 5"),
    ("a guard that is not a condition", 'param n = 5\nif n + 1: error "no"\n',
     "2:4: error: expected a condition, not a number"),
    ("a guard on a symbolic param", HEAD + 'if B > 1 GB/s: error "no"\n',
     "3:4: error: this comparison depends on params (B), so it has no single answer"),
]


@pytest.mark.parametrize("name, text, expected", [c for c in CASES if c[2]], ids=[c[0] for c in CASES if c[2]])
def test_diagnostic(run, tmp_path, name, text, expected):
    for helper in ERRORS.glob("*.sched"):
        write(tmp_path, helper.name, helper.read_text())
    case = write(tmp_path, "case.sched", text)
    code, out, err = run("time", case)
    assert code == 2
    assert out == ""
    first = err.splitlines()[0]
    assert first == f"{case}:" + expected.replace("{dir}", str(tmp_path)), err
    # The source line and a caret under the reported column follow.
    line, col = (int(x) for x in expected.split(":")[:2])
    source_line = (case.parent / first.split(":")[0].rsplit("/", 1)[-1]).read_text().splitlines()[line - 1]
    assert err.splitlines()[1] == "  " + source_line
    assert err.splitlines()[2].index("^") == col + 1
    assert "Traceback" not in err


@pytest.mark.parametrize("call, notes", [
    ("twice(ranks)", ["raised at library.sched:3:49 in 'shift'",
                      "called as twice (case.sched:4:14) -> shift (library.sched:6:3)"]),
    ("gather_at(ranks, sw)", ["raised at library.sched:9:47 in 'gather_at'",
                              "called as gather_at (case.sched:4:14)",
                              "the collective is declared at case.sched:3:1"]),
])
def test_an_error_inside_a_library_schedule_names_the_call_chain(run, tmp_path, monkeypatch, call,
                                                                  notes):
    # The user's own line first (the outermost call), then where it was raised, and how.
    monkeypatch.chdir(tmp_path)
    for helper in ("machine.sched", "library.sched"):
        write(tmp_path, helper, (ERRORS / helper).read_text())
    write(tmp_path, "case.sched", 'import "machine.sched"\nimport "library.sched"\n'
                                  f"allreduce V over ranks\nschedule x = {call}\n")
    code, out, err = run("time", "case.sched")
    assert (code, out) == (2, "")
    assert err.splitlines()[1] == f"  schedule x = {call}"
    assert err.splitlines()[3:] == [f"  note: {n}" for n in notes]


def test_import_cycle_names_the_chain(run):
    code, out, err = run("time", ERRORS / "cycle_a.sched")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (f"{ERRORS / 'cycle_b.sched'}:2:1: error: import cycle: "
                                   "cycle_a.sched -> cycle_b.sched -> cycle_a.sched")


def test_missing_file(run, tmp_path):
    code, _, err = run("time", tmp_path / "absent.sched")
    assert code == 2
    assert err.strip() == f"error: no such file: {tmp_path / 'absent.sched'}"


@pytest.mark.parametrize("setting, expected", [
    ("B=3us", "--set B:1:1: error: B is a bandwidth (bytes/s); the value given is a duration (seconds)"),
    ("B=0GB/s", "machine.sched:8:23: error: 'bw' must be positive; this one is 0 B/s"),
    ("Q=3", "error: --set Q: no param named 'Q' (params: V, alpha, B)"),
    ("alpha=1us --set alpha=2us", "error: --set alpha is given twice"),
    ("B=3 GB/s +", "--set B:1:9: error: unexpected end of input; expected an expression"),
    ("B", "error: --set expects NAME=VALUE (e.g. --set B_L=300GB/s), got 'B'"),
    ("BB=1GB/s", "error: --set BB: no param named 'BB'; did you mean 'B'?"),
    ("B=50Gb/s", "--set B:1:3: error: unknown unit 'Gb/s'; did you mean Gbit/s or GB/s?"),
    ("B=50 GB / s", "--set B:1:4: error: unknown unit 'GB / s'; did you mean GB/s?"),
])
def test_bad_set(run, tmp_path, setting, expected):
    write(tmp_path, "machine.sched", (ERRORS / "machine.sched").read_text())
    case = write(tmp_path, "case.sched", HEAD + "schedule x { copy all from g[0] to g[1] }\n")
    code, out, err = run("time", case, *[a for part in setting.split(" --set ")
                                         for a in ("--set", part)])
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.endswith(expected) and (first == expected or first.startswith(str(tmp_path)))


def test_unknown_schedule_option(run, tmp_path):
    write(tmp_path, "machine.sched", (ERRORS / "machine.sched").read_text())
    case = write(tmp_path, "case.sched", HEAD + "schedule ring { copy all from g[0] to g[1] }\n")
    code, _, err = run("time", case, "-s", "rign")
    assert code == 2
    assert err.strip() == "error: no schedule named 'rign'; did you mean 'ring'?"


def test_a_file_without_result_schedules(run):
    code, out, err = run("time", ERRORS / "machine.sched")
    assert (code, out) == (2, "")
    assert err.strip() == (f"error: {ERRORS / 'machine.sched'} has no result schedules (a machine "
                           "or a library file?); give a file that declares a collective and schedules")


def test_a_report_can_index_the_topology(run, tmp_path):
    case = write(tmp_path, "case.sched", "topology { host node[2] { gpu g[8] } }\n"
                                         "report n = len(node[0].g)\n")
    assert run("eval", case) == (0, "n  8\n", "")


@pytest.mark.parametrize("equation, message", [
    ("time(x, B = 0 GB/s) = 1 ms", "equation:1:1: error: with B = 0 GB/s the time is infinite "
                                  "(a bandwidth of 0?)"),
    ("time(x, B = -1 GB/s) = 1 ms", "equation:1:13: error: B cannot be negative; the value given "
                                   "is -1 GB/s"),
])
def test_bad_pins(run, tmp_path, equation, message):
    write(tmp_path, "machine.sched", (ERRORS / "machine.sched").read_text())
    case = write(tmp_path, "case.sched", HEAD + "schedule x { copy all from g[0] to g[1] }\n")
    code, out, err = run("solve", case, equation, "--for", "V", "--no-verify")
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == message


def test_time_with_a_pinned_zero_start_up_is_fine(run, tmp_path):
    write(tmp_path, "machine.sched", (ERRORS / "machine.sched").read_text())
    case = write(tmp_path, "case.sched", HEAD + "schedule x { copy all from g[0] to g[1] }\n")
    code, out, err = run("solve", case, "time(x, alpha = 0 s) = 1 ms", "--for", "V", "--no-verify")
    assert code == 0, err
    assert "V = 100 MB" in out


# ---- binary input: the position of the first byte that is not UTF-8 as line:col (characters,
# as the lexer counts), with the line shown (U+FFFD where the bad bytes are) and the caret.
# Before: "cannot read F: 'utf-8' codec can't decode byte 0xff in position 28: ...".

_NOT_UTF8 = "schedc reads UTF-8 text files"


@pytest.mark.parametrize("data, expected", [
    (b"param V = 1 MiB\nparam B = 2 \xff\xfe GB/s\n",
     f"2:13: error: byte 0xff is not UTF-8 text (invalid start byte); {_NOT_UTF8}\n"
     "  param B = 2 \ufffd\ufffd GB/s\n              ^\n"),
    # two-byte characters count once; \r\n ends a line as \n does; 0xe9 alone (Latin-1 é)
    (b"# \xe2\x82\xac\r\nparam V = 1 MiB  # caf\xc3\xa9 \xe9 x\n",
     f"2:25: error: byte 0xe9 is not UTF-8 text (invalid continuation byte); {_NOT_UTF8}\n"
     "  param V = 1 MiB  # caf\u00e9 \ufffd x\n                          ^\n"),
    (b"\x7fELF\x02\x01\x01\x00\x00",  # NULs are UTF-8: the lexer refuses the first character
     "1:1: error: unexpected character '\\x7f'; expected "),
])
def test_a_binary_file_is_refused_at_its_first_bad_byte(tmp_path, run, data, expected):
    path = tmp_path / "binary.sched"
    path.write_bytes(data)
    code, _, err = run("check", path)
    assert code == 2 and err.startswith(f"{path}:{expected}")
    if "UTF-8" in expected:  # the same from the other readers of a .sched file
        assert run("emit", "ast", path) == (2, "", f"{path}:{expected}")
        importer = tmp_path / "importer.sched"
        importer.write_text('import "binary.sched"\n')
        assert run("time", importer) == (2, "", f"{path}:{expected}")


def test_binary_xml_and_logs_are_refused_at_their_first_bad_byte(tmp_path, run):
    xml = tmp_path / "algo.xml"
    xml.write_bytes(b'<algo name="x" proto="Simple">\n  <gpu \xff/>\n</algo>\n')
    assert run("emit", "ir", xml) == (2, "", f"{xml}:2:8: error: byte 0xff is not UTF-8 text "
                                      f"(invalid start byte); {_NOT_UTF8}\n    <gpu \ufffd/>\n         ^\n")
    log = tmp_path / "nccl.log"
    log.write_bytes(b"# nccl-tests\n#  size \xc3")  # cut in the middle of a character
    machine = ROOT / "schedules" / "calibration" / "nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
    assert run("predict", machine, "--against", log) == (
        2, "", f"{log}:2:9: error: byte 0xc3 is not UTF-8 text (unexpected end of data); "
        f"{_NOT_UTF8}\n  #  size \ufffd\n          ^\n")
