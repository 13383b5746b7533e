"""The document model (render/document.py) and its writers (render/writers/): one small
document written by each writer, against text derived by hand from each format's rules;
the registry that `--format` looks writers up in."""

from __future__ import annotations

import pytest
import sympy
from conftest import SCHEDULES

from schedc.render import documents, writers
from schedc.render.document import (
    Document,
    Equation,
    Field,
    Fields,
    Formulas,
    Heading,
    Listing,
    Math,
    Paragraph,
    Table,
)

x, y = sympy.symbols("x y", positive=True)
NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"

SMALL = Document((
    Heading(text="ring: a | b"),
    Paragraph(parts=("cost ", Math.of(x + 1), " at 2 ranks")),
    Table(header=("name", "n"), rows=(("a_b", "1"), ("ccc", "22")), align="lr"),
    Paragraph(parts=("only on a terminal",), formats=frozenset({"text"}), tight=True),
    Formulas(equations=(Equation("ring", x / y, regime=x, conditions=(y >= 1,)),)),
))


def test_text_writer():
    # columns as wide as their widest cell, two spaces apart, "n" right-aligned; the tight
    # paragraph right under the table; blank lines between the other blocks
    assert writers.write("text", SMALL) == (
        "ring: a | b\n"
        "\n"
        "cost x + 1 at 2 ranks\n"
        "\n"
        "name   n\n"
        "----  --\n"
        "a_b    1\n"
        "ccc   22\n"
        "only on a terminal\n"
        "\n"
        "ring:\n"
        "  T = x/y\n"
        "    = x   while y >= 1\n")


def test_markdown_writer():
    # the heading's pipe escaped as in a cell; formulas as code spans; `---:` right-aligns;
    # the text-only paragraph left out
    assert writers.write("markdown", SMALL) == (
        "### ring: a \\| b\n"
        "\n"
        "cost `x + 1` at 2 ranks\n"
        "\n"
        "| name | n |\n"
        "|---|---:|\n"
        "| a_b | 1 |\n"
        "| ccc | 22 |\n"
        "\n"
        "- **ring**: T = `x/y`\n"
        "  = `x` while `y >= 1`\n")


def test_latex_writer():
    # a run-in \paragraph followed directly; specials escaped; `lr` columns; align* rows
    # by SymPy's LaTeX printer, `\\` between them
    assert writers.write("latex", SMALL) == (
        "\\paragraph{ring: a \\textbar{} b}\n"
        "cost x + 1 at 2 ranks\n"
        "\n"
        "\\begin{tabular}{lr}\n"
        "\\hline\n"
        "name & n \\\\\n"
        "\\hline\n"
        "a\\_b & 1 \\\\\n"
        "ccc & 22 \\\\\n"
        "\\hline\n"
        "\\end{tabular}\n"
        "\n"
        "\\begin{align*}\n"
        "T_{\\mathrm{ring}} &= \\frac{x}{y} \\\\\n"
        "&= x && \\text{while } y \\geq 1\n"
        "\\end{align*}\n")


def test_html_writer():
    page = writers.write("html", Document(SMALL.blocks[:3]))
    assert page == (
        "<h3>ring: a | b</h3>\n"
        "<p>cost <math><mrow><mi>x</mi><mo>+</mo><mn>1</mn></mrow></math> at 2 ranks</p>\n"
        '<div class="scroll"><table><thead><tr><th>name</th><th class="num">n</th></tr>'
        "</thead><tbody><tr><td>a_b</td><td class=\"num\">1</td></tr><tr><td>ccc</td>"
        '<td class="num">22</td></tr></tbody></table></div>\n')


FIELDS = Document((Fields(fields=(Field("time", "1 ms"), Field("formula", Math.of(x)),
                                  Field("valid while", Math.of(x > 1, y > 1), nested=True))),))


def test_fields_in_each_format():
    # text: label padded to 18 after two spaces, a nested label two more in
    assert writers.write("text", FIELDS) == (
        "  time              1 ms\n"
        "  formula           x\n"
        "    valid while     x > 1, y > 1\n")
    assert writers.write("markdown", FIELDS) == (
        "|  | value |\n"
        "|---|---|\n"
        "| time | 1 ms |\n"
        "| formula | `x` |\n"
        "| valid while | `x > 1, y > 1` |\n")
    # a paper typesets formulas apart: the formula fields are not in the table
    assert writers.write("latex", FIELDS) == (
        "\\begin{tabular}{ll}\n\\hline\n & value \\\\\n\\hline\ntime & 1 ms \\\\\n\\hline\n"
        "\\end{tabular}\n")


def test_listing_and_an_empty_document():
    listing = Document((Listing(lines=("  a  b", "  c")),))
    assert writers.write("text", listing) == "  a  b\n  c\n"
    assert writers.write("markdown", listing) == "```\n  a  b\n  c\n```\n"
    assert writers.write("latex", listing) == "\\begin{verbatim}\n  a  b\n  c\n\\end{verbatim}\n"
    assert writers.write("html", listing) == "<pre>  a  b\n  c</pre>\n"
    for name in writers.WRITERS:
        assert writers.write(name, Document()) == ""
    assert writers.write("text", Document((Table(rows=()),))) == "\n"  # a block of no lines


def test_the_registry():
    from schedc.cli.options import FORMATS
    assert set(writers.WRITERS) == {"text", "markdown", "latex", "html"}
    assert set(FORMATS) <= set(writers.WRITERS)
    assert set(documents.DOCUMENTS) == {"time", "compare", "bound"}
    with pytest.raises(ValueError, match="no writer for 'rtf'; the formats are text, markdown"):
        writers.write("rtf", SMALL)


@pytest.mark.parametrize("command", ["time", "compare", "bound"])
def test_format_goes_through_the_registry(run, monkeypatch, command):
    """`--format markdown` writes the command's document with whatever writer the registry
    holds under "markdown": no module or function name is built from the format's name."""
    seen = []

    def writer(document: Document) -> str:
        seen.append(document)
        return "written\n"

    monkeypatch.setitem(writers.WRITERS, "markdown", writer)
    code, out, err = run(command, NVLINK, "--format", "markdown")
    assert (code, out) == (0, "written\n"), err
    (document,) = seen
    assert any(isinstance(b, Table) for b in document.blocks)
