"""NCCL's own tuning model, as NCCL runs it: the latency and bandwidth of each collective ×
algorithm × protocol (`src/graph/tuning.cc`, `ncclTopoTuneModel`), the time of each for a
size (`ncclTopoGetAlgoTime`) and the choice among them (`src/enqueue.cc`,
`updateCollCostTable` and `topoGetAlgoInfo`), in NCCL's own float arithmetic, from inputs
named as NCCL names them (`inputs.py` derives them from a schedc machine).

It follows one NCCL version, `constants.VERSION`; every constant cites its line there.
"""
