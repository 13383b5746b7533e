"""Units: exact factors, dimensions, and the grammar's unit list agreeing with the table."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.errors import ParseError, SourceFile
from schedc.language import syntax as ast
from schedc.language.parser import parse_expression
from schedc.units import BYTES, RATE, SECONDS, UNITS, format_bytes, format_rate, format_seconds


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
