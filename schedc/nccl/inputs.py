"""Overriding NCCL's inputs (`--input NAME=VALUE`, `--channels`, `--sm`), refusing values
NCCL would never produce, with NCCL's own limit."""

from __future__ import annotations

import math

from ..errors import UsageError, did_you_mean
from ..hardware.rules import KNOWN_SMS, not_a_known_sm
from . import constants as K
from .comm import GRAPHS, Comm

NAMES = {"cpuArch": ("x86", "POWER", "ARM"), "cpuVendor": ("INTEL", "AMD", "ZHAOXIN", "MIXED"),
         "netDeviceType": ("HOST", "UNPACK")}
FLOATS = ("bwIntra", "bwInter", "latencyInter")
C_FLOAT_MAX = 3.4028234663852886e38  # FLT_MAX: NCCL's graph bandwidths are C floats
C_INT_MAX = 2**31 - 1  # its counts (nChannels, nNodes, ...) are C ints


def check_sm(sm: int, what: str = "--sm") -> int:
    if sm not in KNOWN_SMS:
        raise UsageError(not_a_known_sm(f"{what} {sm}"))
    return sm


def override(comm: Comm, assignments: tuple[str, ...], channels: int | None) -> Comm:
    for text in assignments:
        name, sep, raw = text.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not raw:
            raise UsageError(f"--input expects NAME=VALUE (like ring.bwIntra=20), got {text!r}")
        if name not in comm.values:
            raise UsageError(f"--input {name}: not an input of NCCL's tuning model"
                             + did_you_mean(name, comm.names(), "inputs"))
        comm = comm.with_value(name, _parse(name, raw), f"--input {text}")
        if name == "nNodes" or name == "localRanks":
            comm = comm.with_value("nRanks", comm["nNodes"] * comm["localRanks"],
                                   "nNodes × localRanks")
    if channels is not None:
        for g in ("ring", "tree"):
            comm = comm.with_value(f"{g}.nChannels", channels, "--channels")
        comm = comm.with_value("nChannels", channels, "--channels")
    _check(comm)
    return comm


def _parse(name: str, raw: str) -> object:
    field = name.rpartition(".")[2]
    if field in ("typeIntra", "typeInter"):
        if raw.upper() not in K.PATH_TYPES:
            raise UsageError(f"--input {name}={raw}: a path type is one of "
                             f"{', '.join(K.PATH_TYPES)} (src/include/graph.h:117-147)")
        return raw.upper()
    if field in NAMES:
        if raw.upper() not in [n.upper() for n in NAMES[field]]:
            raise UsageError(f"--input {name}={raw}: one of {', '.join(NAMES[field])}")
        return next(n for n in NAMES[field] if n.upper() == raw.upper())
    try:
        value: float = float(raw) if field in FLOATS else int(raw)
    except ValueError:
        kind = "a number (GB/s or µs)" if field in FLOATS else "a whole number"
        raise UsageError(f"--input {name}={raw}: expects {kind}") from None
    if field not in FLOATS and abs(value) > C_INT_MAX:  # (math.isfinite overflows on it)
        raise UsageError(f"--input {name}={raw[:40]}: NCCL holds it in a C int, whose largest "
                         f"value is {C_INT_MAX:,}")
    if not math.isfinite(value):
        raise UsageError(f"--input {name}={raw}: expects a finite number")
    if field in FLOATS and value > C_FLOAT_MAX:
        raise UsageError(f"--input {name}={raw}: NCCL holds it in a C float, whose largest "
                         f"value is {C_FLOAT_MAX:.7g}")
    if value < 0:
        raise UsageError(f"--input {name}={raw}: cannot be negative")
    return value


def _check(comm: Comm) -> None:
    for name in ("nNodes", "localRanks"):
        if comm[name] < 1:
            raise UsageError(f"{name} must be at least 1")
    if comm["nRanks"] != comm["nNodes"] * comm["localRanks"]:
        raise UsageError(f"nRanks {comm['nRanks']} ≠ nNodes × localRanks = "
                         f"{comm['nNodes'] * comm['localRanks']}: NCCL's model has the same "
                         "GPUs on every node")
    check_sm(comm["minCompCap"], "minCompCap")
    check_sm(comm["maxCompCap"], "maxCompCap")
    for name in ("nChannels", *(f"{g}.nChannels" for g in GRAPHS), "nvlsChannels"):
        if comm[name] > K.MAXCHANNELS:
            raise UsageError(f"{name} = {comm[name]}: NCCL never uses more than MAXCHANNELS = "
                             f"{K.MAXCHANNELS} channels (src/include/device.h:91)")
    if comm["nChannels"] < 1:
        raise UsageError("nChannels must be at least 1 (NCCL's rings need a channel)")
