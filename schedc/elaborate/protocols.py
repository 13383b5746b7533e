"""`protocol P ...` statements → `Protocol`s (model/protocol.py), each value checked at the
nominal point against its physical range, with the caret under the value; and `step cost
sum|max|pipelined chunk Q`, how a round's start-up and transfer add up (cost/formula.py,
cost/pipeline.py).

    protocol Simple alpha a_S eff e_S launch b class nic alpha 14 us class nic eff e_S_nic

`class C eff` is the protocol's share of links of class C, where it differs from its share
of the others (`eff`): NCCL rates a network link at its line rate (src/graph/topo.cc,
ncclTopoAddNet: `net->net.bw = mbps / 8000.0`) but an NVLink below it (topo.h: SM90_NVLINK_BW
20.6 GB/s of 25), so one share per protocol cannot serve both.
"""

from __future__ import annotations

from ..choices import NCCL_PROTOCOLS  # `protocol LL ...`: NCCL's names
from ..errors import ElaborationError, Span, did_you_mean
from ..language import syntax as ast
from ..model.protocol import MAX_EFF, Protocol
from ..model.scalars import Scalar, to_sympy
from ..model.values import check_at_most, check_positive, constant, expect_quantity
from ..units import BYTES, DIMENSIONLESS, RATE, SECONDS
from .evaluate import evaluate
from .lanes import Env

_ATTRS = {"alpha": (SECONDS, "a protocol's start-up"),
          "launch": (SECONDS, "a protocol's per-call latency"),
          "eff": (DIMENSIONLESS, "a protocol's share of the bandwidth"),
          "cap": (RATE, "a protocol's rate cap")}


def read_protocol(stmt: ast.Protocol, env: Env, nominal: dict, earlier: list[Protocol],
                  default_alpha: Scalar) -> Protocol:
    """The protocol `stmt` declares; `earlier` are the ones declared before it."""
    _check_name(stmt, earlier)
    symbolic = env.names.symbolic
    seen: dict[tuple[str, str | None], Span] = {}
    values: dict[str, Scalar] = {}
    per_class: dict[str, list[tuple[str, Scalar]]] = {"alpha": [], "cap": [], "eff": []}
    for attr in stmt.attrs:
        key = (attr.kind, attr.cls)
        if key in seen:
            raise ElaborationError(f"{attr.kind} is already given at {seen[key]}", attr.span)
        seen[key] = attr.span
        dim, what = _ATTRS[attr.kind]
        quantity = expect_quantity(evaluate(attr.value, env), dim, attr.value.span, what)
        # The physical ranges (model/protocol.py): a start-up >= 0, a share in (0, 1].
        check_positive(quantity, nominal, attr.value.span, what,
                       zero_ok=attr.kind in ("alpha", "launch"))
        if attr.kind == "eff":
            check_at_most(quantity, MAX_EFF, nominal, attr.value.span, what,
                          "all of the link's bandwidth")
        expr = to_sympy(quantity.expr) if symbolic else quantity.expr  # (a plain share)
        if attr.cls is None:
            values[attr.kind] = expr
        else:
            per_class[attr.kind].append((attr.cls, expr))
    return Protocol(stmt.name, values.get("alpha", default_alpha),
                    values.get("eff", constant(1, symbolic)), tuple(per_class["alpha"]),
                    tuple(per_class["cap"]), stmt.span, values.get("launch", constant(0, symbolic)),
                    tuple(per_class["eff"]))


def _check_name(stmt: ast.Protocol, earlier: list[Protocol]) -> None:
    if stmt.name not in NCCL_PROTOCOLS:  # a typo (LL218) would be a protocol of its own
        same = [p for p in NCCL_PROTOCOLS if p.lower() == stmt.name.lower()]
        hint = (f"; did you mean '{same[0]}'?" if same
                else did_you_mean(stmt.name, list(NCCL_PROTOCOLS), "NCCL's protocols"))
        raise ElaborationError(f"unknown protocol '{stmt.name}'{hint}", stmt.name_span or stmt.span,
                               ("a protocol is one of NCCL's, spelt as NCCL spells them: "
                                f"{', '.join(NCCL_PROTOCOLS)}",) if hint.startswith(";") else ())
    previous = next((p for p in earlier if p.name == stmt.name), None)
    if previous is not None:
        raise ElaborationError(f"protocol '{stmt.name}' is already declared at {previous.span}",
                               stmt.span)


STEP_RULES = ("sum", "max", "pipelined")  # `step cost RULE`: α + V/B (lock-step, the default),
# max(α, V/B), or `pipelined chunk Q`: the rounds as stages of a pipeline of chunks (pipeline.py)


def read_step_rule(stmt: ast.StepCost, earlier: tuple[str, Span, Scalar | None] | None,
                   env: Env, nominal: dict) -> tuple[str, Span, Scalar | None]:
    """`step cost sum|max|pipelined chunk Q`, once per program (an imported file's counts);
    the chunk Q (bytes, > 0) with `pipelined` only."""
    if earlier is not None:
        raise ElaborationError(f"the step cost is already given at {earlier[1]}", stmt.span)
    if stmt.rule not in STEP_RULES:
        raise ElaborationError(
            f"unknown step cost '{stmt.rule}'"
            + (did_you_mean(stmt.rule, list(STEP_RULES), "step costs") or ""),
            stmt.rule_span or stmt.span,
            ("`step cost sum`: a round costs α + V/B (the default); `step cost max`: "
             "max(α, V/B), its start-up overlapped with its transfer; `step cost pipelined "
             "chunk Q`: the call in chunks of Q bytes, the rounds its pipeline's stages",))
    if (stmt.chunk is None) != (stmt.rule != "pipelined"):
        raise ElaborationError(
            "`step cost pipelined` needs its chunk size: `step cost pipelined chunk 8 MiB`"
            if stmt.chunk is None else f"`step cost {stmt.rule}` takes no chunk (only "
            "`step cost pipelined chunk Q` does)", stmt.chunk.span if stmt.chunk else stmt.span)
    chunk = None
    if stmt.chunk is not None:
        quantity = expect_quantity(evaluate(stmt.chunk, env), BYTES, stmt.chunk.span,
                                   "a pipeline's chunk")
        check_positive(quantity, nominal, stmt.chunk.span, "a pipeline's chunk")
        chunk = quantity.expr
    return stmt.rule, stmt.span, chunk
