"""`schedc report`: the HTML page (contents, determinism, atomic writing), its busy maps against
hand-computed fractions, and the page in headless Chromium at desktop and phone width."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT, SCHEDULES, MiB, imported_by

from schedc.analysis.overview import busy
from schedc.session import Session

NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The seed's NVLink report, written by the command line without -o (so with the
    default name, FILE's stem + .html, in the current directory)."""
    directory = tmp_path_factory.mktemp("report")
    (directory / "schedules").symlink_to(SCHEDULES)  # the page names the file as given
    result = subprocess.run([sys.executable, "-m", "schedc", "report",
                             "schedules/seed/nvlink_2x8.sched"],
                            cwd=directory, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr.startswith("wrote nvlink_2x8.html (")
    # No temporary file left beside it.
    assert sorted(p.name for p in directory.iterdir()) == ["nvlink_2x8.html", "schedules"]
    return directory / "nvlink_2x8.html"


class Elements(HTMLParser):
    """Counts of start tags, the ids, and any external reference (src, href, url(...))."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.ids: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name == "id":
                self.ids.append(value)
            if name in ("src", "href", "xlink:href") and value and \
                    not value.startswith(("#", "data:")):
                self.external.append(value)


def test_the_page_holds_every_part(page):
    text = page.read_text(encoding="utf-8")
    parsed = Elements()
    parsed.feed(text)
    assert parsed.external == []  # nothing to fetch: no CDN, no font, no script
    assert "<script" not in text and "@import" not in text and "url(http" not in text
    assert len(parsed.ids) == len(set(parsed.ids))  # eight inline SVGs, no id twice
    # Plots: time against V, B_L and B_N (every param the times depend on), a busy map each.
    # And the machine (issue 23): a drawing of one host and one of the fabric.
    assert parsed.tags["svg"] == 6 + 2
    assert len(re.findall(r'<figure><svg xmlns="http://www.w3.org/2000/svg"', text)) == 2
    assert len(re.findall(r'<figure class="plot curves"', text)) == 3
    assert len(re.findall(r'<figure class="plot busy"', text)) == 3
    # The comparison table, the seed's figures as `compare` prints them.
    for row in ("<td>ring</td>", "7.5746 ms", "1.2995 ms", "720 MiB", "5,760 MiB"):
        assert row in text
    # Formulas typeset: three schedules, the ring's regime form and its condition.
    assert text.count('<math display="block">') >= 5
    assert "<mo>max</mo>" in text  # the ring's Max(V/(16 B_L), V/(16 B_N))
    # The seed's threshold (DESIGN §2: 336 MiB / B_L + 0.5 ms = 7.6 ms, B_L ≈ 50 GB/s): by
    # hand, B_N·V / (8·B_N·α + V) = 50e9 · 201326592 / (332000 + 201326592) = 49.918 GB/s.
    assert "interleaved = hierarchical at B_L = 49.918 GB/s" in text
    # The bound section and the file's expects (the seed file has 8, all passing).
    assert "best bound: 754.97 µs" in text
    assert text.count('<span class="pass">pass</span>') == 8 and 'class="fail"' not in text
    assert page.stat().st_size < 2 * 2**20


def test_the_same_input_gives_the_same_bytes(page, run, tmp_path, monkeypatch):
    """Written again in this process (another hash seed than the fixture's, most likely)."""
    again = tmp_path / "again.html"
    monkeypatch.chdir(page.parent)
    code, out, err = run("report", "schedules/seed/nvlink_2x8.sched", "-o", again)
    assert code == 0, err
    assert again.read_bytes() == page.read_bytes()


def test_bad_input_writes_nothing(run, tmp_path):
    broken = tmp_path / "broken.sched"
    broken.write_text("param V = 1 MiB\nschedule x { copy all from g[0] to }\n")
    target = tmp_path / "out.html"
    code, out, err = run("report", broken, "-o", target)
    assert code == 2
    assert "broken.sched:2:" in err and "^" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.sched"]


def test_an_unwritable_output_is_refused_before_the_work(run, tmp_path):
    code, out, err = run("report", NVLINK, "-o", tmp_path / "missing" / "out.html")
    assert code == 2 and "no such directory" in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


# ---- the busy map against the model, by hand -------------------------------------------------


def _fraction(load_bytes: int, bandwidth: int, round_bytes: int, round_bandwidth: int) -> float:
    """busy share = (load / bandwidth) / (α + slowest load / its bandwidth), α = 0.83 µs."""
    alpha = Fraction(83, 10**8)
    busy_time = Fraction(load_bytes, bandwidth)
    return float(busy_time / (alpha + Fraction(round_bytes, round_bandwidth)))


def test_busy_maps_of_the_seed():
    session = Session.open(NVLINK)
    topology = session.program.topology
    V, B_L, B_N = 192 * MiB, 450 * 10**9, 50 * 10**9

    def rows(b, cls):
        return [k for k, r in enumerate(b.resources) if topology.resources[r].cls == cls]

    ring = busy(session, "ring")
    assert ring.fraction.shape == (30, 64) and not ring.binned  # 30 rounds; 16 GPUs × 2 × 2
    # Every ring round moves V/16 per hop; 4 NIC directions carry the two cross-host hops
    # and set the round's time; a GPU's NVLink carries V/16 at 450 GB/s meanwhile.
    nic = ring.fraction[:, rows(ring, "nic")]
    assert nic.max(axis=1) == pytest.approx(_fraction(V // 16, B_N, V // 16, B_N))
    assert ((nic > 0).sum(axis=1) == 4).all()
    nvlink = ring.fraction[:, rows(ring, "nvlink")]
    assert nvlink.max() == pytest.approx(_fraction(V // 16, B_L, V // 16, B_N))

    hierarchical = busy(session, "hierarchical")
    nvlink = hierarchical.fraction[:, rows(hierarchical, "nvlink")]
    nic = hierarchical.fraction[:, rows(hierarchical, "nic")]
    local = [*range(0, 7), *range(9, 16)]  # 7 rounds of reduce-scatter, 7 of all-gather
    # Local rounds: every GPU sends and receives V/8 over NVLink, no NIC works.
    assert nvlink[local] == pytest.approx(_fraction(V // 8, B_L, V // 8, B_L))
    assert (nic[local] == 0).all()
    # Rounds 8 and 9: all 16 NICs, both ways, carry V/16 each; NVLink rests.
    assert nic[[7, 8]] == pytest.approx(_fraction(V // 16, B_N, V // 16, B_N))
    assert (nvlink[[7, 8]] == 0).all()


def test_only_plotting_commands_import_matplotlib():
    assert imported_by(["compare", NVLINK], ("matplotlib",)) == (0, [])


# ---- the page in a browser ---------------------------------------------------------------------


# Playwright adds --headless itself.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_the_page_in_chromium(page, tmp_path, width):
    """Loads with no console error and no request leaving the file; every plot and formula
    is drawn with a size; nothing is wider than the viewport. The screenshots go to
    $SCHEDC_SCREENSHOTS if set (docs/ holds those of docs/reports.md), else to a temporary folder."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package")
    if CHROMIUM is None:
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as driver:
        # Playwright starts the browser with a fresh temporary profile of its own.
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            view = browser.new_page(viewport={"width": width, "height": 900})
            view.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.on("request", lambda r: requests.append(r.url))
            view.goto(page.as_uri(), wait_until="load")
            sizes = view.evaluate("""() => ({
                plots: [...document.querySelectorAll('figure.plot svg')].map(e => {
                    const r = e.getBoundingClientRect();
                    return [r.width, r.height, e.querySelectorAll('path, image').length]; }),
                formulas: [...document.querySelectorAll('math')].map(e => {
                    const r = e.getBoundingClientRect(); return [r.width, r.height]; }),
                scroll: document.documentElement.scrollWidth,
                inner: window.innerWidth })""")
            folder = Path(os.environ.get("SCHEDC_SCREENSHOTS", tmp_path))
            shot = folder / f"report-{width}.png"
            view.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert requests == [page.as_uri()]  # the page itself, and nothing else
    assert len(sizes["plots"]) == 6
    for w, h, marks in sizes["plots"]:
        assert w > 0.5 * min(width, 736) and h > 100 and marks > 10
    assert len(sizes["formulas"]) >= 10
    assert all(w > 10 and h > 5 for w, h in sizes["formulas"])
    assert sizes["scroll"] <= sizes["inner"]  # no horizontal overflow
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
