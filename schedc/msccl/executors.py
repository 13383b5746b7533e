"""What each MSCCL executor takes, with the source line that sets or applies each: its limits
(steps per thread block, thread blocks, counts, offsets, elements), the attributes each
element requires, the collectives and step types it knows, and the line of every rule
(`LINES`). rules.py checks a file against them; export/msccl_xml.py writes within them.

The sources: Azure/msccl-executor-nccl at c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54 (`NCCL`) and
microsoft/msccl at b23e9cd5dd63f82ee1c5aae7e0a2042079be903a (`MSCCL`); see rules.py.
"""

from __future__ import annotations

from ..choices import MSCCL_EXECUTOR, NCCL_EXECUTOR
from ..limits import MAX_CHANNELS as MAX_CHANNELS  # MAXCHANNELS: device.h:65 / devcomm.h:51

NCCL, MSCCL = NCCL_EXECUTOR, MSCCL_EXECUTOR
PARSER = {NCCL: "Azure/msccl-executor-nccl src/misc/msccl/msccl_parser.cc",
          MSCCL: "microsoft/msccl src/graph/topo.cc"}
COMMITS = {NCCL: "c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54",
           MSCCL: "b23e9cd5dd63f82ee1c5aae7e0a2042079be903a"}

# The limits, per executor (the source line that sets each).
MAX_STEPS = {NCCL: 64, MSCCL: 256}  # MSCCL_MAX_NUM_STEPS: common.mk:19 / msccl.h:6
MAX_THREAD_BLOCKS = {NCCL: 32 * 32, MSCCL: 108 * 2}  # msccl_struct.h:18 / msccl.h:8
MAX_PER_CHANNEL = 32  # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL: msccl_struct.h:17 / msccl.h:7
MAX_COUNT = 72  # MSCCL_MAX_COUNT, cnt < 72: msccl_struct.h:19 / msccl.h:10
MAX_DEPENDED_TB = 127  # dependentBid is int8_t: msccl_struct.h:58 / msccl.h:65
MAX_OFFSET = 32767  # srcOffset, dstOffset are int16_t: msccl_struct.h:44-45 / msccl.h:46-47
MAX_SUBS = 1024  # children of one element: msccl_parser.h:22 / xml.h:18
MAX_NODES = 4096  # elements one rank's parse keeps: msccl_parser.h:23 / xml.h:19

ALGO_REQUIRED = {
    NCCL: (("nchunksperloop", 315), ("nchannels", 319), ("ngpus", 323), ("proto", 327),
           ("coll", 334), ("minBytes", 376), ("maxBytes", 380), ("inplace", 384),
           ("outofplace", 388)),
    MSCCL: (("name", 771), ("ngpus", 775), ("nchunksperloop", 782), ("nchannels", 784),
            ("proto", 787), ("coll", 823), ("inplace", 848)),
}
GPU_REQUIRED = {NCCL: (("id", 399), ("i_chunks", 401), ("o_chunks", 402), ("s_chunks", 403)),
                MSCCL: (("id", 877), ("i_chunks", 879), ("o_chunks", 880), ("s_chunks", 881))}
TB_REQUIRED = {NCCL: (("id", 413), ("recv", 414), ("send", 415), ("chan", 416)),
               MSCCL: (("id", 895), ("recv", 896), ("send", 897), ("chan", 898))}
STEP_REQUIRED = {NCCL: tuple(zip(("s", "srcoff", "srcbuf", "dstoff", "dstbuf", "cnt", "type",
                                   "depid", "deps", "hasdep"),
                                  (472, 474, 475, 476, 477, 479, 480, 481, 482, 483))),
                 MSCCL: tuple(zip(("s", "srcoff", "srcbuf", "dstoff", "dstbuf", "cnt", "type",
                                   "depid", "deps", "hasdep"),
                                  (959, 961, 962, 963, 964, 966, 967, 968, 969, 970)))}
COLLS = {NCCL: ("reduce", "broadcast", "allreduce", "reducescatter", "allgather", "send",
                "recv", "gather", "scatter", "alltoall", "alltoallv"),  # msccl_parser.cc:335
         MSCCL: ("allreduce", "allgather", "reduce", "broadcast", "alltoall", "reduce_scatter",
                 "custom")}  # topo.cc:826
STEP_TYPES = {NCCL: ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"),  # :499
              MSCCL: ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "ra", "nop")}  # :986
SENDS = {"s", "rcs", "rrs", "rrcs"}
RECEIVES = {"r", "rcs", "rrs", "rrc", "rrcs"}
BUFFER_NAMES = ("i", "o", "s")
CHECK_SRC = {"s", "rrs", "rrcs", "cpy", "re", "ra"}  # msccl_parser.cc:499-537 checkSrc
CHECK_DST = {"r", "rcs", "rrcs", "cpy", "re", "ra"}  # checkDst
# Per rule: the line of each executor's source that applies it (None: that executor does not).
LINES: dict[str, dict[str, int | str]] = {
    "proto": {NCCL: 328, MSCCL: 788}, "coll": {NCCL: 371, MSCCL: 843},
    "bytes": {MSCCL: 807}, "nthreads": {MSCCL: 859}, "nchannels": {NCCL: "msccl_setup.cc:93",
                                                                  MSCCL: 866},
    "chunks": {MSCCL: 886}, "s_chunks": {NCCL: 404, MSCCL: 882},
    "tb_id": {NCCL: 421, MSCCL: 903}, "tb_negative": {NCCL: 417, MSCCL: 899},
    "tb_duplicate": {NCCL: 425, MSCCL: 907}, "own_peer": {NCCL: 431, MSCCL: 913},
    "peer_range": {MSCCL: 929}, "peer_low": {NCCL: 437, MSCCL: 919},
    "chan": {NCCL: 449, MSCCL: 936}, "tb_gap": {NCCL: 689, MSCCL: 1178},
    "steps": {NCCL: 485, MSCCL: 972}, "type": {NCCL: 541, MSCCL: 1028},
    "buffer": {NCCL: 264, MSCCL: 719},
    "count": {NCCL: 577, MSCCL: 1065}, "send_peer": {NCCL: 585, MSCCL: 1072},
    "recv_peer": {NCCL: 598, MSCCL: 1087}, "per_channel_send": {NCCL: 589, MSCCL: 1076},
    "per_channel_recv": {NCCL: 602, MSCCL: 1090}, "bounds": {NCCL: 272, MSCCL: 727},
    "chain": {NCCL: 616, MSCCL: 1105}, "hasdep": {NCCL: 647, MSCCL: 1136},
    "depid": {NCCL: "msccl_struct.h:58, msccl_kernel.cu:229", MSCCL: "msccl.h:65"},
    "offset16": {NCCL: "msccl_struct.h:44", MSCCL: "msccl.h:46"},
    "subs": {NCCL: "msccl_parser.h:22 (cc:195)", MSCCL: "xml.h:18"},
    "nodes": {NCCL: "msccl_parser.h:23 (cc:169)", MSCCL: "xml.h:19"},
    "root": {NCCL: 312, MSCCL: 769},
    "ngpus": {NCCL: 323, MSCCL: 775},  # where ngpus is read: a rank with no <gpu> runs nothing
}
