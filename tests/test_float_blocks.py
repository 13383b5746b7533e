"""The whole-block paths of render/floats.py against `repr`: a block whose numbers share one
layout (one sign and decimal point position: what a sweep's blocks nearly always are) takes
it once instead of number by number, and fits in three words when it can; columns with the
same bits are formatted once. And the sweep's grid rounding and fastest schedule, made
cheaper, against the plain NumPy expressions they replace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedc.analysis.solve.sweep import _significant
from schedc.render import floats
from schedc.render.sweep import _fastest


def as_repr(values: np.ndarray, separator: bytes) -> bytes:
    return b"".join(repr(v).encode() + separator for v in values.tolist())


@pytest.mark.parametrize("separator", [b",", b", "])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_block_of_one_decade_is_written_as_repr(sign, separator):
    """Every decade of the doubles (every layout row: positional, "0.000ddd", scientific
    with 2 and 3 exponent digits), numbers of many digits and of one ("1e-05": no point)."""
    rng = np.random.default_rng(int(sign) + len(separator))
    for exponent in [*range(-30, 31), -310, -300, -101, -100, -99, 99, 100, 200, 307]:
        scale = float(f"1e{exponent}")
        for values in (rng.uniform(1, 9.99, 300) * scale,  # 16 and 17 digits
                       np.round(rng.uniform(1, 9.99, 300), 3) * scale,  # a few digits
                       np.array([1.0, 2.0, 5.0, 3.0]) * scale,  # one digit
                       np.array([1.0, 1.5, 2.0, 2.25]) * scale):  # one or a few
            values = sign * values[np.abs(values) >= np.finfo(np.float64).smallest_normal]
            slots = floats._slots(values, separator)
            assert slots is not None
            assert floats._text(slots) == as_repr(values, separator), (exponent, values[:3])


def test_the_layouts_fit_three_words_exactly_when_a_number_could_not_overflow_them():
    # a decade of positive positional numbers fits; "-0.000", 17 digits and ", " do not
    assert floats._slots(np.geomspace(1e3, 9e3, 500), b", ").shape == (500, 3)
    assert floats._slots(np.geomspace(1.3e-5, 9e-5, 500), b", ").shape == (500, 3)  # e-05
    tiny = -np.geomspace(1.1e-4, 9e-4, 500)  # "-0.000" then up to 17 digits
    assert floats._slots(tiny, b", ").shape == (500, 4)
    assert floats._text(floats._slots(tiny, b", ")) == as_repr(tiny, b", ")
    assert floats._slots(tiny, b",").shape == (500, 3)
    mixed = np.array([1.5, 2.5e-300, -3.0, 4e20])  # no layout in common: number by number
    assert floats._slots(mixed, b",").shape == (4, 4)
    assert floats._text(floats._slots(mixed, b",")) == as_repr(mixed, b",")


def test_equal_columns_are_written_once_and_each_where_it_stands(monkeypatch):
    monkeypatch.setattr(floats, "BLOCK", 100)
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, 1e-3, 250), np.geomspace(1e3, 1e12, 250)
    negative_zero = np.zeros(250)
    negative_zero[7] = -0.0  # the same numbers as zeros but not the same bits: another text
    for columns in ([b, a, a.copy(), b], [a, b, a], [np.zeros(250), negative_zero, b],
                    [b, b], [b]):
        assert b"".join(floats.csv_rows(columns)).decode() == floats.reference_rows(columns)
    assert floats._first_equal([b, a, a.copy(), b, negative_zero, np.zeros(250)]) == \
        [0, 1, 1, 0, 4, 5]
    assert floats.json_list(a) == json.dumps(a.tolist())


def test_the_grid_rounding_is_the_whole_array_expression_it_replaced():
    def whole_arrays(grid, digits):  # sweep._significant before it worked in blocks
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            exponent = np.floor(np.log10(np.abs(grid)))
            shift = np.where(np.isfinite(exponent), digits - 1 - exponent, 0).astype(np.int64)
            up = shift >= 0
            scale = 10.0 ** np.abs(shift)
            rounded = np.where(up, np.round(grid * scale) / scale,
                               np.round(grid / scale) * scale)
        return np.where(np.abs(shift) <= 22, rounded, grid)

    rng = np.random.default_rng(9)
    grids = [np.geomspace(1e3, 1.6e10, 40_000), np.linspace(0, 1e30, 40_000),
             -np.geomspace(1e-300, 1e300, 40_000), rng.uniform(-1e5, 1e5, 40_000),
             np.geomspace(1e-9, 1e-2, 7)]
    for grid in grids:
        assert np.array_equal(_significant(grid, 12).view(np.uint64),
                              whole_arrays(grid, 12).view(np.uint64))


def test_the_fastest_schedule_is_argmin_over_the_columns():
    rng = np.random.default_rng(4)

    class Result:  # the two fields _fastest reads
        def __init__(self, columns):
            self.values, self.times = columns[0], {str(k): c for k, c in enumerate(columns)}

    for _ in range(200):
        count, points = int(rng.integers(1, 5)), int(rng.integers(1, 60))
        columns = [rng.integers(0, 4, points).astype(float) for _ in range(count)]  # ties
        assert np.array_equal(_fastest(Result(columns)),
                              np.argmin(np.vstack(columns), axis=0))
