"""`export astra`: the Chakra traces, decoded with Chakra's schema and framing (vendored in
tests/chakra_schema.py, read by protobuf), hold the schedule
(every transfer one send and one receive, dependencies as the rounds say), in the types and
fields ASTRA-sim reads; the network is the machine's; bad requests are refused whole.

ASTRA-sim's rules quoted here are from astra-sim/astra-sim at commit 518bd51:
- system/astraccl/custom_collectives/CustomAlgorithm.cc:24
  `et_filename = et_filename + "." + to_string(pos_in_comm) + ".et";`
- CustomAlgorithm.cc:58-65 (send) `snd_req.srcRank = node->comm_src(this->stream->owner->id);`
  `int dst_rank = convert_algo_rank_to_real_rank(node->comm_dst());` ... `node->comm_size()`,
  `node->comm_tag()`; (receive) `convert_algo_rank_to_real_rank(node->comm_src())`.
- extern/graph_frontend/chakra/src/feeder_v3/dependancy_solver.cpp:144
  `for (auto& parent : node.data_deps())`: a node waits for its data_deps.
- network_frontend/analytical/common/CallbackTracker.cc:29
  `const auto key = std::make_tuple(tag, src, dest, chunk_size, chunk_id);`: a receive
  matches the send of the same tag, ends and size, in order.
- ASTRA-sim's examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB traces hold
  comm_size as int64_val and comm_src, comm_dst and comm_tag as int32_val; so do these.

With ASTRA_SIM set to an AstraSim_Analytical_Congestion_Unaware binary, the traces are also
run and its finish time compared with schedc's (skipped otherwise, as in CI).
"""

from __future__ import annotations

import io
import os
import subprocess
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

chakra = pytest.importorskip("chakra_schema", reason="needs protobuf (the test extra)")

import schedc  # noqa: E402
from schedc.model.ir import linear_value  # noqa: E402

SEED = ROOT / "schedules" / "seed" / "nvlink_2x8.sched"
RAIL = ROOT / "schedules" / "algorithms" / "rail_4x8.sched"


def decoded(data: bytes):
    """The global metadata and nodes of one trace, by Chakra's reader (protolib's framing,
    protobuf's parser); and the same messages re-encoded by Chakra's writer."""
    handle, again = io.BytesIO(data), io.BytesIO()
    meta = chakra.GlobalMetadata()
    assert chakra.decode_message(handle, meta)
    chakra.encode_message(again, meta)
    nodes = []
    while True:
        node = chakra.Node()
        if not chakra.decode_message(handle, node):
            break
        chakra.encode_message(again, node)
        nodes.append(node)
    return meta, nodes, again.getvalue()


def attrs(node) -> dict:
    return {a.name: (a.WhichOneof("value"), getattr(a, a.WhichOneof("value"))) for a in node.attr}


def written(path: Path, name: str) -> tuple[schedc.Session, object, dict[str, bytes]]:
    session = schedc.load(path)
    astra = schedc.export_astra(session, name)
    return session, astra, {f: b"".join(pieces) for f, pieces in astra.files()}


@pytest.mark.parametrize("path, name", [(SEED, "ring"), (SEED, "hierarchical"),
                                        (RAIL, "recursive_doubling"), (RAIL, "ring2d")])
def test_traces_hold_the_schedule(path, name):
    session, astra, files = written(path, name)
    schedule = session.schedule(name)
    ranks = schedule.collective.ranks
    position = {d: i for i, d in enumerate(ranks)}
    nominal = session.program.nominal
    # The schedule's transfers, from the IR, independently of the exporter.
    expected = Counter()
    rounds_of = defaultdict(set)  # rank -> rounds with a transfer of its
    for k, round_ in enumerate(schedule.rounds):
        for t in round_.transfers():
            size = linear_value(t.bytes, nominal)
            assert size.denominator == 1
            a, b = position[t.src], position[t.dst]
            expected[(a, b, int(size), k)] += 1
            rounds_of[a].add(k)
            rounds_of[b].add(k)
    sends, receives = Counter(), Counter()
    for rank in range(len(ranks)):
        meta, nodes, again = decoded(files[f"{name}.{rank}.et"])
        assert again == files[f"{name}.{rank}.et"]  # byte for byte as Chakra writes them
        assert meta.version == "0.0.4"
        assert [n.id for n in nodes] == list(range(len(nodes)))
        by_round = defaultdict(list)
        for n in nodes:
            a = attrs(n)
            round_ = a["comm_tag"][1]
            by_round[round_].append(n.id)
            assert a["comm_size"][0] == "int64_val"
            assert {a["comm_tag"][0]} | {v[0] for k, v in a.items() if k in ("comm_src", "comm_dst")} \
                == {"int32_val"}
            if n.type == chakra.COMM_SEND_NODE:
                sends[(rank, a["comm_dst"][1], a["comm_size"][1], round_)] += 1
            else:
                assert n.type == chakra.COMM_RECV_NODE
                receives[(a["comm_src"][1], rank, a["comm_size"][1], round_)] += 1
        # Each node depends on every node of its rank's previous round with any.
        order = sorted(by_round)
        assert order == sorted(rounds_of[rank])
        for before, k in zip([None, *order], order):
            for node_id in by_round[k]:
                deps = set(nodes[node_id].data_deps)
                assert deps == (set(by_round[before]) if before is not None else set())
                assert not nodes[node_id].ctrl_deps
    assert sends == expected and receives == expected


def test_workload_and_configurations():
    session, astra, files = written(SEED, "hierarchical")
    params = session.program.params
    total = params["V"].nominal
    for rank in range(16):
        _, (node,), _ = decoded(files[f"workload.{rank}.et"])
        a = attrs(node)
        assert node.type == chakra.COMM_COLL_NODE
        assert a["comm_type"] == ("int64_val", chakra.ALL_REDUCE)
        assert a["comm_size"] == ("int64_val", total)
        assert a["is_cpu_op"] == ("bool_val", False)
    import json
    system = json.loads(files["system.json"])
    assert system["all-reduce-implementation-custom"] == ["hierarchical"]
    # 8 GPUs per host over NVLink (B_L), then 2 hosts over the NICs (B_N), in ASTRA-sim's
    # GB/s (2^30 B/s, astra-network-analytical's bw_GBps_to_Bpns) and ns; one hop each.
    B_L, B_N, alpha = (params[p].nominal for p in ("B_L", "B_N", "alpha"))
    assert (B_L, B_N, alpha) == (450 * 10**9, Fraction(400 * 10**9, 8), Fraction(83, 10**8))
    assert files["network.yml"].decode() == (
        "topology: [ FullyConnected, FullyConnected ]\n"
        "npus_count: [ 8, 2 ]\n"
        f"bandwidth: [ {float(B_L / 2**30)!r}, {float(B_N / 2**30)!r} ]  # GB/s (2^30 B/s)\n"
        "latency: [ 830.0, 830.0 ]  # ns per hop\n")
    assert files["remote_memory.json"] == b'{"memory-type": "NO_MEMORY_EXPANSION"}\n'


def test_ring_network_and_time_by_hand():
    """The seed's ring on 2 hosts of 8: 16 ring pairs, 2 of them between hosts. No shape
    gives every pair its own bandwidth, so one dimension at the slowest (B_N) is written
    and the 14 NVLink pairs are flagged; round by round, 2(p − 1) rounds of α + (V/p)/B_N,
    which is schedc's time too (each ring round waits for its NIC hop)."""
    session, astra, _ = written(SEED, "ring")
    params = session.program.params
    V, B_N, alpha = (params[p].nominal for p in ("V", "B_N", "alpha"))
    assert [d.npus for d in astra.network.dimensions] == [16]
    assert astra.network.dimensions[0].bandwidth == B_N
    assert (astra.network.pairs, astra.network.mismatched) == (16, 14)
    by_hand = 2 * 15 * (alpha + Fraction(V, 16) / B_N)
    assert astra.schedc_s == by_hand
    assert astra.rounds_s == pytest.approx(float(by_hand), rel=1e-12)


def test_contention_is_shown(tmp_path, run):
    """On the PCIe machine the hierarchical all-reduce's rounds share the PCIe switches'
    uplinks: schedc's time exceeds the contention-free time that ASTRA-sim's
    congestion-unaware backend gives, and the output says so; the JSON has both."""
    pcie = ROOT / "schedules" / "seed" / "pcie_2x4.sched"
    code, out, _ = run("export", "astra", pcie, "-s", "hierarchical", "-o", tmp_path / "h")
    assert code == 0 and "longer: transfers of a round share a resource" in out
    code, out, _ = run("export", "astra", pcie, "-s", "hierarchical", "-o", tmp_path / "j",
                       "--json")
    import json
    found = json.loads(out)
    assert found["schema"] == "schedc.astra/1"
    assert found["schedc_time_s"] > found["round_by_round_s"] * 1.2
    assert len(found["files"]) == 2 * found["ranks"] + 3


def test_command_writes_a_folder_and_refuses_to_overwrite(tmp_path, run):
    out = tmp_path / "ring"
    code, shown, _ = run("export", "astra", SEED, "-s", "ring", "-o", out)
    assert code == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"ring.{r}.et" for r in range(16)] + [f"workload.{r}.et" for r in range(16)]
                           + ["system.json", "network.yml", "remote_memory.json"])
    assert f"run: cd {out} && AstraSim_Analytical_Congestion_Unaware" in shown
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, _, err = run("export", "astra", SEED, "-s", "hierarchical", "-o", out)
    assert code == 2 and "exists and is not empty; give --force" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert run("export", "astra", SEED, "-s", "ring", "-o", out, "--force")[0] == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # deterministic


@pytest.mark.parametrize("args, message", [
    ([str(RAIL), "-s", "binomial"], "'binomial' is a broadcast; ASTRA-sim runs custom"),
    ([str(SEED), "-s", "ring", "--set", "V=1000B"],
     "a transfer of 62.5 bytes at the nominal point"),
    ([str(SEED), "-s", "nothere"], "nothere"),
])
def test_refusals_write_nothing(tmp_path, run, args, message):
    out = tmp_path / "out"
    code, _, err = run("export", "astra", *args, "-o", out)
    assert code == 2 and message in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.environ.get("ASTRA_SIM"), reason="ASTRA_SIM (a binary) not set")
@pytest.mark.parametrize("name", ["ring", "hierarchical"])
def test_astra_sim_runs_them(tmp_path, name):
    """ASTRA-sim's finish time is schedc's round-by-round time, less its truncation of every
    message to a whole ns (at most one ns per round on the critical path)."""
    _, astra, files = written(SEED, name)
    for file, data in files.items():
        (tmp_path / file).write_bytes(data)
    done = subprocess.run(astra.command(os.environ["ASTRA_SIM"]).split(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=True)
    cycles = {int(line.split(" finished, ")[1].split()[0])
              for line in done.stdout.splitlines() if " finished, " in line}
    rounds = len(set(schedc.load(SEED).schedule(name).rounds.sizes().nonzero()[0]))
    assert len(cycles) == 1
    assert astra.rounds_s * 1e9 - rounds <= cycles.pop() <= astra.rounds_s * 1e9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.booleans(), st.integers(0, 2**40),
                          st.integers(0, 5), st.integers(1, 2**50), st.integers(0, 2**31 - 1),
                          st.integers(0, 2**31 - 1), st.integers(0, 10**12)),
                min_size=1, max_size=40))
def test_bulk_encoder_is_protobufs(rows):
    """Every node the NumPy encoder writes is byte for byte what Chakra's protobuf bindings
    serialise for the same fields (defaults omitted, deps packed, attributes in order)."""
    import numpy as np

    from schedc.export import chakra as writer
    from schedc.export.records import Records
    ids, receive, first, count, size, peer, tag, number = (np.array(c) for c in zip(*rows))
    name = Records(len(rows)).const(b"n").decimal(number)
    data, ends = writer.send_recv_nodes(ids, receive.astype(bool), first, count, size, peer, tag,
                                        name)
    handle = io.BytesIO(data.tobytes())
    for row, end in zip(rows, ends.tolist()):
        i, recv, f, c, sz, p, t, num = row
        node = chakra.Node(id=i, name=f"n{num}",
                           type=chakra.COMM_RECV_NODE if recv else chakra.COMM_SEND_NODE,
                           data_deps=range(f, f + c))
        node.attr.add(name="comm_size", int64_val=sz)
        node.attr.add(name="comm_src" if recv else "comm_dst", int32_val=p)
        node.attr.add(name="comm_tag", int32_val=t)
        framed = io.BytesIO()
        chakra.encode_message(framed, node)
        assert handle.read(len(framed.getvalue())) == framed.getvalue()
        assert handle.tell() == end


def test_vendored_schema_is_chakras():
    """tests/chakra_schema.py's descriptor is the one mlc-chakra ships (where it is installed:
    `pip install '.[astra]'`), so the vendored copy cannot drift from the reader it replaces."""
    shipped = pytest.importorskip("chakra.schema.protobuf.et_def_pb2",
                                  reason="mlc-chakra is not installed (the astra extra)")
    assert shipped.DESCRIPTOR.serialized_pb == chakra._DESCRIPTOR
    assert (shipped.COMM_SEND_NODE, shipped.COMM_RECV_NODE, shipped.COMM_COLL_NODE,
            shipped.ALL_REDUCE) == (chakra.COMM_SEND_NODE, chakra.COMM_RECV_NODE,
                                    chakra.COMM_COLL_NODE, chakra.ALL_REDUCE)
