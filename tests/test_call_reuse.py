"""A sequential loop of calls elaborated once, its iterations as lanes
(`elaborate.schedule._loop_as_lanes`): the same rounds, batches, transfers, work counted,
times, verdicts and errors as its iterations elaborated one at a time — whether the calls'
arguments are the same, differ in value or differ in shape, and with calls inside
`parallel`."""

from __future__ import annotations

import pytest
from conftest import ROOT, write
from test_language import MACHINE
from test_parallel_lanes import RING

import schedc
import schedc.elaborate.schedule as elaboration
from schedc.analysis.verify.verdict import verdicts
from schedc.errors import SchedcError
from schedc.limits import Limits
from schedc.model.ir import Series
from schedc.session import Session

LIBRARY = ROOT / "schedules" / "lib" / "ring.sched"
ALL = "[g[i] for i in 0..7]"

# name -> (schedule body, whether its outermost sequential loop runs as lanes)
CASES = {
    # the benchmark's shape: the same call again and again
    "same": (f"for t in 0..5 {{\n  ring_ag({ALL})\n}}", True),
    # arguments that differ in value from call to call: a group, a region
    "values": ("for h in 0..3 {\n  ring_ag([g[h + 4*j] for j in 0..1])\n}", True),
    # a list written out of devices that differ between iterations has no lane-wise form
    "literal": ("for h in 0..3 {\n  ring_ag([g[h], g[h + 4]])\n}", False),
    "regions": (f"for t in 0..3 {{\n  ring_ar({ALL}, part(t % 2 of 2))\n}}", True),
    # two calls a loop: each iteration's rounds of both, in order
    "two calls": (f"for t in 0..2 {{\n  ring_rs({ALL})\n  ring_ag({ALL})\n}}", True),
    # lets, and an if every iteration takes the same way
    "lets": ("for t in 0..3 {\n  let G = [g[(t + j) % 8] for j in 0..3]\n"
             "  if t >= 0: ring_ag(G)\n}", True),
    # a round loop in the body whose transfers only some iterations make
    "filtered": ("for t in 0..3 {\n  for s in 0..1 round {\n"
                 "    if t % 2 == 0: copy part(t of 4) from g[t] to g[t + 4]\n  }\n"
                 "  ring_ag([g[t + 4*j] for j in 0..1])\n}", True),
    # arguments that differ in shape: rounds as many as the group is long
    "shapes": ("for n in 2..5 {\n  ring_ag([g[i] for i in 0..n-1])\n}", False),
    # calls inside parallel: in a loop, and a loop of calls in a parallel loop
    "parallel": ("for t in 0..2 {\n  parallel {\n    ring_ag([g[0], g[1], g[2], g[3]])\n"
                 "    ring_ag([g[4], g[5], g[6], g[7]])\n  }\n}", False),
    "in parallel for": ("parallel for h in 0..1 {\n  for t in 0..2 {\n"
                        "    ring_ag([g[4*h + j] for j in 0..3])\n  }\n}", True),
    # a loop inside the loop, and a loop that makes no rounds
    "nested": ("for a in 0..1 {\n  for b in 0..2 {\n    ring_ag([g[a], g[b + 4]])\n  }\n}", False),
    "empty": ("for t in 0..3 {\n  let x = t\n}", True),
}


def _session(tmp_path, body: str, reuse: bool, monkeypatch, limits: Limits | None = None,
             head: str = RING):
    """The case compiled with loops of calls as lanes (`reuse`) or one iteration at a time
    (from then on in the test)."""
    if not reuse:
        monkeypatch.setattr(elaboration, "_loop_as_lanes", lambda stmt, env, ctx: None)
    directory = tmp_path / str(reuse)
    directory.mkdir(exist_ok=True)
    text = MACHINE.replace("allreduce", "allgather") + head + "schedule x {\n" + body + "\n}\n"
    path = write(directory, "case.sched", text)
    return Session.open(path, (), limits) if limits else Session.open(path)


def _listed(schedule) -> list[list[tuple]]:
    """Every round's batches, in order, each with its statement and its transfers."""
    return [[(b.op, str(b.span).split(":", 1)[1], b.den, b.size,
              [(t.src, t.dst, t.region, t.into, t.bytes) for t in (b.transfer(k) for k in range(len(b)))])
             for b in r.batches] for r in schedule.rounds]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("at_once", [1 << 20, 1, 9])
def test_a_loop_of_calls_makes_the_rounds_of_one_iteration_at_a_time(tmp_path, monkeypatch,
                                                                      case, at_once):
    """Rounds, batches and transfers in order; times (formula and loads) and verdicts; also
    when the iterations run a few at a time (`at_once` transfers, judged by the first)."""
    body, as_lanes = CASES[case]
    made = []
    loop = elaboration._loop_as_lanes

    def spied(stmt, env, ctx):
        out = loop(stmt, env, ctx)
        made.append(out is not None)
        return out

    monkeypatch.setattr(elaboration, "_loop_as_lanes", spied)
    monkeypatch.setattr(elaboration, "BRANCH_TRANSFERS", at_once)
    a = _session(tmp_path, body, True, monkeypatch)
    a_schedule = a.schedule("x")
    if at_once == 1 << 20:  # (a group of one iteration has one shape of arguments)
        assert made and made[0] == as_lanes
    monkeypatch.setattr(elaboration, "BRANCH_TRANSFERS", at_once)
    b = _session(tmp_path, body, False, monkeypatch)
    b_schedule = b.schedule("x")
    assert _listed(a_schedule) == _listed(b_schedule)
    assert a_schedule.transfer_count == b_schedule.transfer_count
    if as_lanes and at_once == 1 << 20 and case != "in parallel for":  # (zipped with its twin branch)
        assert len(a_schedule.rounds.parts) <= 1 and \
            all(isinstance(p, Series) for p in a_schedule.rounds.parts)
    if a_schedule.transfer_count:
        ta, tb = schedc.time(a, "x", verify=False), schedc.time(b, "x", verify=False)  # verdicts below
        assert ta.time == tb.time and repr(ta.cost) == repr(tb.cost)
        va, vb = verdicts(a)[0], verdicts(b)[0]
        assert (va.ok, va.method, va.segments, va.failure) == \
            (vb.ok, vb.method, vb.segments, vb.failure)


def test_the_benchmark_shape_is_one_series(tmp_path, monkeypatch):
    """Six calls of a 7-round ring all-gather: one series of 42 rounds of 8 transfers, one
    batch (the library's copy statement), round t moving part (j - t % 7) % 8 from g[j]."""
    schedule = _session(tmp_path, CASES["same"][0], True, monkeypatch).schedule("x")
    (series,) = schedule.rounds.parts
    assert isinstance(series, Series) and len(series) == 42 and len(series.batches) == 1
    assert series.same_pairs and series.per_round() == [8]
    for t in (0, 6, 7, 41):
        regions = [tr.region[0] * 8 for tr in schedule.rounds[t].transfers()]
        assert regions == [(j - t % 7) % 8 for j in range(8)]


@pytest.mark.parametrize("body, words", [
    # iteration t = 3 reaches g[8]; iteration t = 2 sends from g[2] to itself
    ("for t in 0..3 {\n  ring_reduce_scatter([g[t], g[t + 5]])\n}", "8"),
    ("for t in 0..3 {\n  ring_reduce_scatter([g[t], g[2]])\n}", "g[2] to itself"),
    # an `error` in a called schedule at iteration 2, after the calls before it
    ("for t in 0..3 {\n  ring_allgather([g[0], g[1]])\n  stop(t)\n}", "stop at 2"),
])
def test_an_error_in_a_called_schedule_is_reported_where_one_at_a_time_reports_it(
        tmp_path, monkeypatch, body, words):
    """Errors raised inside the shipped library (another file): moved to the user's call, with
    the same notes (where it was raised, the chain of calls)."""
    head = f'import "{LIBRARY}"\nschedule stop(t) {{\n  if t == 2: error "stop at", t\n}}\n'
    messages = []
    for reuse in (True, False):
        with pytest.raises(SchedcError) as caught:
            _session(tmp_path, body, reuse, monkeypatch, head=head).schedule("x")
        messages.append((caught.value.message, str(caught.value.span).split(":", 1)[1],
                         [n.replace(str(tmp_path / str(reuse)), "<dir>") for n in caught.value.notes]))
    assert messages[0] == messages[1]
    assert words in messages[0][0]


def _outcomes(tmp_path, monkeypatch, case: str, limits: Limits) -> list[str]:
    """"ok" or the rendered refusal of the case under `limits`, with reuse and without."""
    outcomes = []
    for reuse in (True, False):
        try:
            _session(tmp_path, CASES[case][0], reuse, monkeypatch, limits).schedule("x")
            outcomes.append("ok")
        except SchedcError as error:
            outcomes.append(error.render().replace(str(tmp_path / str(reuse)), "<dir>"))
    return outcomes


@pytest.mark.parametrize("steps", range(1, 60, 2))
def test_work_is_counted_as_one_iteration_at_a_time(tmp_path, monkeypatch, steps):
    """Under step limits around the loop's (4 iterations × (1 + a call + 7 rounds) ...), the
    lanes refuse or accept as one iteration at a time, with the same message."""
    outcomes = _outcomes(tmp_path, monkeypatch, "regions", Limits(steps=steps))
    assert outcomes[0] == outcomes[1]
    assert outcomes[-1] == "ok" or "step" in outcomes[-1] or "iteration" in outcomes[-1]


@pytest.mark.parametrize("transfers", range(8, 20))
def test_a_transfer_limit_refuses_as_one_iteration_at_a_time(tmp_path, monkeypatch, transfers):
    """`filtered` makes 2 + 2 transfers in iterations 0 and 2, 0 + 2 in 1 and 3: 12 in all.
    One iteration at a time refuses a loop whose first iteration's count × 4 (16) passes the
    limit, even where the whole loop (12) fits: so do the lanes."""
    outcomes = _outcomes(tmp_path, monkeypatch, "filtered", Limits(transfers=transfers))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "ok") == (transfers >= 16)
    if 12 <= transfers < 16:
        assert "this loop of 4 iterations would make about 16 transfers" in outcomes[0]
