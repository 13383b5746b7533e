"""The table of collectives: every kind in it verifies a library schedule and has the bound
derived by hand; an unknown kind is a diagnostic."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from conftest import SCHEDULES, write

import schedc
from schedc.model.collectives import KINDS, collective_kind

# The bound on schedules/algorithms/flat_8.sched (p = 8 ranks, one port of bandwidth B each
# to a non-blocking switch), as a multiple of V/B, by hand: a cut of a ranks against 8 - a
# carries min(a, 8 - a)·B each way; the largest bound is a single rank's cut unless said.
BY_HAND = {
    "allreduce": Fraction(14, 8),  # end-host: 2(p-1)·V over 8 ports; a single rank's cut: V/B
    "reduce_scatter": Fraction(7, 8),  # a rank sends 7/8 of its input to the others
    "allgather": Fraction(7, 8),  # a rank receives the 7 shares it lacks
    "broadcast": Fraction(1),  # the root's V leaves through its port
    "reduce": Fraction(1),  # V reaches the root through its port
    "alltoall": Fraction(7, 8),  # a rank sends a p-th of V to each of 7 others
    "alltonext": Fraction(1),  # ranks[0]'s V to ranks[1] leaves through its port
    "alltoprev": Fraction(1),  # ranks[7]'s V to ranks[6], likewise
}


def test_every_kind_verifies_a_library_schedule_and_has_its_bound(shipped):
    session = shipped["schedules/algorithms/flat_8.sched"]
    assert sorted(BY_HAND) == sorted(KINDS)  # a new kind needs its line here
    symbols = {name: param.symbol for name, param in session.program.params.items()}
    V, B = symbols["V"], symbols["B"]
    bounds = {b.collective.kind: b for b in schedc.bound(session)}
    assert sorted(bounds) == sorted(KINDS)  # the file has a schedule of every kind
    for kind, factor in BY_HAND.items():
        found = bounds[kind]
        assert sympy.simplify(found.best - factor * V / B) == 0, kind
        assert found.binds == ("end-host" if kind == "allreduce" else "cut"), kind
        names = [e.timing.schedule.name for e in found.schedules]
        assert names and all(v.ok for v in schedc.verify(session, names)), kind
        assert all(e.ratio >= 1 for e in found.schedules), kind


def test_a_rooted_kind_has_a_root_and_the_others_none():
    for kind in KINDS.values():
        assert collective_kind(kind.name) is kind
        assert kind.rooted == (kind.name in ("broadcast", "reduce"))


MACHINE = f'import "{SCHEDULES}/machines/flat_8.sched"\nimport "{SCHEDULES}/lib/ring.sched"\n'


@pytest.mark.parametrize(("line", "message"), [
    ("allreduc 1 MiB over ranks", "unknown collective 'allreduc'; did you mean 'allreduce'?"),
    ("frobnicate 1 MiB over ranks",
     "unknown collective 'frobnicate' (collectives: allreduce, reduce_scatter, reducescatter, "
     "allgather, broadcast, reduce, alltoall, alltonext, alltoprev)"),
    ("allgather 1 MiB over ranks root ranks[0]", "allgather has no root"),
    ("broadcast 1 MiB over ranks", "broadcast needs a root: 'broadcast V over ranks root ranks[0]'"),
])
def test_a_collective_the_table_refuses(run, tmp_path, line, message):
    path = write(tmp_path, "case.sched", MACHINE + line + "\n")
    code, out, err = run("verify", path)
    assert (code, out) == (2, "")
    first, source, caret = err.splitlines()[:3]
    assert first.startswith(f"{path}:3:") and first.endswith(f"error: {message}")
    assert source == "  " + line
    if "unknown" in message:  # the caret is on the kind
        assert caret == "  " + "^" + "~" * (line.index(" ") - 1)


def test_an_alias_means_its_collective(run, tmp_path):
    path = write(tmp_path, "case.sched", MACHINE + "param V = 1 MiB\nreducescatter V over ranks\n"
                 "schedule rs = ring_reduce_scatter(ranks)\n")
    code, out, err = run("verify", path)
    assert code == 0, err
    assert out.startswith("rs: reduce_scatter over 8 ranks: verified")


def test_a_name_alone_at_the_top_is_read_as_a_collective(run, tmp_path):
    path = write(tmp_path, "case.sched", "param alpha = 1 us\nV = 64 MiB\n")
    code, out, err = run("verify", path)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (
        f"{path}:2:1: error: unexpected '=' after 'V'; a statement starting with a name "
        "declares a collective, as in 'allreduce V over ranks' (define a name with "
        "'param V = ...' or 'let V = ...')")
