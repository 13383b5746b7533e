"""`elaborate.structure`: where a structural param enters a schedule in ways a fit in n cannot
see, read from the source, each with its line and what it gives (boundaries worked out by
hand from the comparison in each case)."""

from __future__ import annotations

from conftest import SCHEDULES, write

import schedc
from schedc.elaborate.structure import dependence


def _read(tmp_path, body: str, name: str = "trap"):
    path = write(tmp_path, "case.sched", f"""param V = 1 MiB
param p = 8
topology {{
  gpu g[4]
  link g[0] -> g[1] bw 1 GB/s
}}
broadcast V over [g[0], g[1]] root g[0]
schedule {name} {{
  {body}
}}
""")
    session = schedc.load(path)
    return path, dependence(session.modules, "p", (session.program.result(name).definition,))


def test_the_seed_ring_and_hierarchical_are_regular():
    # Loop bounds, group sizes, part counts and `% k` by the group size only.
    session = schedc.load(SCHEDULES / "seed" / "nvlink_hosts.sched")
    for name in ("ring", "hierarchical"):
        found = dependence(session.modules, "hosts", (session.program.result(name).definition,))
        assert found.regular and found.notes == () and found.period == 1 and not found.powers


def test_comparisons_give_exact_boundaries(tmp_path):
    # p > 48 is false at 48 and true at 49; 2p - 1 >= 255 first holds at p = 128; p == 10
    # holds only at 10, so pieces start at 10 and 11; min(p, 48) takes 48 from p = 49.
    cases = {"if p > 48: round { copy all from g[0] to g[1] }": (49,),
             "if 2 * p - 1 >= 255: round { copy all from g[0] to g[1] }": (128,),
             "if p == 10: round { copy all from g[0] to g[1] }": (10, 11),
             "for s in 1..min(p, 48) round { copy all from g[0] to g[1] }": (49,)}
    for body, boundaries in cases.items():
        path, found = _read(tmp_path, body)
        assert found.boundaries == boundaries, body
        (note,) = found.notes
        assert note.startswith(f"{path}:9: `{body}`: ") and "a piece starts at" in note


def test_a_modulus_is_a_period_and_a_rounding_steps(tmp_path):
    _, found = _read(tmp_path, "if p % 9 == 0: round { copy all from g[0] to g[1] }")
    assert found.period == 9 and found.boundaries == ()  # constant on each residue class
    # p % 3 + p >= 20 on the class p = 3m + r is p + r >= 20: it first holds at 21 (r = 0),
    # 19 (r = 1) and 20 (r = 2), the previous member of each class being below.
    _, found = _read(tmp_path, "if p % 3 + p >= 20: round { copy all from g[0] to g[1] }")
    assert found.period == 3 and found.boundaries == (19, 20, 21)
    # ceil(p/64) steps after each multiple of 64; floor(p/64) at each multiple.
    _, found = _read(tmp_path, "for s in 1..ceil(p / 64) round { copy all from g[0] to g[1] }")
    assert found.period == 1 and found.boundaries[:3] == (65, 129, 193)
    _, found = _read(tmp_path, "for s in 0..p // 64 round { copy all from g[0] to g[1] }")
    assert found.boundaries[:3] == (64, 128, 192)


def test_log2_and_bit_operations_ask_for_the_powers_of_two(tmp_path):
    _, found = _read(tmp_path, "for s in 1..log2(p) round { copy all from g[0] to g[1] }")
    assert found.powers and [d.kind for d in found.dependences] == ["powers of two"]


def test_what_is_not_solved_is_a_note_naming_its_line(tmp_path):
    path, found = _read(tmp_path, "for s in 0..p * p round { copy all from g[0] to g[1] }")
    assert [d.kind for d in found.dependences] == ["checked"]
    assert found.notes[0].startswith(f"{path}:9: ") and "(not affine)" in found.notes[0]
    # A loop index compared with the param: not solved here, noted.
    path, found = _read(tmp_path, "for s in 0..p round { if s > 3: copy all from g[0] to g[1] }")
    assert [d.kind for d in found.dependences] == ["checked"] and found.boundaries == ()


def test_a_precondition_is_not_a_dependence(tmp_path):
    _, found = _read(tmp_path, 'if p & (p - 1) != 0: error "p must be a power of two"\n'
                               "  round { copy all from g[0] to g[1] }")
    assert found.regular and not found.powers


def test_only_what_the_schedule_reaches_counts(tmp_path):
    # The library's recursive doubling takes log2 of its group; the ring does not.
    session = schedc.load(SCHEDULES / "algorithms" / "flat_p.sched")

    def read(name):
        return dependence(session.modules, "p", (session.program.result(name).definition,))

    assert read("ring_allreduce").regular
    found = read("rd_allreduce")  # a result named like the library function it calls
    assert found.powers and all("recursive.sched" in d.line for d in found.dependences)
