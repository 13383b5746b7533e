"""schedc: a declarative compiler for collective-communication schedules.

The Python API, for notebooks and scripts; the command line is a thin layer over it, so the
same policies apply (verification before reporting, the integer search of structural params,
deadlines and limits):

    import schedc
    session = schedc.load("schedules/seed/nvlink_2x8.sched", sets=["B_L=300GB/s"])
    schedc.time(session, "ring").time                 # Fraction, seconds at the nominal point
    schedc.verify(session)                            # one Verdict per result schedule
    schedc.solve(session, "time(hierarchical) = time(ring)", "B_L")
    schedc.bound(session)                             # one Bounds per collective

Every name of `schedc.api` (its `__all__`: the functions, what they return, the errors and
the options' constants) is looked up there on first use, and each function imports its stage
when called, so `import schedc` stays cheap. `__version__` comes from the package metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The whole public API: `schedc.api.__all__` and the version (tests/test_api_names.py keeps
# them equal, and the type checkers' imports below).
__all__ = ["__version__", "against_nccl", "bound", "calibrate", "calibrate_files",
           "calibrate_logs", "calibration_pairs", "check", "check_output", "check_output_folder",
           "compare", "emit", "evaluate", "export_astra", "export_msccl", "fitted_bands", "fitted_sets",
           "import_machine", "listening", "load", "machine_summary", "nccl_model", "numeric_times",
           "outlier_rows", "plot_prediction", "plot_solution", "predict", "predict_against",
           "predict_nccl", "protocol_switches",
           "read_manifest", "report", "scale", "sensitivity", "solve", "sweep", "synthesize", "time", "tune",
           "validate_msccl", "verify", "verify_files", "verify_for_all", "whatif",
           "write_calibration", "Against", "AstraExport", "Bounds", "Calibration", "Comparison",
           "DEFAULT_OUTLIER_FACTOR", "DEFAULT_POINTS", "DEFAULT_TIMEOUT", "EXECUTORS", "FileCheck", "FitNotWritten",
           "ForAll", "IntegerSearch", "Limits", "MachineSummary", "MAX_CHANNELS", "MAX_CUTS",
           "MAX_EMIT_LINES", "MAX_HOSTS", "MAX_SIZE", "MAX_STEP_IDS", "NCCL_EXECUTOR",
           "NCCL_PROTOCOLS", "NcclModel", "NumericTiming", "NVLINKS", "PredictedLog", "ReportValue", "RUN", "Run", "Scaling",
           "SchedcError", "Sensitivities", "Session", "SMS", "Solution", "STAGES", "Sweep", "Synthesis",
           "Timing", "TunedTable", "Tuning", "Verdict", "VerificationFailed", "VerifiedFile",
           "WhatIf"]

if TYPE_CHECKING:
    from .api import (
        DEFAULT_OUTLIER_FACTOR,
        DEFAULT_POINTS,
        DEFAULT_TIMEOUT,
        EXECUTORS,
        MAX_CHANNELS,
        MAX_CUTS,
        MAX_EMIT_LINES,
        MAX_HOSTS,
        MAX_SIZE,
        MAX_STEP_IDS,
        NCCL_EXECUTOR,
        NCCL_PROTOCOLS,
        NVLINKS,
        RUN,
        SMS,
        STAGES,
        Against,
        AstraExport,
        Bounds,
        Calibration,
        Comparison,
        FileCheck,
        FitNotWritten,
        ForAll,
        IntegerSearch,
        Limits,
        MachineSummary,
        NcclModel,
        NumericTiming,
        PredictedLog,
        ReportValue,
        Run,
        Scaling,
        SchedcError,
        Sensitivities,
        Session,
        Solution,
        Sweep,
        Synthesis,
        Timing,
        TunedTable,
        Tuning,
        Verdict,
        VerificationFailed,
        VerifiedFile,
        WhatIf,
        against_nccl,
        bound,
        calibrate,
        calibrate_files,
        calibrate_logs,
        calibration_pairs,
        check,
        check_output,
        check_output_folder,
        compare,
        emit,
        evaluate,
        export_astra,
        export_msccl,
        fitted_bands,
        fitted_sets,
        import_machine,
        listening,
        load,
        machine_summary,
        nccl_model,
        numeric_times,
        outlier_rows,
        plot_prediction,
        plot_solution,
        predict,
        predict_against,
        predict_nccl,
        protocol_switches,
        read_manifest,
        report,
        scale,
        sensitivity,
        solve,
        sweep,
        synthesize,
        time,
        tune,
        validate_msccl,
        verify,
        verify_files,
        verify_for_all,
        whatif,
        write_calibration,
    )

    __version__: str


def _version() -> str:
    """The installed distribution's version (`pip install .` and editable installs both
    record it); from a source tree that is not installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version  # ~30 ms: only when asked
    try:
        return version("schedc")
    except PackageNotFoundError:
        import re
        from pathlib import Path
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        found = re.search(r'^version = "([^"]+)"', pyproject.read_text(encoding="utf-8"),
                          re.M) if pyproject.is_file() else None
        return found.group(1) if found else "0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        value = globals()[name] = _version()
        return value
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'schedc' has no attribute {name!r}")
