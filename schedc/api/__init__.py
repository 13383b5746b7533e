"""The public API: every command of `schedc` as a function that returns results, not text.

The command line (`schedc.cli`) is a thin layer over these functions: it parses options,
calls one of them and renders what it returns. Whatever a command decides before it reports
(verify first, search a structural param over the integers, refuse work past a limit or a
deadline) is decided here, so a script gets the same answers:

    >>> import schedc
    >>> session = schedc.load("schedules/seed/nvlink_hosts.sched")
    >>> schedc.solve(session, "time(hierarchical) = time(ring)", "hosts").roots
    (1,)

Importing this package is cheap: each function imports its stages when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..choices import EXECUTORS, NCCL_EXECUTOR, NCCL_PROTOCOLS
from ..deadline import DEFAULT_TIMEOUT
from ..errors import SchedcError, VerificationFailed
from ..files import (  # what a run reads and writes (see files.py)
    RUN,
    Run,
    check_output,
    check_output_folder,
)
from ..limits import (
    DEFAULT_POINTS,
    MAX_CHANNELS,
    MAX_CUTS,
    MAX_SIZE,
    MAX_STEP_IDS,
    Limits,
)
from ..progress import listening
from .analysing import (
    Sensitivities,
    bound,
    check,
    evaluate,
    plot_solution,
    protocol_switches,
    scale,
    sensitivity,
    solve,
    sweep,
)
from .changing import whatif
from .compiling import (
    MAX_EMIT_LINES,
    STAGES,
    VerifiedFile,
    compare,
    emit,
    load,
    numeric_times,
    time,
    verify,
    verify_files,
)
from .exporting import export_astra, export_msccl, validate_msccl
from .forall import for_all_holds, verify_for_all
from .machines import (
    MAX_HOSTS,
    NVLINKS,
    SMS,
    import_machine,
    machine_notes,
    machine_summary,
)
from .synthesizing import Synthesis, synthesize
from .calibrating import (
    FitNotWritten,
    calibrate,
    calibrate_files,
    calibrate_logs,
    calibration_pairs,
    read_manifest,
    write_calibration,
)
from .measuring import fitted_sets, plot_prediction, predict, predict_nccl
from .nccl import NcclModel, against_nccl, nccl_model
from .predicting import (
    DEFAULT_OUTLIER_FACTOR,
    fitted_bands,
    load_fitted,
    outlier_rows,
    predict_against,
    predict_file,
)
from .reporting import report, report_path
from .tuning import TunedTable, Tuning, tune, tuning_csv

if TYPE_CHECKING:
    from ..analysis.bound.bounds import Bounds
    from ..analysis.calibrate.records import Calibration, Comparison
    from ..analysis.check import FileCheck
    from ..analysis.predicted_log import PredictedLog
    from ..analysis.forall.family import ForAll
    from ..analysis.machine import MachineSummary
    from ..analysis.nccl_model import Against
    from ..analysis.scale.pieces import Scaling
    from ..analysis.solve.instances import IntegerSearch
    from ..analysis.solve.reports import ReportValue
    from ..analysis.solve.roots import Solution
    from ..analysis.solve.sweep import Sweep
    from ..analysis.verify.verdict import Verdict
    from ..analysis.whatif import WhatIf
    from ..cost.numeric import NumericTiming
    from ..cost.timing import Timing
    from ..export.astra import AstraExport
    from ..session import Session

# The result types, for isinstance and annotations; imported on first use (they bring SymPy).
RESULT_TYPES = {
    "Session": "schedc.session", "Timing": "schedc.cost.timing",
    "NumericTiming": "schedc.cost.numeric",
    "Verdict": "schedc.analysis.verify.verdict", "Bounds": "schedc.analysis.bound.bounds",
    "Solution": "schedc.analysis.solve.roots", "IntegerSearch": "schedc.analysis.solve.instances",
    "Sweep": "schedc.analysis.solve.sweep", "Scaling": "schedc.analysis.scale.pieces",
    "Calibration": "schedc.analysis.calibrate.records",
    "Comparison": "schedc.analysis.calibrate.records", "FileCheck": "schedc.analysis.check",
    "ReportValue": "schedc.analysis.solve.reports", "WhatIf": "schedc.analysis.whatif",
    "ForAll": "schedc.analysis.forall.family", "MachineSummary": "schedc.analysis.machine",
    "AstraExport": "schedc.export.astra", "Against": "schedc.analysis.nccl_model",
    "PredictedLog": "schedc.analysis.predicted_log",
}


def __getattr__(name: str):
    if name in RESULT_TYPES:
        import importlib
        return getattr(importlib.import_module(RESULT_TYPES[name]), name)
    raise AttributeError(f"module 'schedc.api' has no attribute {name!r}")


# The whole public API, which `schedc` re-exports (tests/test_api_names.py keeps the two lists
# and the type checkers' imports equal).
__all__ = [
    # the commands, one function each
    "against_nccl", "bound", "calibrate", "calibrate_files", "calibrate_logs", "check", "compare", "emit", "evaluate",
    "export_astra", "export_msccl", "import_machine", "load", "machine_summary", "nccl_model",
    "numeric_times", "predict", "predict_against", "predict_file", "predict_nccl", "protocol_switches", "report", "scale", "sensitivity", "solve",
    "sweep", "synthesize", "time", "tune", "validate_msccl", "verify", "verify_files", "verify_for_all",
    "whatif",
    # helpers of the commands: plots, a calibration's inputs and outputs, files, progress
    "calibration_pairs", "check_output", "check_output_folder", "fitted_bands", "fitted_sets",
    "for_all_holds",
    "listening", "load_fitted", "machine_notes", "outlier_rows", "plot_prediction",
    "plot_solution", "read_manifest", "report_path", "tuning_csv", "write_calibration", "RUN",
    "Run",
    # what they return
    "Against", "AstraExport", "Bounds", "Calibration", "Comparison", "FileCheck", "ForAll",
    "IntegerSearch", "MachineSummary", "NcclModel", "NumericTiming", "PredictedLog", "ReportValue", "Scaling", "Sensitivities",
    "Session", "Solution", "Sweep", "Synthesis", "Timing", "TunedTable", "Tuning", "Verdict",
    "VerifiedFile", "WhatIf",
    # errors
    "FitNotWritten", "SchedcError", "VerificationFailed",
    # the options' defaults, ranges and names
    "DEFAULT_OUTLIER_FACTOR", "DEFAULT_POINTS", "DEFAULT_TIMEOUT", "EXECUTORS", "Limits", "MAX_CHANNELS", "MAX_CUTS",
    "MAX_EMIT_LINES", "MAX_HOSTS", "MAX_SIZE", "MAX_STEP_IDS", "NCCL_EXECUTOR",
    "NCCL_PROTOCOLS", "NVLINKS", "SMS", "STAGES",
]
