"""`--format markdown|latex` of time, compare and bound, read back by their consumers:
markdown-it-py (CommonMark with GFM tables) for Markdown; SymPy's own LaTeX parser for the
formulas and pdflatex for the documents (when installed). Plots from `sweep --plot` and
`solve --plot`; the progress bar."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import sympy
from conftest import SCHEDULES

from schedc.cli.progress import TerminalBar
from schedc.progress import listening
from schedc.session import Session

NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"
PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"


def text_table(out: str) -> list[list[str]]:
    """The rows of a text table (header, dashes, rows, up to a blank line): cells are two or
    more spaces apart."""
    lines = out.split("\n\n")[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for k, line in enumerate(lines) if k != 1]


def markdown_tables(out: str) -> list[list[list[str]]]:
    markdown_it = pytest.importorskip("markdown_it", reason="needs markdown-it-py")
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(out)
    tables, row = [], None
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append("".join(c.content for c in token.children or [] if c.type in
                               ("text", "code_inline")))
        elif token.type == "tr_close":
            tables[-1].append(row)
            row = None
    return tables


@pytest.mark.parametrize("path", [NVLINK, PCIE], ids=["nvlink", "pcie"])
def test_markdown_compare_is_the_text_table(run, path):
    _, text, _ = run("compare", path)
    code, out, err = run("compare", path, "--format", "markdown")
    assert code == 0, err
    (table,) = markdown_tables(out)
    assert table == text_table(text)


def test_markdown_bound_escapes_the_pipe_of_a_cut(run):
    code, out, err = run("bound", NVLINK, "--format", "markdown")
    assert code == 0, err
    cuts, schedules, crossing = markdown_tables(out)
    assert cuts[1][:2] == ["node[0] | node[1]", "400 GB/s = 8*B_N"]
    assert [row[0] for row in schedules[1:]] == ["ring", "interleaved", "hierarchical"]
    assert [row[3] for row in schedules[1:]] == ["10.03", "10.03", "1.72"]
    assert crossing[1][:3] == ["ring", "360 MiB each way", "1.875×"]


def test_markdown_time_has_each_schedules_formula(run):
    code, out, err = run("time", NVLINK, "--format", "markdown", "-s", "ring")
    assert code == 0, err
    facts, classes = markdown_tables(out)
    assert dict(facts[1:])["formula"] == "30*alpha + 30*Max(V/(16*B_L), V/(16*B_N))"
    assert classes[1][:2] == ["30", "252.49 µs"]


def _plain(expr: sympy.Expr) -> sympy.Expr:
    """Symbols by name alone ('B_{L}' as the LaTeX parser names it is 'B_L')."""
    return expr.xreplace({s: sympy.Symbol(re.sub(r"[{}]", "", s.name)) for s in expr.free_symbols})


@pytest.mark.parametrize("path", [PCIE])
def test_latex_formulas_parse_back_to_the_formulas(run, path):
    from sympy.parsing.latex import parse_latex
    code, out, err = run("compare", path, "--format", "latex")
    assert code == 0, err
    align = out.split(r"\begin{align*}")[1].split(r"\end{align*}")[0]
    lines = [line.rstrip(" \\").split("&&")[0] for line in align.strip().splitlines()]
    session = Session.open(path)
    expected = []
    for name in session.selected():
        cost = session.timing(name).cost
        expected += [cost.formula] + ([cost.regime_formula] if cost.regime_formula != cost.formula
                                      else [])
    assert len(lines) == len(expected)
    for line, formula in zip(lines, expected):
        parsed = parse_latex(line.split("&=")[1], backend="lark")
        a, b = _plain(parsed), _plain(formula)
        assert a == b or sympy.simplify(a - b) == 0, line


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="needs pdflatex (Debian: texlive-latex-base)")
@pytest.mark.parametrize("command", ["compare", "time", "bound"])
def test_latex_compiles(run, tmp_path, command):
    code, out, err = run(command, PCIE, "--format", "latex")
    assert code == 0, err
    document = tmp_path / "paper.tex"
    document.write_text("\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n"
                        "\\usepackage{amsmath}\n\\begin{document}\n" + out + "\\end{document}\n")
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                             document.name], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 1000


def test_json_and_format_exclude_each_other(run):
    code, out, err = run("compare", NVLINK, "--json", "--format", "latex")
    assert code == 2 and "exclude each other" in err
    # --json asked for JSON: the error comes as a schedc.error/1 object too, and nothing else.
    assert [e["message"] for e in json.loads(out)["errors"]] == [
        "--json and --format exclude each other"]


# ---- plots from the command line -----------------------------------------------------------


def test_sweep_plot_svg(run, tmp_path):
    target = tmp_path / "sweep.svg"
    code, out, err = run("sweep", PCIE, "--vary", "B_L=4GB/s:128GB/s:6", "--plot", target)
    assert code == 0, err
    assert "hierarchical" in out  # the table is still printed
    root = ET.fromstring(target.read_bytes())
    lines = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
             if g.get("id", "").startswith("plot-line2d")]
    labels = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"ring", "hierarchical", "B_L"} <= labels
    assert len(lines) >= 2
    first = target.read_bytes()
    assert run("sweep", PCIE, "--vary", "B_L=4GB/s:128GB/s:6", "--plot", target)[0] == 0
    assert target.read_bytes() == first  # deterministic
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.svg"]


def test_solve_plot_png_marks_both_solutions(run, tmp_path):
    from PIL import Image
    target = tmp_path / "solve.png"
    code, out, err = run("solve", PCIE, "time(hierarchical) = time(ring)", "--for", "B_L",
                         "--plot", target)
    assert code == 0, err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(target).size == (900, 540)  # 6 × 3.6 inches at 150 dpi
    svg_target = tmp_path / "solve.svg"
    assert run("solve", PCIE, "time(hierarchical) = time(ring)", "--for", "B_L",
               "--plot", svg_target)[0] == 0
    labels = [t.text for t in ET.fromstring(svg_target.read_bytes())
              .iter("{http://www.w3.org/2000/svg}text")]
    assert "B_L = 8.0063 GB/s" in labels and "B_L = 63.933 GB/s" in labels


def test_a_plot_needs_svg_or_png(run, tmp_path):
    target = tmp_path / "plot.pdf"
    code, out, err = run("sweep", PCIE, "--vary", "B_L=4GB/s:8GB/s", "--plot", target)
    assert code == 2 and ".svg or .png" in err
    assert list(tmp_path.iterdir()) == []


# ---- progress ----------------------------------------------------------------------------------


def test_long_work_reports_progress():
    """The bound's cuts and the verification's rounds tick; the bar draws on its stream once
    the delay has passed, and ends its line."""
    from schedc.analysis.bound.bounds import bound_all
    from schedc.analysis.verify.verdict import verdicts
    stream = io.StringIO()
    calls: list[tuple[str, int, int]] = []
    bar = TerminalBar(stream, delay=0)
    session = Session.open(NVLINK)

    def listener(label, done, total):
        calls.append((label, done, total))
        bar(label, done, total)

    with listening(listener):
        bound_all(session, session.selected())
        verdicts(session)
    labels = {label for label, _, _ in calls}
    assert {"bound: cuts", "verify ring: rounds"} <= labels
    assert ("verify ring: rounds", 30, 30) in calls
    drawn = stream.getvalue()
    assert f"\rverify ring: rounds [{'#' * 30}] 30/30\n" in drawn
    assert drawn.endswith("] 16/16\n")  # hierarchical's 16 rounds, last


def test_no_listener_no_output(capsys):
    from schedc.analysis.verify.verdict import verdicts
    verdicts(Session.open(NVLINK))
    assert capsys.readouterr() == ("", "")
