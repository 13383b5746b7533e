"""Names an option chooses among, defined once for the stages that act on them, the API that
checks them and the command line that offers them (its `click.Choice`s are made while the
options are parsed, before any stage runs: so this module imports nothing).
"""

from __future__ import annotations

# NCCL's protocols as NCCL spells them: `ncclProtoStr[NCCL_NUM_PROTOCOLS] = {"LL", "LL128",
# "Simple"}` (NVIDIA/nccl src/init.cc), indexed by NCCL_PROTO_LL/LL128/SIMPLE (devcomm.h).
# MSCCL XML's `proto` attribute takes the same names (msccl_parser.cc, topo.cc).
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")

# The two executors that read MSCCL XML (`schedc.msccl.rules` has each one's rules).
NCCL_EXECUTOR, MSCCL_EXECUTOR = "msccl-executor-nccl", "msccl"
EXECUTORS = (NCCL_EXECUTOR, MSCCL_EXECUTOR)

# Where an exported MSCCL algorithm's steps read and write (`schedc.export.msccl_xml`).
LAYOUTS = ("inplace", "outofplace", "both")

# The collectives a tuner table has rows for, schedc's name → the name NCCL's example tuner
# plugin reads (`schedc.export.tuner`): `tune --collective` chooses among them.
TUNER_COLLECTIVES = {"allreduce": "allreduce", "allgather": "allgather",
                     "reduce_scatter": "reducescatter", "broadcast": "broadcast",
                     "reduce": "reduce"}

# The collectives whose exact optimum `bound` computes and `synthesize` packs (the others,
# all-to-all and the neighbour exchanges, are not packings of trees).
PACKED = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
