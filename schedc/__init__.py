"""schedc: a compiler for collective-communication schedules with symbolic cost."""

__version__ = "0.1.0"
