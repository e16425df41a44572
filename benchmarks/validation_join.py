"""How long the dashboard's Validation page takes to build its view the first time: reading every
shared measurement table (`validate.datasets.load_kernels`) and pricing each row under `ideal`
and `calibrated` (`validate.compare.join`), the work behind its "Predicting every measured
kernel…" spinner before the view is kept on disk (dashboard/validation_data.py).

    python -m benchmarks.validation_join [-n 2]

Prints the rows, and the wall time of each step per run, and their median.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2, help="runs (default 2)")
    args = parser.parse_args()
    from rooflens.validate import datasets
    from rooflens.validate.compare import PROFILE_NAMES, join

    loads, joins = [], []
    for _ in range(args.n):
        datasets._load_kernels.cache_clear()  # each run reads the files, as a new server does
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            measured = datasets.load_kernels()
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        joined = join(measured, PROFILE_NAMES)
        joins.append(time.perf_counter() - start)
    print(f"{len(joined):,} measured kernel calls, {joined['gpu'].nunique()} GPUs")
    for name, times in (("read the tables", loads), ("price every row", joins)):
        runs = ", ".join(f"{t:.1f}" for t in times)
        print(f"  {name:<16} {statistics.median(times):6.1f} s median  (runs: {runs} s)")
    total = statistics.median(loads) + statistics.median(joins)
    print(f"  {'together':<16} {total:6.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
