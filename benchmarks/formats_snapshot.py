"""Every `--format` output and `report` page of the shipped schedules into a folder, to diff
two versions of the render layer (`diff -r before after`): a refactor of the writers must
leave every byte as it was.

    PYTHONPATH=$PWD python benchmarks/formats_snapshot.py OUT_DIR
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("time", "compare", "bound")
FORMATS = ("text", "markdown", "latex")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = sorted((ROOT / "schedules").rglob("*.sched"))
    for path in files:
        name = str(path.relative_to(ROOT / "schedules")).replace("/", "__")
        relative = str(path.relative_to(ROOT))  # the same text in any checkout
        runs = [(f"{name}.{cmd}.{fmt}", [cmd, relative, "--format", fmt])
                for cmd in COMMANDS for fmt in FORMATS]
        runs.append((f"{name}.report", ["report", relative, "-o", str(out / f"{name}.html")]))
        for label, args in runs:
            done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT,
                                  capture_output=True, text=True)
            (out / label).write_text(f"exit {done.returncode}\n{done.stdout}\n--- stderr\n"
                                     f"{done.stderr}")
        print(name, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
