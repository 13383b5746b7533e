"""`render.text.dump_json` writes what `json.dumps(document, indent=2)` writes (plus a final
newline), though it writes dicts of plain values and lists of strings itself, without json's
pure-Python walk: compared here on random documents and on a bound's (one cut a dict)."""

from __future__ import annotations

import json
import random

import pytest

from schedc.render.text import INLINE_LIST, dump_json

# (No string "\0" and digits: dump_json's placeholders for the parts it writes itself.)
WORDS = ["", "node[0].g[1]", "a \"quoted\" \\ name", "é ü 漢字", "tab\there", "\u0001", "line\nbreak",
         "\U0001f600"]


def _scalar(rng: random.Random):
    return rng.choice([lambda: rng.choice(WORDS), lambda: rng.randint(-10**20, 10**20),
                       lambda: rng.uniform(-1e300, 1e300), lambda: rng.random() * 1e-300,
                       lambda: 0.1, lambda: -0.0, lambda: True, lambda: False, lambda: None])()


def _document(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        return _scalar(rng)
    kind = rng.choice(["dict", "flat dict", "list", "tuple", "names", "numbers", "empty"])
    width = rng.randint(1, 5)
    if kind == "dict":
        return {rng.choice(WORDS) + str(k): _document(rng, depth - 1) for k in range(width)}
    if kind == "flat dict":
        return {rng.choice(WORDS) + str(k): _scalar(rng) for k in range(width)}
    if kind == "names":
        return [rng.choice(WORDS) for _ in range(rng.randint(1, 40))]
    if kind == "numbers":  # at most INLINE_LIST: a longer list goes on one line
        return [rng.randint(-5, 5) for _ in range(rng.randint(1, INLINE_LIST))]
    if kind == "empty":
        return rng.choice([{}, [], ()])
    if kind == "tuple":  # (json writes a tuple as a list, a long one too: one number a line)
        return tuple(rng.randint(-5, 5) for _ in range(rng.randint(1, 2 * INLINE_LIST)))
    return [_document(rng, depth - 1) for _ in range(width)]


@pytest.mark.parametrize("seed", range(200))
def test_random_documents_are_written_as_json_writes_them(seed):
    rng = random.Random(seed)
    document = {"schema": "test/1", "body": _document(rng, 5)}
    assert dump_json(document) == json.dumps(document, indent=2, allow_nan=False) + "\n"


def test_a_long_list_of_numbers_goes_on_one_line_at_any_depth():
    numbers = [*range(INLINE_LIST), 0.5]
    document = {"a": [{"b": numbers, "c": "x"}], "d": {"e": {"f": numbers}}}
    one_line = json.dumps(numbers)
    expected = json.dumps({"a": [{"b": 0, "c": "x"}], "d": {"e": {"f": 1}}}, indent=2)
    expected = expected.replace('"b": 0', f'"b": {one_line}').replace('"f": 1', f'"f": {one_line}')
    assert dump_json(document) == expected + "\n"


def test_a_non_finite_float_is_refused_in_a_flat_dict_too():
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="not JSON compliant"):
            dump_json({"cut": {"bound_s": value}})
        with pytest.raises(ValueError, match="not JSON compliant"):
            json.dumps({"cut": {"bound_s": value}}, allow_nan=False)


def test_a_bound_document_is_written_as_json_writes_it():
    from conftest import SCHEDULES

    from schedc.api import bound, load
    from schedc.render.bound_json import bound_json
    session = load(SCHEDULES / "seed" / "nvlink_hosts.sched", ["hosts=16"])
    text = bound_json(session.program, bound(session))
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    assert text.count('"bound_s"') > 16  # a dict of plain values per cut, and their sides


@pytest.mark.parametrize("text", ["\0" "0", "\0" "1", "\0" "#0", "\0"])
def test_a_string_that_looks_like_a_placeholder_is_written_as_itself(text):
    # The inline parts stand in the skeleton as "\u0000<index>" strings; a document's own
    # string of that form once took an array's place (a reviewer's repro).
    import numpy as np
    document = {"a": text, text: 1, "b": np.zeros(20), "c": list(range(30))}
    written = json.loads(dump_json(document))
    assert written["a"] == text and written[text] == 1
    assert written["b"] == [0.0] * 20 and written["c"] == list(range(30))
