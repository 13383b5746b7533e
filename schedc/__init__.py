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

Every name is looked up in `schedc.api` on first use, and each function imports its stage
when called, so `import schedc` stays cheap. `__version__` comes from the package metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["DEFAULT_TIMEOUT", "Limits", "SchedcError", "Session", "VerificationFailed",
           "__version__", "bound", "calibrate", "check", "compare", "emit", "evaluate",
           "export_astra", "export_msccl", "fitted_sets", "import_machine", "load",
           "machine_summary", "nccl_model", "predict", "report", "scale", "sensitivity", "solve",
           "sweep", "synthesize", "time", "tune", "validate_msccl", "verify", "verify_files", "verify_for_all",
           "whatif"]

if TYPE_CHECKING:
    from .api import (
        DEFAULT_TIMEOUT,
        Limits,
        SchedcError,
        VerificationFailed,
        bound,
        calibrate,
        check,
        compare,
        emit,
        evaluate,
        export_astra,
        export_msccl,
        fitted_sets,
        import_machine,
        load,
        machine_summary,
        nccl_model,
        predict,
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
    )
    from .session import Session

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
    if name == "Session":
        from .session import Session
        return Session
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'schedc' has no attribute {name!r}")
