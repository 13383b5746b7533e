"""What one run of the command line shares between `main` and the commands: the exit codes,
whether the command was given --json, and the sessions kept until the process exits. Its own
module, light, so that `main` reads them without importing the commands (`cli/group.py`)."""

from __future__ import annotations

from contextvars import ContextVar

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 70

# Whether the command being run was given --json, noted while click parses its options, so
# that `main` prints an error as a JSON object too (`render.errors`).
JSON_REQUESTED: ContextVar[bool] = ContextVar("schedc_json_requested", default=False)

# The sessions this process's commands opened, kept until it exits: freeing a big one object
# by object (the 150,000 devices, resources and hops of 2,048 hosts × 8 GPUs) costs ~0.15 s,
# which `entry`'s exit without teardown skips. `main` empties it unless run by `entry`.
KEPT: list = []
