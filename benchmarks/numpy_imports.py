"""What two NumPy helpers of the compile path save: `np.unique` (and `np.union1d`) imports
numpy.ma on its first call, and `np.random` numpy.random, so schedc.model.ir has its own
`distinct` and `random_words` (SplitMix64). Fresh processes, alternately, --repeat times:

- `import numpy`;
- `import numpy, numpy.ma`: what np.unique's first call adds;
- `import numpy, numpy.random`: what np.random's first use adds;

and, in-process, the time of each call once imported (the helpers must not be slower where
they run: a compile calls them a few times on arrays of up to millions of entries).

    python benchmarks/numpy_imports.py [--repeat N]
"""

from __future__ import annotations

import sys
import timeit

import numpy as np
from processes import ROOT, arguments, run_once, summary

sys.path.insert(0, str(ROOT))
from schedc.model.ir import distinct, random_words  # noqa: E402

CASES = {  # fresh processes: what each first call imports
    "import numpy": "import numpy",
    "... and numpy.ma (np.unique)": "import numpy, numpy.ma",
    "... and numpy.random": "import numpy, numpy.random",
}


def main() -> None:
    options = arguments(__doc__, "cases").parse_args()
    runs: dict[str, list] = {name: [] for name in CASES}
    for _ in range(options.repeat):
        for name, code in CASES.items():
            runs[name].append(run_once([sys.executable, "-c", code]))
    print(f"{'fresh process':<30} {'min':>8} {'median':>8}")
    for name in CASES:
        least, middle, _ = summary(runs[name])
        print(f"{name:<30} {least * 1000:>6.1f}ms {middle * 1000:>6.1f}ms")
    big = np.random.default_rng(1).integers(0, 10**6, size=2_000_000)
    assert np.array_equal(distinct(big), np.unique(big))
    print(f"\n{'in-process, 2e6 int64':<24} {'min of 5':>8}")
    for name, call in (("distinct", lambda: distinct(big)), ("np.unique", lambda: np.unique(big)),
                       ("random_words", lambda: random_words(2_000_000)),
                       ("np.random", lambda: np.random.default_rng(0).integers(
                           1, 2**63, size=2_000_000, dtype=np.uint64))):
        print(f"{name:<24} {min(timeit.repeat(call, number=1, repeat=5)) * 1000:>6.1f}ms")


if __name__ == "__main__":
    main()
