"""The id of every JSON document schedc prints, defined once (documented in the README)."""

TIME = "schedc.time/1"  # time and compare
VERIFY = "schedc.verify/1"
VERIFY_FOR_ALL = "schedc.verify/2"  # verify --for-all: /1 with `for_all` in each schedule
SOLVE = "schedc.solve/1"
SENSITIVITY = "schedc.sensitivity/1"
SWEEP = "schedc.sweep/1"
BOUND = "schedc.bound/1"
EVAL = "schedc.eval/1"
CHECK = "schedc.check/1"
ERROR = "schedc.error/1"
CALIBRATE = "schedc.calibrate/1"
PREDICT = "schedc.predict/2"  # /2: rows in nccl-tests' terms, outlier rows flagged, verdicts
TUNE = "schedc.tune/1"
TUNE_AGAINST = "schedc.tune-against-nccl/1"  # tune --against-nccl: rows beating NCCL's pick
SOLVE_INTEGERS = "schedc.solve-integers/1"  # solve --for a structural param
SCALE = "schedc.scale/2"  # /2: status, valid_to, checked_at; --at method
ASTRA = "schedc.astra/1"  # export astra
MACHINE = "schedc.machine/1"  # machine show
WHATIF = "schedc.whatif/1"
NCCL = "schedc.nccl/1"  # NCCL's own tuning model: inputs, table, choices
SYNTHESIZE = "schedc.synthesize/1"  # synthesize: the written schedule against the optimum
