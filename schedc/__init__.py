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

import importlib
from typing import TYPE_CHECKING

# The whole public API is `schedc.api.__all__` and the version: one list, read from there on
# first use (`__getattr__`, so `from schedc import *` and `schedc.__all__` import the API then);
# type checkers see the same names through the star import (tests/test_api_names.py).
if TYPE_CHECKING:
    from .api import *  # noqa: F403

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
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'schedc' has no attribute {name!r}")
    # (import_module, not `from . import api`: that looks `api` up here first, recursing)
    api = importlib.import_module("schedc.api")
    if name == "__all__":
        names = globals()[name] = ["__version__", *api.__all__]
        return names
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'schedc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
