"""How many schedules of the shipped files are proved in their structural family param
(issue 37's target): every `.sched` file under schedules/ with schedules and a structural
param that sizes a family of copies (`host node[hosts]`, `gpu g[p]`), `scale --in PARAM
--no-bound --json` run as a whole process, each schedule counted `proved` when every piece
is, else listed with the note of its first unproved piece (the hypothesis that fails), and
counted as checked with or without such a note.

    python benchmarks/scale_status.py [REPO]    # REPO: another checkout (default: this one)

Run on two checkouts (main, a branch) it gives the counts before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

# Which files, and in which params: read by the checkout's own schedc (the files may differ).
LIST = """
import sys
from pathlib import Path
import schedc
from schedc.language import syntax as ast
for path in sorted(Path("schedules").rglob("*.sched")):
    session = schedc.load(path)
    if not session.selected((), required=False):
        continue
    # The families of copies: hosts and top-level GPU families (not switches: `spine[spines]`).
    counts = [d.count for m in session.modules for b in m.body if isinstance(b, ast.Topology)
              for s in b.body for d in ([s.name] if isinstance(s, ast.HostDecl) else
                                        s.names if isinstance(s, ast.DeviceDecl)
                                        and s.kind == "gpu" else [])
              if d.count is not None]
    for param in session.structural():
        if any(isinstance(c, ast.Name) and c.id == param for c in counts):
            print(path, param)
"""


def _run(root: Path, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)})


def main(root: Path) -> None:
    listed = _run(root, ["-c", LIST])
    if listed.returncode:
        raise SystemExit(listed.stderr)
    proved = checked = unnamed = 0
    for line in listed.stdout.splitlines():
        path, param = line.rsplit(" ", 1)
        done = _run(root, ["-m", "schedc", "scale", path, "--in", param, "--no-bound", "--json"])
        if done.returncode:
            print(f"{path} in {param}: exit {done.returncode}: {done.stderr.strip()[:200]}")
            continue
        by_name: dict[str, list[dict]] = {}  # one entry per piece
        for piece in json.loads(done.stdout)["schedules"]:
            by_name.setdefault(piece["name"], []).append(piece)
        for name, pieces in by_name.items():
            if all(p["status"] == "proved" for p in pieces):
                proved += 1
                print(f"  proved   {path} {name} in {param} ({len(pieces)} piece(s))")
                continue
            first = next(p for p in pieces if p["status"] != "proved")
            why = next((n for n in first["notes"] if n.startswith("not proved: ")), None)
            checked += why is not None
            unnamed += why is None
            print(f"  checked  {path} {name} in {param}: {why or 'no note'}")
    print(f"{root}: {proved} schedules proved, {checked} checked with the hypothesis that "
          f"fails named, {unnamed} checked without")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE)
