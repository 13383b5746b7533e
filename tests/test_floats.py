"""render/floats.py writes Python's `repr` of whole float arrays: the same bytes as `repr`
itself (the reference: `floats.reference_rows`, `json.dumps`) for random bit patterns, the
edges of repr's layouts, powers of two and ten and their neighbours, and whatever Hypothesis
finds; and `sweep --csv` / `--json` write what the per-number formatting wrote before."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from conftest import SCHEDULES
from hypothesis import given, settings
from hypothesis import strategies as st

import schedc
from schedc.analysis.solve.sweep import parse_vary, sweep
from schedc.errors import UsageError
from schedc.render import floats, schubfach  # schubfach: its steps, checked one by one
from schedc.render.files import write_atomically
from schedc.render.text import dump_json

NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"


def reprs(values) -> list[str]:
    """The text `floats.json_list` gives each value (its fast path: the values of
    `assert_like_repr` are normal, zero or negative zero, none that it leaves to repr)."""
    text = floats.json_list(np.asarray(values, dtype=np.float64))
    return text[1:-1].split(", ") if text != "[]" else []


def assert_like_repr(values) -> None:
    """Each normal value (and zero) as repr writes it; subnormals are left to repr itself."""
    values = np.asarray(values, dtype=np.float64)
    values = values[(values == 0) | (np.abs(values) >= np.finfo(np.float64).smallest_normal)]
    wrong = [(repr(v), got) for v, got in zip(values.tolist(), reprs(values)) if repr(v) != got]
    assert wrong == [], f"{len(wrong)} of {len(values)} differ, e.g. {wrong[:5]}"


def random_doubles(count: int, seed: int) -> np.ndarray:
    """Uniform random bit patterns: every exponent as likely, so every layout of repr."""
    bits = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
    values = bits.view(np.float64)
    normal = np.isfinite(values) & (np.abs(values) >= np.finfo(np.float64).smallest_normal)
    return values[normal]


def test_random_bit_patterns_are_written_as_repr():
    assert_like_repr(random_doubles(100_000, seed=14))


def test_every_layout_edge_is_written_as_repr():
    # repr is positional for 1e-4 <= |v| < 1e16 and scientific outside; "0.0" and "-0.0"
    edges = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 100.0, 123.5, 1e-4, 1e-5,
             9.999999999999999e-05, 0.00012, 1e15, 1e16, 9999999999999998.0, 1.5e16, 1e17,
             123456789012345678.0, 2.0**53, 2.0**53 + 2, 2.0**60, 5e22, 1e22, 1e23, 1e100,
             1e-100, 5e-300, 1e-308, 2.2250738585072014e-308, 1.7976931348623157e308,
             4.35, 0.3 + 0.6, 1000.01658825, 8e9, 2.49375e-05, 1.3286388888888888e-05]
    assert_like_repr(edges + [-v for v in edges])


def test_powers_of_two_and_ten_and_their_neighbours_are_written_as_repr():
    twos = 2.0 ** np.arange(-1022, 1024)  # the irregular spacing below each power of two
    tens = np.array([float(f"1e{e}") for e in range(-307, 309)])
    for values in (twos, tens):
        assert_like_repr(np.concatenate([values, np.nextafter(values, 0),
                                         np.nextafter(values, np.inf)]))


def test_integers_and_short_decimals_are_written_as_repr():
    rng = np.random.default_rng(6)
    integers = rng.integers(0, 2**53, 20_000).astype(np.float64)
    decimals = [float(f"{rng.integers(1, 10**int(rng.integers(1, 16)))}e{rng.integers(-300, 290)}")
                for _ in range(20_000)]
    assert_like_repr(np.concatenate([integers, decimals, np.round(rng.uniform(0, 1e6, 20_000), 3)]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40))
def test_hypothesis_floats_are_written_as_repr(values):
    assert_like_repr(values)
    assert floats.json_list(np.array(values)) == json.dumps(values)  # subnormals: repr itself


def test_the_one_product_scaling_is_the_papers_rop():
    """_scaled takes vb, vbl, vbr from the top 64 bits of g (and the paper's three 126-bit
    rops only where those cannot decide, about 1 in 10): the same as the rops everywhere."""
    u = np.uint64
    x = np.abs(np.concatenate([random_doubles(100_000, seed=8), 2.0 ** np.arange(-1021, 1024)]))
    bits = x.view(u)
    fraction, biased = bits & u((1 << 52) - 1), (bits >> u(52)).astype(np.int64)
    irregular = (fraction == 0) & (biased > 1)
    cb = (fraction | u(1 << 52)) << u(2)
    cbs = [cb, cb - u(2) + irregular.astype(u), cb + u(2)]
    k = ((biased - 1075) * 661_971_961_083 - irregular * 274_743_187_321) >> 41
    h = (biased - 1075 + ((-k * 913_124_641_741) >> 38) + 2).astype(u)
    g1, g0 = (table[k - schubfach.K_MIN] for table in schubfach._powers_of_ten()[:2])
    fast = schubfach._scaled(k - schubfach.K_MIN, h, cbs, irregular)
    for got, expected in zip(fast, schubfach._round_to_odd(g1, g0, [v << h for v in cbs])):
        assert np.array_equal(got, expected)


def test_csv_rows_equal_the_reference_across_blocks():
    rows = 3 * floats.BLOCK // 4 + 5  # several blocks of 4 columns, the last one short
    rng = np.random.default_rng(3)
    columns = [np.geomspace(1e3, 1.6e10, rows), rng.uniform(0, 1e-3, rows),
               -rng.uniform(0, 1e20, rows), random_doubles(rows * 2, seed=4)[:rows]]
    assert b"".join(floats.csv_rows(columns)).decode() == floats.reference_rows(columns)
    assert b"".join(floats.csv_rows(columns[:1])).decode() == floats.reference_rows(columns[:1])
    assert b"".join(floats.csv_rows([np.array([])])) == floats.reference_rows([[]]).encode() == b""


@pytest.mark.parametrize(("cores", "load"), [({0}, 0.0), ({0, 1, 2, 3}, 0.0),
                                           ({0, 1, 2, 3}, 9.0)])  # 1, 4 and 1 threads
def test_the_pieces_come_in_order_on_threads_or_not(monkeypatch, cores, load):
    monkeypatch.setattr(floats.os, "sched_getaffinity", lambda pid: cores, raising=False)
    monkeypatch.setattr(floats.os, "cpu_count", lambda: len(cores))
    monkeypatch.setattr(floats.os, "getloadavg", lambda: (load, load, load), raising=False)
    values = np.geomspace(1e-9, 1e9, 5 * floats.BLOCK + 3)
    assert b"".join(floats.csv_rows([values, -values])).decode() == floats.reference_rows(
        [values, -values])
    assert floats.json_list(values) == json.dumps(values.tolist())


def test_blocks_with_special_values_go_through_repr():
    # nan, infinities and subnormals are not the fast path's; their block is repr's
    special = np.array([1.5, np.nan, np.inf, -np.inf, 5e-324, -2.5e-310, 0.0])
    assert b"".join(floats.csv_rows([special, special[::-1]])) == (
        b"1.5,0.0\nnan,-2.5e-310\ninf,5e-324\n-inf,-inf\n5e-324,inf\n-2.5e-310,nan\n0.0,1.5\n")


def test_json_list_is_json_dumps():
    values = np.concatenate([random_doubles(50_000, seed=5), [0.0, -0.0, 1e-320]])
    assert floats.json_list(values) == json.dumps(values.tolist(), allow_nan=False)
    assert floats.json_list(np.array([])) == "[]"
    with pytest.raises(ValueError):
        floats.json_list(np.array([1.0, np.nan]))


def test_dump_json_writes_an_array_as_the_list_it_holds():
    for length in (3, 16, 17, 1000):  # up to 16 numbers are indented, longer ones on one line
        values = np.linspace(0.5, 7.25, length)
        document = {"values": values, "nested": {"times": values * 1e-9}}
        as_lists = {"values": values.tolist(), "nested": {"times": (values * 1e-9).tolist()}}
        assert dump_json(document) == dump_json(as_lists)


def analysed_sweep():
    """The sweep's arrays, from the analysis, for the command's output to be checked on."""
    session = schedc.load(NVLINK)
    plan = parse_vary("V=1KB:16GB:5000", session.program)
    result = sweep(session.program, [session.timing(n) for n in session.selected(())], plan)
    columns = [result.values, *result.times.values()]
    return columns, result


def test_sweep_csv_and_json_are_the_per_number_formatting(run, tmp_path):
    """The CLI's file and JSON against the analysis' arrays written by `repr` and json.dumps:
    what sweep_csv and sweep_json wrote number by number before."""
    columns, result = analysed_sweep()
    target = tmp_path / "sweep.csv"
    code, _, err = run("sweep", NVLINK, "--vary", "V=1KB:16GB:5000", "--csv", target)
    assert code == 0, err
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(
        ["V (B)", *[f"{name} (s)" for name in result.times]])
    assert target.read_text() == header.getvalue() + floats.reference_rows(columns)
    code, out, _ = run("sweep", NVLINK, "--vary", "V=1KB:16GB:5000", "--json")
    document = json.loads(out)
    assert json.dumps(document["values"]) == json.dumps(result.values.tolist())
    for name, times in result.times.items():
        line = next(x for x in out.splitlines() if x.lstrip().startswith(f'"{name}"'))
        assert line.strip().rstrip(",") == f'"{name}": ' + json.dumps(times.tolist())


def test_a_failing_piece_leaves_no_file(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("before\n")

    def pieces():
        yield "a,b\n"
        raise UsageError("stopped half way")

    with pytest.raises(UsageError):
        write_atomically(target, pieces())
    assert target.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary left
