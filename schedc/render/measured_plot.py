"""The predicted-against-measured plot of `schedc predict --plot`: time and busbw over size
(log axes), measured and predicted, with the sizes where the winning protocol changes.

matplotlib is imported here only, with the Agg backend (no display); the file is written
whole or not at all, without dates, so the same input gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from ..analysis.calibrate.calibration import Comparison
from ..errors import UsageError
from .calibration import write_whole

FORMATS = (".png", ".svg")


def plot_comparison(c: Comparison, path: Path, busbw_factor: float | None,
                    switches: list[tuple[float, str, str]]) -> None:
    """`switches`: (size in bytes, protocol before, protocol after)."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"--plot writes .png or .svg, not '{path.suffix or path.name}'")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    sizes = [p.size for p in c.points]
    measured = [p.measured for p in c.points]
    plt.rcParams["svg.hashsalt"] = "schedc"
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.loglog(sizes, [t * 1e6 for t in measured], "o", ms=4, label="measured")
    left.loglog(sizes, [t * 1e6 for t in c.predicted], "-", label=f"predicted ({c.schedule})")
    left.set_ylabel("time (µs)")
    if busbw_factor is not None:
        right.semilogx(sizes, [s / t / 1e9 * busbw_factor for s, t in zip(sizes, measured)], "o",
                       ms=4, label="measured")
        right.semilogx(sizes, [s / t / 1e9 * busbw_factor for s, t in zip(sizes, c.predicted)],
                       "-", label="predicted")
        right.set_ylabel("busbw (GB/s)")
    else:
        right.semilogx(sizes, [s / t / 1e9 for s, t in zip(sizes, measured)], "o", ms=4,
                       label="measured")
        right.semilogx(sizes, [s / t / 1e9 for s, t in zip(sizes, c.predicted)], "-",
                       label="predicted")
        right.set_ylabel("algbw = size / time (GB/s)")
    for axis in (left, right):
        for size, before, after in switches:
            axis.axvline(size, color="grey", lw=0.8, ls="--")
            top = axis is right  # clear of each panel's legend
            axis.annotate(f"{before}→{after}", (size, 0.98 if top else 0.02),
                          xycoords=("data", "axes fraction"), rotation=90,
                          va="top" if top else "bottom", ha="right", fontsize=7, color="grey")
        axis.set_xlabel("size (bytes)")
        axis.grid(True, which="major", alpha=0.3)
        axis.legend(fontsize=8, loc="upper left" if axis is left else "lower right")
    figure.suptitle(f"{c.schedule}: predicted against {', '.join(Path(x).name for x in c.logs)}",
                    fontsize=9)
    figure.tight_layout()
    metadata = {"Date": None} if suffix == ".svg" else {"Software": None}
    try:
        write_whole(path, lambda temporary: figure.savefig(temporary, metadata=metadata, dpi=110))
    finally:
        plt.close(figure)
