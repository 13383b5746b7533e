"""Units: exact factors, dimensions, and the grammar's unit list agreeing with the table."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import MACHINES
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.elaborate.evaluate import evaluate
from schedc.elaborate.lanes import Env, Names
from schedc.errors import ParseError, SourceFile
from schedc.language import syntax as ast
from schedc.language.parser import parse_expression
from schedc.model.values import Quantity
from schedc.units import (
    BYTES,
    DIMENSIONLESS,
    RATE,
    SECONDS,
    UNITS,
    format_bytes,
    format_number,
    format_quantity,
    format_rate,
    format_seconds,
)


@pytest.mark.parametrize("name", sorted(UNITS))
def test_every_unit_lexes_after_a_number(name):
    glued = parse_expression(SourceFile("<test>", f"3{name}"))
    assert isinstance(glued, ast.Number) and glued.unit == name
    if name == "%":  # percent only glued to its number: `3 %` is a modulo missing its operand
        return
    node = parse_expression(SourceFile("<test>", f"3 {name}"))
    assert isinstance(node, ast.Number) and node.unit == name


@pytest.mark.parametrize("name, factor, dim", [
    ("B", 1, BYTES), ("KB", 10**3, BYTES), ("kB", 10**3, BYTES), ("MB", 10**6, BYTES),
    ("GB", 10**9, BYTES), ("TB", 10**12, BYTES), ("KiB", 2**10, BYTES), ("MiB", 2**20, BYTES),
    ("GiB", 2**30, BYTES), ("TiB", 2**40, BYTES), ("bit", Fraction(1, 8), BYTES),
    ("Gbit", Fraction(10**9, 8), BYTES), ("GB/s", 10**9, RATE), ("Gbit/s", Fraction(10**9, 8), RATE),
    ("Gbps", Fraction(10**9, 8), RATE), ("GBps", 10**9, RATE), ("MiB/s", 2**20, RATE),
    ("s", 1, SECONDS), ("ms", Fraction(1, 10**3), SECONDS), ("us", Fraction(1, 10**6), SECONDS),
    ("\u00b5s", Fraction(1, 10**6), SECONDS), ("ns", Fraction(1, 10**9), SECONDS),
])
def test_factors_are_exact(name, factor, dim):
    assert UNITS[name] == (Fraction(factor), dim)


def test_gbit_per_second_is_an_eighth_of_a_gigabyte():
    assert UNITS["Gbit/s"][0] * 8 == UNITS["GB/s"][0]
    assert UNITS["Gbit/s"][0] == Fraction(125_000_000)


def test_percent_is_a_hundredth_only_after_a_number():
    assert parse_expression(SourceFile("<t>", "1%")).unit == "%"
    modulo = parse_expression(SourceFile("<t>", "7 % 3"))
    assert isinstance(modulo, ast.BinOp) and modulo.op == "%"


@pytest.mark.parametrize("text", ["7 % -3", "7 %-3", "7 % 3", "7 %3", "(7) % 3", "x % (3)"])
def test_a_percent_sign_not_glued_to_a_number_is_modulo(text):
    node = parse_expression(SourceFile("<t>", text))
    assert isinstance(node, ast.BinOp) and node.op == "%"


def test_seven_modulo_minus_three_is_minus_two(run, tmp_path):
    # Python's floor modulo: 7 = (-3)·(-3) + (-2). Before the rule, `7 % -3` was 7 − 3·1% = -2.93.
    path = tmp_path / "m.sched"
    path.write_text("report a = 7 % -3\nreport b = 7 - 3%\nreport c = 50% * 7\n")
    assert run("eval", path) == (0, "a  -2\nb  6.97\nc  3.5\n", "")


@pytest.mark.parametrize("text", ["3 %", "7%3"])
def test_percent_must_be_glued_and_end_its_literal(text):
    with pytest.raises(ParseError) as error:
        parse_expression(SourceFile("<t>", text))
    if text == "7%3":
        assert error.value.notes == ("'%' directly after a number is percent (50%); for modulo put "
                                     "a space before it (7 % 3)",)


@pytest.mark.parametrize("value, text", [
    (720 * 2**20, "720 MiB"), (5760 * 2**20, "5,760 MiB"), (128 * 10**9, "128 GB"),
    (4_544 * 10**9, "4.544 TB"), (100, "100 B"), (3 * 2**30, "3 GiB"),
])
def test_format_bytes(value, text):
    assert format_bytes(value) == text


def test_format_rate_and_seconds():
    assert format_rate(450 * 10**9) == "450 GB/s"
    assert format_seconds(Fraction(75746472, 10**10)) == "7.5746 ms"
    assert format_seconds(Fraction(83, 10**8)) == "830 ns"


# ---- signs: a negative value smaller than 1 in its printed unit kept its digits but lost its
# sign ('-0.5' was split at the point and its whole part '-0' printed as int('-0') = 0).


def test_a_negative_value_below_one_unit_keeps_its_sign(run, tmp_path):
    # 1 us - 1.0005 us = -0.0005 us = -0.5 ns; -5 B stays -5 B; -0.5 B/s and -0.3 as they are.
    path = tmp_path / "neg.sched"
    path.write_text("param a = 1 us\nreport e = a - 1.0005 us\nreport f = -5 B\n"
                    "report g = -0.5 B/s\nreport h = -0.3\nreport z = 0 * -1\n")
    assert run("eval", path) == (0, "e  -0.5 ns\nf  -5 B\ng  -0.5 B/s\nh  -0.3\nz  0\n", "")


@pytest.mark.parametrize("value, text", [
    (-0.5, "-0.5"), (-0.0, "0"), (0.0, "0"), (-1234.5, "-1,234.5"), (-0.00012345, "-0.00012345"),
])
def test_format_number_signs(value, text):
    assert format_number(value) == text


def test_a_negative_share_of_the_bandwidth_is_named_as_negative(run, tmp_path):
    path = tmp_path / "p.sched"
    path.write_text(f'import "{MACHINES / "flat_8.sched"}"\nprotocol LL alpha 1 us eff -0.5\n')
    code, out, err = run("time", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"{path}:2:28: error: a protocol's share of the bandwidth must be "
                          "positive; this one is -0.5\n")


class _NoNames(Names):
    def lookup(self, name: str) -> object | None:
        return None


def _parse_quantity(text: str) -> tuple[Fraction, tuple[int, int]]:
    """A printed quantity read back by the language ('1,024' without its digit grouping)."""
    node = parse_expression(SourceFile("<printed>", text.replace(",", "")))
    value = evaluate(node, Env(_NoNames()))
    if isinstance(value, Quantity):
        return Fraction(str(value.expr)), value.dim
    return Fraction(value), DIMENSIONLESS  # type: ignore[arg-type]


_DIMS = st.sampled_from([BYTES, SECONDS, RATE, DIMENSIONLESS])
_VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.fractions(max_denominator=10**12).filter(lambda f: abs(f) < 10**30),
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, _DIMS)
def test_formatting_then_parsing_keeps_the_sign(value, dim):
    text = format_quantity(value, dim)
    parsed, parsed_dim = _parse_quantity(text)
    exact = Fraction(value)
    assert parsed_dim == dim, text
    assert (parsed > 0) == (exact > 0) and (parsed < 0) == (exact < 0), (value, text)
    # and the value to the five significant digits it is printed with
    assert abs(parsed - exact) <= abs(exact) * Fraction(1, 10**4), (value, text)
