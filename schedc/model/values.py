"""Runtime values of the elaborator.

Inside a `round`, loops are not run one iteration at a time: the evaluator works on *lanes*
(one lane per iteration), so a loop variable is a NumPy array and `g[(j + 1) % k]` is one
array operation for all j. Values that can vary per lane therefore hold either a scalar or
an array whose first axis is the lane axis.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ElaborationError, Span, UnitError
from ..units import DIMENSIONLESS, Dim, dim_name, format_quantity, to_float
from .scalars import Scalar, is_plain, rational, substitute, symbols_of, to_sympy

Number = int | Fraction


class NeedScalar(Exception):
    """Internal: this operation has no lane-wise form; rerun the round one lane at a time."""


@dataclass(frozen=True)
class Quantity:
    """A value with a dimension, in base units; `expr` may contain param symbols. Compiled
    without formulas (`schedc.model.scalars`), `expr` is the value itself and `params`
    names the params it was computed from, so what refuses an expression of params (a
    loop bound, a comparison) refuses it alike."""

    expr: Scalar
    dim: Dim
    params: frozenset[str] = frozenset()

    @property
    def is_symbolic(self) -> bool:
        return bool(self.params) or bool(symbols_of(self.expr))

    @property
    def param_names(self) -> list[str]:
        """The params the value depends on, by name, sorted."""
        return sorted(self.params | {str(s) for s in symbols_of(self.expr)})


@dataclass(frozen=True, eq=False)
class Devices:
    """Device ids: a device (rank 0), a group (rank 1), a list of groups (rank 2) …

    With `lanes`, axis 0 of `ids` is the lane axis and does not count in the rank. Groups
    that many lanes share (a branch's group, carried into the loops of a round) are kept once
    in `table`: lane k's ids are table[rows[k]], made only when asked for.
    """

    table: np.ndarray
    lanes: bool = False
    rows: np.ndarray | None = None

    @property
    def ids(self) -> np.ndarray:
        return self.table if self.rows is None else self.table[self.rows]

    @property
    def rank(self) -> int:
        return self.table.ndim - int(self.lanes)

    def __len__(self) -> int:
        return self.table.shape[int(self.lanes)]

    def pick(self, index) -> np.ndarray:
        """Member `index` (a number, or one per lane) of each lane's group."""
        lanes = np.arange(len(self.table)) if self.rows is None else self.rows
        return self.table[lanes, index]


@dataclass(frozen=True, eq=False)
class Region:
    """The slice [off/den, (off+length)/den) of the buffer; off and length may be lane arrays."""

    off: int | np.ndarray
    length: int | np.ndarray
    den: int

    @property
    def lanes(self) -> bool:
        return isinstance(self.off, np.ndarray) or isinstance(self.length, np.ndarray)


WHOLE = Region(0, 1, 1)


@dataclass(frozen=True, eq=False)
class IntRange:
    """`lo..hi`, both ends included; the ends may be lane arrays."""

    lo: int | np.ndarray
    hi: int | np.ndarray


@dataclass(frozen=True, eq=False)
class Integers:
    """A list of integers, `[0, 2, 1, 3]` or `[2 * i for i in 0..3]`: loop over it, index it,
    take its `len`. Entries fit in int64, so loops over it run as lanes."""

    values: np.ndarray  # 1-D, int64

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class TopoRef:
    """A topology name being indexed: `node`, `node[1]`, `node[h].g` before it becomes devices."""

    path: tuple[str, ...]
    indices: tuple = ()


@dataclass(frozen=True)
class SharedRef:
    """A shared resource (a slot or bus) named in `via`."""

    resource: int


class NoneValue:
    """The value of `none` (e.g. `expect solve(...) = none`)."""


Value = (
    Number | np.ndarray | bool | Quantity | Devices | Region | IntRange | Integers | TopoRef | SharedRef
    | NoneValue
)


def kind_of(value: object) -> str:
    """What a value is called in error messages."""
    if is_condition(value):
        return "a condition"
    if isinstance(value, (int, Fraction, np.ndarray)):
        return "a number"
    if isinstance(value, Quantity):
        from ..units import dim_name

        return dim_name(value.dim)
    if isinstance(value, Devices):
        return ["a device", "a group of devices", "a list of groups"][min(value.rank, 2)]
    if isinstance(value, Region):
        return "a region of the buffer"
    if isinstance(value, IntRange):
        return "a range"
    if isinstance(value, Integers):
        return "a list of numbers"
    if isinstance(value, TopoRef):
        return f"'{'.'.join(value.path)}' (not fully indexed)"
    if isinstance(value, SharedRef):
        return "a shared resource"
    if isinstance(value, NoneValue):
        return "none"
    return getattr(value, "kind", type(value).__name__)  # values of later stages name themselves


def as_number(value: object) -> Number | None:
    """The exact number a dimensionless, non-symbolic value stands for, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Fraction)):
        return value
    if isinstance(value, Quantity) and value.dim == DIMENSIONLESS and not value.params:
        exact = rational(value.expr)
        return None if exact is None else normalize(exact)
    return None


def normalize(value: Fraction) -> Number:
    """Fractions with denominator 1 become ints, so loop bounds and indices stay ints."""
    return int(value) if value.denominator == 1 else value


def from_rational(expr: Scalar) -> Fraction:
    """A SymPy rational (or an exact number) as an exact Fraction (the inverse of
    `scalars.to_sympy`)."""
    exact = rational(expr)
    if exact is None:
        raise TypeError(f"not a rational number: {expr}")
    return exact


def constant(value: Number, symbolic: bool) -> Scalar:
    """A number as a quantity's `expr`: a SymPy rational where formulas are built, else itself."""
    return to_sympy(value) if symbolic else value


def take_lanes(value: object, index: np.ndarray) -> object:
    """Select lanes `index` of a lane-varying value (scalars are shared by all lanes)."""
    if isinstance(value, np.ndarray):
        return value[index]
    if isinstance(value, Devices) and value.lanes:
        if value.rank == 0:
            return Devices(value.ids[index], True)
        return Devices(value.table, True, index if value.rows is None else value.rows[index])
    if isinstance(value, Region) and value.lanes:
        off = value.off[index] if isinstance(value.off, np.ndarray) else value.off
        length = value.length[index] if isinstance(value.length, np.ndarray) else value.length
        return Region(off, length, value.den)
    if isinstance(value, IntRange):
        lo = value.lo[index] if isinstance(value.lo, np.ndarray) else value.lo
        hi = value.hi[index] if isinstance(value.hi, np.ndarray) else value.hi
        return IntRange(lo, hi)
    if isinstance(value, TopoRef) and any(isinstance(i, np.ndarray) for i in value.indices):
        return TopoRef(value.path, tuple(i[index] if isinstance(i, np.ndarray) else i
                                         for i in value.indices))
    return value


def one_lane(value: object, lane: int) -> object:
    """Lane `lane` of a lane-varying value, as a plain (scalar) value."""
    value = take_lanes(value, np.array([lane]))
    if isinstance(value, np.ndarray):
        return value[0].item() if value.dtype != bool else bool(value[0])
    if isinstance(value, Devices) and value.lanes:
        return Devices(value.ids[0], False)
    if isinstance(value, Region) and value.lanes:
        return Region(_first(value.off), _first(value.length), value.den)
    if isinstance(value, IntRange):
        return IntRange(_first(value.lo), _first(value.hi))
    if isinstance(value, TopoRef):
        return TopoRef(value.path, tuple(_first(i) for i in value.indices))
    return value


def _first(value):
    return value[0].item() if isinstance(value, np.ndarray) else value


# ---- checks shared by expression evaluation and the built-in functions ------------------


def quantity_of(value: object, symbolic: bool = True) -> Quantity | None:
    """A number or a quantity as a quantity (a number is dimensionless), else None; with
    `symbolic`, a number becomes a SymPy rational (the analyses' formulas take it)."""
    if isinstance(value, Quantity):
        return value
    if is_plain(value):
        return Quantity(constant(value, symbolic), DIMENSIONLESS)  # type: ignore[arg-type]
    return None


def as_quantity(value: object, span: Span) -> Quantity:
    """An operand as a quantity; a number stays a number (an operator's other operand, a
    SymPy expression or not, decides what the result is)."""
    found = quantity_of(value, symbolic=False)
    if found is None:
        raise ElaborationError(f"expected a number or a quantity, not {kind_of(value)}", span)
    return found


def settle(q: Quantity) -> Quantity | int | Fraction:
    """A dimensionless constant quantity is just a number."""
    number = as_number(q)
    return q if number is None else number


def check_numeric(value: object, span: Span) -> None:
    ok = (isinstance(value, (int, Fraction)) and not isinstance(value, bool)) or (
        isinstance(value, np.ndarray) and value.dtype != bool)
    if not ok:
        notes = (condition_note(span),) if is_condition(value) else ()
        raise ElaborationError(f"expected a number, not {kind_of(value)}", span, notes)


def condition_note(span: Span, hint: str | None = None) -> str:
    """How to choose a number by the condition at `span` (true is not 1): `hint`, else
    `(1 if CONDITION else 0)`."""
    hint = hint or f"(1 if {span_text(span)} else 0)"
    return f"a condition is not a number; choose a number by it with `if … else`: {hint}"


def is_condition(value: object) -> bool:
    return isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray) and value.dtype == bool)


def span_text(span: Span) -> str:
    """The source text of a span on one line (for a hint), else '...'."""
    if span.line != span.end_line:
        return "..."
    return span.source.line(span.line)[span.col - 1:span.end_col - 1]


def as_condition(value: object, span: Span) -> bool | np.ndarray:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value
    raise ElaborationError(f"expected a condition, not {kind_of(value)}", span)


# ---- what a statement expects of a value -------------------------------------------------------


def expect_quantity(value: object, dim: Dim, span: Span, what: str) -> Quantity:
    """`value` as a quantity of dimension `dim`, or a unit error naming `what`."""
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool) and dim == DIMENSIONLESS:
        return Quantity(value, dim)  # the caller makes it SymPy's where formulas are built
    if isinstance(value, Quantity) and value.dim == dim:
        return value
    found = dim_name(value.dim) if isinstance(value, Quantity) else kind_of(value)
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        found = f"a plain number ({value}); give it a unit"
    raise UnitError(f"{what} must be {dim_name(dim)}, not {found}", span)


def check_positive(q: Quantity, nominal: dict, span: Span, what: str, zero_ok: bool = False) -> None:
    """`q` must be positive (or zero, with `zero_ok`) at the nominal point: a bandwidth, a
    message size, a buffer."""
    value = substitute(q.expr, nominal)
    wanted = "zero or more" if zero_ok else "positive"
    number = is_plain(value) or value.is_number
    if number and not is_plain(value) and not (value.is_extended_real and value.is_finite):
        raise ElaborationError(f"{what} must be {wanted}; this one is not a finite number (a "
                               "division by zero, at these values of its params?)", span)  # x/0
    if not number or not (value >= 0 if zero_ok else value > 0):
        shown = format_quantity(float(value), q.dim) if number else str(value)
        raise ElaborationError(f"{what} must be {wanted}; this one is {shown}", span)


FLOAT_MAX = Fraction(sys.float_info.max)


def check_float_range(number: int | Fraction, span: Span | None, what: str) -> None:
    """Values are exact, but sweeps, plots and report curves compute with floats: refuse
    `what` where a float cannot hold it (about 1.8e308 in base units)."""
    exact = Fraction(number)
    if abs(exact) > FLOAT_MAX:
        import sympy  # (only to show the number, in the error)
        shown = sympy.Float(sympy.Rational(exact.numerator, exact.denominator), 3)
        raise ElaborationError(f"{what} is {str(shown).lower()} in base units, beyond the "
                               "floating-point range (about 1.8e308) analyses compute in", span)


def check_at_most(q: Quantity, bound: int, nominal: dict, span: Span, what: str, why: str) -> None:
    """`q` must be at most `bound` at the nominal point (a share of a link's bandwidth)."""
    value = substitute(q.expr, nominal)
    if (is_plain(value) or value.is_number) and value > bound:
        shown = format_quantity(to_float(value), q.dim)
        if shown == format_quantity(bound, q.dim):  # 1.0000001 is not '1': every digit then
            shown = repr(to_float(value))
        raise ElaborationError(f"{what} must be at most {bound} ({why}); this one is {shown}", span)


def expect_device(value: object, span: Span, what: str) -> Devices:
    if isinstance(value, Devices) and value.rank == 0:
        return value
    if isinstance(value, SharedRef):
        raise ElaborationError(f"{what} must be a device, not a shared resource", span)
    raise ElaborationError(f"{what} must be a device, not {kind_of(value)}", span)
