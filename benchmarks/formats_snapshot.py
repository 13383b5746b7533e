"""Every `--format` output and `report` page of the shipped schedules into a folder, to diff
two versions of the render layer (`diff -r before after`): a refactor of the writers must
leave every byte as it was.

    PYTHONPATH=$PWD python benchmarks/formats_snapshot.py OUT_DIR [--in-process] [NAME...]

`--in-process` runs the commands in this process (three times faster: one import), NAMEs
only the files whose path contains one of them.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("time", "compare", "bound")
FORMATS = ("text", "markdown", "latex")


def _run(args: list[str], in_process: bool) -> tuple[int, str, str]:
    if not in_process:
        done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT,
                              capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr
    from schedc.cli import main
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def main(out: Path, in_process: bool, names: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if in_process:  # the paths are relative to the checkout
        os.chdir(ROOT)
    files = [p for p in sorted((ROOT / "schedules").rglob("*.sched"))
             if not names or any(n in str(p) for n in names)]
    for path in files:
        name = str(path.relative_to(ROOT / "schedules")).replace("/", "__")
        relative = str(path.relative_to(ROOT))  # the same text in any checkout
        runs = [(f"{name}.{cmd}.{fmt}", [cmd, relative, "--format", fmt])
                for cmd in COMMANDS for fmt in FORMATS]
        runs.append((f"{name}.report", ["report", relative, "-o", str(out / f"{name}.html")]))
        for label, args in runs:
            code, stdout, stderr = _run(args, in_process)
            (out / label).write_text(f"exit {code}\n{stdout}\n--- stderr\n{stderr}")
        print(name, flush=True)


if __name__ == "__main__":
    flags = [a for a in sys.argv[2:] if a.startswith("--")]
    main(Path(sys.argv[1]), "--in-process" in flags,
         [a for a in sys.argv[2:] if not a.startswith("--")])
