"""A protocol's share of a link class (`protocol P ... class C eff E`, issue 34): the time it
gives (hand-derived), its checks, its priors (NCCL's figure per class) and calibrate's hold
of a class no fit row is bound by."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import write

import schedc
from schedc.analysis.calibrate.identify import unbound_shares
from schedc.analysis.calibrate.roles import Role, class_kind, roles

TWO = """param V = 1 MB
param e = 0.5
param e_nic = 0.8
topology {{
  gpu g[2]
  {links}
}}
allreduce V over [g[0], g[1]]
schedule x {{
  round {{ reduce part(0 of 2) from g[0] to g[1]; reduce part(1 of 2) from g[1] to g[0] }}
  round {{ copy part(0 of 2) from g[1] to g[0]; copy part(1 of 2) from g[0] to g[1] }}
}}
protocol Simple alpha 0 us eff e {extra}
"""
NIC = "link g[0] <-> g[1] bw 100 GB/s class nic"
# g[0] -> sw over nvlink, sw -> g[1] over nic: one route through two classes, one bandwidth.
MIXED = "switch sw\n  link g[0] <-> sw bw 100 GB/s class nvlink\n  link sw <-> g[1] bw 100 GB/s class nic"


def _time(tmp_path, links: str, extra: str) -> float:
    session = schedc.load(write(tmp_path, "m.sched", TWO.format(links=links, extra=extra)))
    return float(schedc.time(session, "x").time)


def test_a_class_share_replaces_eff_on_that_class(tmp_path):
    # Two rounds, each moving V/2 = 500,000 B each way over the 100 GB/s link:
    # 2 × 5e5 / (0.8 × 1e11) = 12.5 µs with the nic's own 0.8; 2 × 5e5 / (0.5 × 1e11) = 20 µs
    # with eff 0.5 alone.
    assert _time(tmp_path, NIC, "class nic eff e_nic") == pytest.approx(12.5e-6)
    assert _time(tmp_path, NIC, "") == pytest.approx(20e-6)


def test_a_term_across_classes_takes_the_smallest_share(tmp_path):
    # The route g[0] -> sw -> g[1] crosses an nvlink (eff 0.5, no class share) and a nic (0.8)
    # of the same 100 GB/s: the transfer runs at min(0.5, 0.8) · B, 20 µs as above.
    assert _time(tmp_path, MIXED, "class nic eff e_nic") == pytest.approx(20e-6)
    # With nvlink's own share above 0.8 as well, the nic's 0.8 binds: 12.5 µs.
    assert _time(tmp_path, MIXED, "class nic eff e_nic class nvlink eff 0.9") == \
        pytest.approx(12.5e-6)


def test_a_class_share_is_checked_like_eff(run, tmp_path):
    path = write(tmp_path, "m.sched", TWO.format(links=NIC, extra="class nic eff 1.5"))
    code, out, err = run("time", path)
    assert code == 2 and out == "" and "must be at most 1 (all of the link's bandwidth)" in err
    assert "class nic eff 1.5" in err and "^" in err
    path = write(tmp_path, "m.sched", TWO.format(links=NIC, extra="class nvlnk eff 0.9"))
    code, out, err = run("time", path)
    assert code == 2 and "no link of class 'nvlnk'" in err and "did you mean 'nic'" not in err


def test_class_priors_are_nccls_figures_per_kind_of_link(tmp_path):
    # NCCL rates a port at its line rate (topo.cc ncclTopoAddNet: mbps / 8000): Simple 1,
    # LL 0.5 of it (tuning.cc:327), LL128 0.92 (tuning.cc:329); an NVLink at 20/25 = 0.8
    # (topo.h SM80_NVLINK_BW); PCIe at PCI_BW 12 of a Gen3 x16 slot's 15.75 GB/s.
    text = TWO.format(links=NIC, extra="class nic eff e_nic").replace(
        "protocol Simple", "param e_ll = 0.3\nparam e_ll_nic = 0.4\n"
        "protocol LL alpha 0 us eff e_ll class nic eff e_ll_nic\nprotocol Simple")
    session = schedc.load(write(tmp_path, "m.sched", text))
    params = [session.program.params[n] for n in ("e_nic", "e_ll_nic", "e")]
    nic, ll_nic, plain = roles(session, params)
    assert (nic.cls, nic.prior, nic.upper) == ("nic", 1.0, 1.0)
    assert (ll_nic.cls, ll_nic.prior, ll_nic.anchor, ll_nic.ratio) == ("nic", 0.5, "e_nic", 0.5)
    assert plain.cls is None and plain.prior == pytest.approx(0.8)
    assert [class_kind(c) for c in ("NVLink", "pcie", "efa", "uplink")] == \
        ["nvlink", "pcie", "nic", None]


def test_a_class_no_row_is_bound_by_is_held():
    # T = x/e1 + y/e2 per row (x, y the row's bytes over each class's rate); then
    # -d log T / d log e2 = (y/e2) / T, the part of the row's time on class 2. Rows of
    # parts 0.2 and 0.4 (below a half): class 2 is held; add a row of part 0.75: it is not.
    share = Role("eff", "", 0.01, 1.0, 1.0, 0.4, "Simple", cls="nic")
    plain = Role("eff", "", 0.01, 1.0, 0.8, 0.4, "Simple")

    def residuals_of(rows):
        def residuals(x):
            e1, e2 = np.exp(x)
            return np.array([math.log(a / e1 + b / e2) for a, b in rows]) / 0.05
        return residuals

    at_prior = np.log([0.8, 1.0])
    light = [(0.8 * 0.8, 0.2), (0.6 * 0.8, 0.4)]  # parts on class 2: 0.2 and 0.4 of T = 1
    assert unbound_shares([plain, share], residuals_of(light), at_prior, 0.05) == [1]
    heavy = light + [(0.25 * 0.8, 0.75)]
    assert unbound_shares([plain, share], residuals_of(heavy), at_prior, 0.05) == []


UNUSED_NIC = """param V = 1 MB
param a = 3.4 us
param e = 0.8
param e_nic = 1.0
param B_N = 1000 GB/s
topology {
  gpu g[2]
  switch sw
  link g[0] <-> sw bw 100 GB/s class nvlink
  link sw <-> g[1] bw B_N class nic
}
allreduce V over [g[0], g[1]]
schedule x {
  round { reduce part(0 of 2) from g[0] to g[1]; reduce part(1 of 2) from g[1] to g[0] }
  round { copy part(0 of 2) from g[1] to g[0]; copy part(1 of 2) from g[0] to g[1] }
}
protocol Simple alpha a eff e class nic eff e_nic
"""


def test_a_share_held_before_the_fit_is_not_counted_against_the_rows(run, tmp_path):
    # Rows measured as 2 · 3 µs + V / (0.6 · 100 GB/s) (two rounds of V/2 each way at e · B),
    # nine sizes, every 4th fit: 3 fit rows (sizes 0, 4, 8) for a, e and e_nic. Every
    # transfer crosses the 100 GB/s nvlink and the nic of B_N = 1000 GB/s (a param, so its
    # term is not dropped as a fixed fraction of the other), and the nvlink's term is
    # the round's (V/2 / 80 GB/s against V/2 / 1000 GB/s at NCCL's values): no row is bound
    # by the nic, so e_nic is held before the fit, and a, e are fitted on the 3 rows:
    # a = 3 µs and e = 0.6 (exact data; the priors' pull is within 1 %).
    import json
    machine = write(tmp_path, "m.sched", UNUSED_NIC)
    sizes = [2**k for k in range(10, 28, 2)]
    rows = "".join(f"{s:>12d} {s // 4:>12d} float sum -1 {t:9.3f} 0.00 0.00 0 {t:9.3f} 0.00 "
                   f"0.00 0\n" for s in sizes for t in [6 + s / 0.6e5])
    log = write(tmp_path, "log.txt", "# Collective test starting: all_reduce_perf\n"
                "#       size         count      type   redop    root     time   algbw   "
                "busbw #wrong     time   algbw   busbw #wrong\n" + rows)
    code, out, err = run("calibrate", log, "--machine", machine, "--json")
    document = json.loads(out)
    params = document["params"]
    assert params["e_nic"]["held"] == ("held at NCCL's value for nic links: no fit row is "
                                       "bound by a nic link")
    assert params["e"]["value"] == pytest.approx(0.6, rel=0.01)
    assert params["a"]["value"] == pytest.approx(3e-6, rel=0.01)
    assert sum(1 for r in document["rows"] if r["fit"]) == 3
