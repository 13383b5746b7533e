"""Shared fixtures: run the command line in-process, and compile schedules (the shipped
ones once per test session)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sympy
from hypothesis import settings
from repro_inputs import ONE_TRANSFER as ONE_TRANSFER
from repro_inputs import rail_machine as rail_machine

import schedc
from schedc.cli import main
from schedc.elaborate.program import DEFAULT_LIMITS
from schedc.session import Session

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES = ROOT / "schedules"
SHARED_DATA = ROOT.parent / "shared" / "data"  # third-party data, never part of the project
MACHINES = Path(__file__).resolve().parent / "fixtures" / "machines"  # small test machines
MiB = 2**20

# Hypothesis: the example counts written at the tests are a local run's; CI (the environment
# variable CI set) runs four times as many. HYPOTHESIS_PROFILE names a profile explicitly.
# No deadline: Hypothesis's default fails an example that takes over 200 ms of wall time,
# which a loaded machine decides, not the code (the tests that bound time bound CPU time).
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=400, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI") else "dev"))


def examples(n: int) -> int:
    """`n` examples in a local run, scaled by the profile loaded."""
    return max(1, n * settings.default.max_examples // 100)


# ---- third-party data: tests that read it skip, naming what is missing, when it is absent ----

SHARED_DATA_ABSENT = "needs the third-party data in "  # the start of every such skip's reason


def needs_shared_data(*parts: str) -> Path:
    """SHARED_DATA / parts, or skip the test with one reason naming the missing path: the
    folder itself when it is absent (every such test then gives the same reason, counted at
    the end of the run), else the file or folder within it."""
    path = SHARED_DATA.joinpath(*parts)
    missing = SHARED_DATA if not SHARED_DATA.exists() else path
    if not missing.exists():
        pytest.skip(f"{SHARED_DATA_ABSENT}{SHARED_DATA}: {missing} is absent")
    return path


def pytest_terminal_summary(terminalreporter) -> None:
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if SHARED_DATA_ABSENT in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: they need the third-party "
                                    f"data in {SHARED_DATA}, which is absent here")


# ---- the shipped schedules, compiled once ---------------------------------------------------

_COMPILED: dict[tuple[str, Path], Session] = {}
_open = Session.open  # as it is before `reuse_shipped` replaces it


def compiled(path: str | Path) -> Session:
    """The session of a file under schedules/ without overrides, compiled once per test
    session (per spelling of its path, which the program's spans and messages quote)."""
    key = (str(path), Path(path).resolve())
    if key not in _COMPILED:
        _COMPILED[key] = _open(path)
    return _COMPILED[key]


def _shipped_file(path: str | Path, sets, limits) -> bool:
    return not tuple(sets) and limits == DEFAULT_LIMITS and \
        Path(path).resolve().is_relative_to(SCHEDULES) and Path(path).suffix == ".sched"


@pytest.fixture(scope="session")
def shipped() -> dict[str, Session]:
    """Every file of schedules/, compiled, timed and verified once per test session, as
    commands run from the repository root name them: "schedules/seed/nvlink_2x8.sched" →
    its Session (verdicts are memoised in it)."""
    found = {}
    here = os.getcwd()
    os.chdir(ROOT)  # the relative spelling, as `schedc check schedules/` gives it
    try:
        for path in sorted(Path("schedules").rglob("*.sched")):
            session = compiled(path)
            for name in session.selected(required=False):
                session.timing(name)
            schedc.verify(session)
            found[path.as_posix()] = session
    finally:
        os.chdir(here)
    return found


@pytest.fixture
def reuse_shipped(monkeypatch, shipped):
    """Commands run in this test reuse the sessions of the shipped files (see `compiled`)
    instead of compiling them again; with --set or other limits they compile as usual."""
    def open_once(cls, path, sets=(), limits=DEFAULT_LIMITS, *machine, symbolic=True):
        if _shipped_file(path, sets, limits) and not any(machine) and symbolic:
            return compiled(path)  # (not with --machine, --ranks, --no-formula)
        return _open(path, sets, limits, *machine, symbolic=symbolic)

    monkeypatch.setattr(Session, "open", classmethod(open_once))


@pytest.fixture
def run(capsys):
    """run(*args) -> (exit code, stdout, stderr) of `schedc args...`."""

    def _run(*args):
        with pytest.raises(SystemExit) as exc:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return exc.value.code, captured.out, captured.err

    return _run


def flat_machine(n: int) -> str:
    """The flat test machine with `n` GPUs, as the text of a file. Sizes 4 and 8 are files in
    MACHINES (flat_4.sched, flat_8.sched) for tests to import; this writes any other size."""
    return f"""# The flat test machine: {n} GPUs, one port of bandwidth B each to one switch. Written
# by tests/conftest.py flat_machine({n}), which gives the same machine for any size.
param alpha = 1 us
param B = 25 GB/s
param V = 1 MiB
topology {{
  gpu g[{n}]
  switch sw
  link g[i] <-> sw bw B for i in 0..{n - 1}
}}
let ranks = [g[i] for i in 0..{n - 1}]
"""


def timings(path, *sets: str, names=None):
    """{schedule name: Timing} for a file, with `--set` style overrides (a shipped file without
    them is compiled once per test session)."""
    shipped = _shipped_file(path, sets, DEFAULT_LIMITS)
    session = compiled(path) if shipped else schedc.load(path, sets)
    chosen = names or session.selected(required=False)
    return session.program, {n: schedc.time(session, n, verify=False) for n in chosen}


def expr(program, text: str) -> sympy.Expr:
    """Parse a formula with the program's param symbols (which carry assumptions)."""
    return sympy.sympify(text, locals={p.name: p.symbol for p in program.params.values()})


def golden(path: Path, actual: str) -> None:
    """Compare output with a stored, reviewed expected file. The test never writes it: with
    SCHEDC_UPDATE_GOLDEN=1 a differing output is written beside it as `NAME.new` (git ignores
    those) and the test still fails, until a person reads the diff and moves the candidate
    over the expected file (docs/contributing.md)."""
    candidate = path.with_name(path.name + ".new")
    if path.exists() and actual == path.read_text():
        candidate.unlink(missing_ok=True)  # a stale candidate of an output now accepted
        return
    if os.environ.get("SCHEDC_UPDATE_GOLDEN"):
        candidate.write_text(actual)
        hint = f"candidate written: diff {path} {candidate}, then mv it over {path.name} if right"
    else:
        hint = f"SCHEDC_UPDATE_GOLDEN=1 writes the output to {candidate.name} for review"
    assert path.exists(), f"missing expected file {path}; {hint}"
    assert actual == path.read_text(), hint


def imported_by(args, modules) -> tuple[int, list[str]]:
    """The exit code of `schedc ARGS`, run from the root in a fresh interpreter (this one has
    imported everything), and which of `modules` it imported by its end. The code is given
    too, so that a command that fails early, before the paths that import them, cannot pass
    a check that they were not imported."""
    import subprocess
    import sys
    code = ("import sys\nfrom schedc.cli import main\nnames = sys.argv[1].split(',')\n"
            "try:\n    main(sys.argv[2:])\nexcept SystemExit as exc:\n    status = exc.code\n"
            "print(status, ','.join(n for n in names if n in sys.modules), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, ",".join(modules), *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert result.returncode == 0, result.stderr
    status, _, found = result.stderr.strip().splitlines()[-1].partition(" ")
    return int(status), [n for n in found.split(",") if n]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path
