"""Chakra execution traces (mlcommons/chakra `schema/protobuf/et_def.proto`), written as the
protobuf wire format that Chakra's own bindings produce, byte for byte.

Why not `et_def_pb2.Node(...).SerializeToString()`: it costs 6.7 µs a node (upb, measured by
benchmarks/astra_export.py), and the 1,024-rank ring has 4.2 million nodes — 28 s against
the 10 s target. The messages written here are few and fixed (a node with an id, a name, a
type, packed data dependencies and int attributes; the global metadata's version), so their
encoding is short; tests/test_export_astra.py checks it against `SerializeToString` of the
same fields and decodes every file with mlc-chakra's reader.

A file is Chakra's stream (chakra `src/third_party/utils/protolib.py`, `encodeMessage`):
each message prefixed with its length as a varint, the global metadata first.
"""

from __future__ import annotations

import numpy as np

from .records import Records

# et_def.proto's numbers (NodeType, CollectiveCommType; Node and AttributeProto fields).
COMM_SEND_NODE = 5
COMM_RECV_NODE = 6
COMM_COLL_NODE = 7
COLLECTIVE_TYPES = {"allreduce": 0, "allgather": 2, "alltoall": 6, "reduce_scatter": 7}

_VARINTS = [bytes([v]) for v in range(128)]


def varint(value: int) -> bytes:
    """`value` (≥ 0) as a protobuf base-128 varint."""
    if value < 128:
        return _VARINTS[value]
    out = bytearray()
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def int_attr(name: str, value: int, bits: int = 64) -> bytes:
    """An `attr` entry (Node field 10) holding `int64_val` (field 9) or `int32_val` (7), as
    ASTRA-sim's example custom collectives write comm_size and comm_src/dst/tag."""
    if value < 0:
        raise ValueError("attributes written here are not negative")
    value_tag = 9 << 3 if bits == 64 else 7 << 3
    return _field(10, _field(1, name.encode()) + varint(value_tag) + varint(value))


def bool_attr(name: str, value: bool) -> bytes:
    """An `attr` entry holding `bool_val` (field 27), as ASTRA-sim's generators write
    `is_cpu_op`."""
    return _field(10, _field(1, name.encode()) + varint(27 << 3) + varint(int(value)))


def send_recv_nodes(ids: np.ndarray, receive: np.ndarray, deps_first: np.ndarray,
                    deps_count: np.ndarray, size: np.ndarray, peer: np.ndarray,
                    tag: np.ndarray, name: Records) -> tuple[np.ndarray, np.ndarray]:
    """COMM_SEND_NODEs (COMM_RECV_NODEs where `receive`), framed, one after another, as
    `node` writes one: data_deps deps_first .. deps_first + deps_count - 1, and int attributes
    comm_size (int64), comm_dst or comm_src (int32) and comm_tag (int32). Returns the bytes
    and where each node ends."""
    count = len(ids)

    def attr(names: list[bytes], which: np.ndarray, value_tag: bytes,
             values: np.ndarray) -> Records:
        return Records(count).nested(b"\x0a", Records(count).choice(names, which)) \
            .const(value_tag).varint(values)
    first = np.zeros(count, dtype=np.int64)
    has_id, has_deps = ids > 0, deps_count > 0
    body = Records(count).const(b"\x08", has_id).varint(ids, has_id).nested(b"\x12", name) \
        .choice([b"\x18" + varint(COMM_SEND_NODE), b"\x18" + varint(COMM_RECV_NODE)],
                receive.astype(np.int64)) \
        .nested(b"\x2a", Records(count).runs(deps_first, deps_count), has_deps) \
        .nested(b"\x52", attr([b"comm_size"], first, b"\x48", size)) \
        .nested(b"\x52", attr([b"comm_dst", b"comm_src"], receive.astype(np.int64), b"\x38",
                              peer)) \
        .nested(b"\x52", attr([b"comm_tag"], first, b"\x38", tag))
    return body.encode()


def node(node_id: int, name: str, node_type: int, attrs: bytes) -> bytes:
    """One Node message with no dependencies (the workload's collective), framed: fields in
    number order, id 0 omitted, as proto3 serialises them; `attrs`: `*_attr` entries joined.
    (Sends and receives, with their dependencies, are `send_recv_nodes`.)"""
    body = (b"" if node_id == 0 else b"\x08" + varint(node_id)) + _field(2, name.encode()) \
        + b"\x18" + varint(node_type) + attrs
    return varint(len(body)) + body


def metadata(version: str) -> bytes:
    """The GlobalMetadata message that opens a trace, framed."""
    body = _field(1, version.encode())
    return varint(len(body)) + body
