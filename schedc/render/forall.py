"""`verify --for-all`: what holds for every value of the param, as text and as JSON (schema
`schedc.verify/2`: `schedc.verify/1` with a `for_all` object in each schedule's entry)."""

from __future__ import annotations

from ..analysis.forall.family import ForAll, Instance
from .errors import error_entry
from .verdict import verdict_json, verdict_text


def for_all_text(r: ForAll) -> str:
    head = f"{r.schedule}: {r.collective} for every {r.param} >= {r.start}: "
    if r.status == "proved":
        return f"{head}proved\n  {r.argument}"
    if r.status == "refuted":
        c = r.counterexample
        assert c is not None
        lines = [head + "REFUTED"]
        if c.formula:
            lines.append(f"  {c.formula}")
        lines.append(f"  smallest instance, {r.param} = {c.smallest}, compiled and verified:")
        lines += ["    " + line for line in verdict_text(c.instance).splitlines()]
        return "\n".join(lines)
    lines = [head + "unknown (not proved for every value; --require-proof makes this exit 1)",
             f"  {r.reason}"]
    if r.reason_span is not None:
        span = r.reason_span
        lines.append(f"    at {span}: {span.source.line(span.line).strip()}")
    checked = [i for i in r.instances if i.verdict is not None]
    lines.append(f"  verified at {r.param} = {', '.join(str(i.n) for i in checked)} only:"
                 if checked else f"  tried at {r.param} = "
                 f"{', '.join(str(i.n) for i in r.instances)}: none could be verified")
    lines += [f"    {r.param} = {i.n}: {_instance_text(i)}" for i in r.instances]
    return "\n".join(lines)


def _instance_text(i: Instance) -> str:
    if i.verdict is None:
        assert i.error is not None
        return f"not a valid size ({i.error.message})"
    return verdict_text(i.verdict).split(": ", 1)[1].replace("\n", "\n      ")


def for_all_json(r: ForAll) -> dict:
    out: dict = {"param": r.param, "from": r.start, "status": r.status}
    if r.status == "proved":
        out["argument"] = r.argument
    elif r.status == "refuted":
        c = r.counterexample
        assert c is not None
        out["counterexample"] = {"kind": c.kind, "formula": c.formula or None,
                                 "smallest": c.smallest, "instance": verdict_json(c.instance)}
    else:
        span = r.reason_span
        out["reason"] = r.reason
        out["at"] = None if span is None else {"file": span.source.path, "line": span.line,
                                               "col": span.col}
        out["instances"] = [{"n": i.n, "verdict": None if i.verdict is None else verdict_json(i.verdict),
                             "error": None if i.error is None else error_entry(i.error)}
                            for i in r.instances]
    return out
