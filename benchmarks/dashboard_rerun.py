"""How long a dashboard page takes to rerun after a control change, for a 70B model.

Drives `app.py` headless through Streamlit's AppTest (the script run, every model call and the
page's elements and figures serialised; not the browser's drawing). Each page is warmed once,
then a control is changed to a value not seen before (so no cache hit) and the rerun is timed.
Target (issue 7): under 200 ms.

    python benchmarks/dashboard_rerun.py [--model llama-3-70b] [--gpu h100-sxm] [--tp 4] [-n 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TARGET_S = 0.200
# page -> (control key, values it takes one after another; each new to the cache)
CONTROLS = {
    "batch": [9, 10, 11, 12, 13, 14, 15, 16, 17, 18],
    "prompt_len": [520, 530, 540, 550, 560, 570, 580, 590, 600, 610],
    "tp": [8, 2, 16],  # invalidates every cached sweep keyed on TP (e.g. the max-batch grid)
}
PAGES = ("explore", "roofline", "memory", "scaling", "optimizations")


def time_page(page: str, control: str, query: dict[str, str], n: int) -> list[float]:
    at = AppTest.from_file(str(APP), default_timeout=300)
    for key, text in {**query, "page": page}.items():
        at.query_params[key] = text
    at.run()  # warm: imports, presets, first predictions
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for value in CONTROLS[control][:n]:
        widget = at.sidebar.number_input(key=control).set_value(value)
        start = time.perf_counter()
        widget.run()
        times.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]  # "does not fit" boxes are fine
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3-70b")
    parser.add_argument("--gpu", default="h100-sxm")
    parser.add_argument("--tp", default="4")
    parser.add_argument(
        "-n", type=int, default=5, help="reruns per page and control (≤ 10; 4 for tp)"
    )
    parser.add_argument("--pages", default=",".join(PAGES), help="comma-separated page ids")
    args = parser.parse_args()
    query = {"model": args.model, "gpu": args.gpu, "tp": args.tp}
    print(f"page rerun after a control change: {args.model} on {args.tp} × {args.gpu}")
    print(f"{'page':<14} {'control':<11} {'median':>9} {'max':>9}  target {TARGET_S * 1e3:.0f} ms")
    worst = 0.0
    for page in args.pages.split(","):
        for control in CONTROLS:
            times = time_page(page, control, query, args.n)
            worst = max(worst, statistics.median(times))
            verdict = "ok" if statistics.median(times) < TARGET_S else "OVER"
            print(f"{page:<14} {control:<11} {statistics.median(times) * 1e3:>6.1f} ms "
                  f"{max(times) * 1e3:>6.1f} ms  {verdict}")  # fmt: skip
    print(f"slowest median: {worst * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
