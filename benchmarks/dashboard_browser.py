"""How long a dashboard page takes as a user feels it: in real Chromium, from a widget change to
the settled page (the script rerun, the websocket round trip, and plotly drawing included).

Starts `streamlit run app.py` on a free local port and drives Debian's headless Chromium with
Playwright (as tests/dashboard/test_browser.py does). For each page on a 70B model
(Llama-3-70B, 4 × H100 by default) it loads the page, waits until it has settled, then changes
the sidebar's batch to a value not seen before (so no cache hit) and times until the page is
settled again: Streamlit's status widget gone, no stale element left, and the DOM quiet for
QUIET_MS (the quiet wait itself is not counted: the time is that of the last DOM change).
`cpu_ms` is the CPU time the server and the browser spent on one change (the quiet wait's
polling included): on a machine shared with other work it varies far less than the wall time.
Validation is timed on its first visit in the server process, picked in the sidebar as a user
gets there (`first_visit_s`: the measurements read back from the disk cache, its figures built),
on a full page load (`first_load_s`, which includes Streamlit's own start in the browser, about
1 s for an empty page on this machine) and on a rerun. The planner over every GPU is timed from
opening its link to the answer (`answer_s`, the same start included) and from pressing Plan with
a new arrival rate to the answer (`plan_press_s`).

Targets (issue 15): ≤ 300 ms for Explore, Roofline, Memory, Scaling, Optimizations; ≤ 1 s for
Validation; ≤ 3 s for the planner over every GPU.

    python benchmarks/dashboard_browser.py [--app app.py] [-n 5] [--pages explore,roofline]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUIET_MS = 400
TARGETS_S = {"explore": 0.3, "roofline": 0.3, "memory": 0.3, "scaling": 0.3,
             "optimizations": 0.3, "validation": 1.0, "planner": 3.0}  # fmt: skip
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-sync"]  # fmt: skip
# Resolves with the time (ms after `start`) of the last DOM change once the page is settled.
SETTLE_JS = """([start, quiet, timeout, must]) => new Promise(resolve => {
  let last = performance.now();
  const obs = new MutationObserver(() => { last = performance.now(); });
  obs.observe(document.body, {subtree: true, childList: true, attributes: true,
                              characterData: true});
  const busy = () => document.querySelector('[data-testid="stStatusWidget"]') ||
                     document.querySelector('[data-stale="true"]');
  const poll = () => {
    const now = performance.now();
    const done = !must || new Function('return ' + must)();
    if (done && !busy() && now - last >= quiet && last > start) {
      obs.disconnect(); resolve(last - start); }
    else if (now - start > timeout) { obs.disconnect(); resolve(-1); }
    else setTimeout(poll, 20);
  };
  setTimeout(poll, 20);
})"""


def _chromium() -> str:
    for candidate in (os.environ.get("ROOFLENS_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium")):  # fmt: skip
        if candidate and Path(candidate).is_file():
            return candidate
    sys.exit("Chromium not found: run scripts/install-browser.sh")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(app: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
         "--server.runOnSave", "false"],
        cwd=app.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                sys.exit("streamlit did not start")
            time.sleep(0.3)


def _settle(page: Any, must: str = "", start: float | None = None) -> float:
    """Seconds from `start` (default: now) to the last DOM change before the page settled,
    once the JavaScript condition `must` holds (the run's end, e.g. the link updated)."""
    start = page.evaluate("performance.now()") if start is None else start
    ms = page.evaluate(SETTLE_JS, [start, QUIET_MS, 300_000, must])
    return float(ms) / 1e3


def cpu_ms() -> float:
    """CPU time (user + system, ms) of this process and every process under it: the server,
    Playwright's driver and Chromium. Unlike wall time, it hardly moves with other work on a
    shared machine (0 where /proc is missing)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:  # utime, stime, and those of waited-for children
            total += sum(int(v) for v in stats[pid][11:15]) * 1e3 / tick
        todo += children.get(pid, [])
    return total


def _timed_change(page: Any, label: str, value: int) -> float:
    """A new batch typed and entered; settled once the link carries it (the script's last act,
    `write_url`) and the drawing after it is done."""
    box = page.get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    start = page.evaluate("performance.now()")
    box.press("Enter")
    return _settle(page, f"location.search.includes('batch={value}')", start)


def _switch_to(page: Any, title: str, param: str) -> float:
    """Pick a page in the sidebar (as a user does); settled once the link names it."""
    start = page.evaluate("performance.now()")
    page.get_by_text(title, exact=True).click()
    return _settle(page, f"location.search.includes('page={param}') && "
                   "!!document.querySelector('h2')", start)  # fmt: skip


def _time_planner(page: Any, url: str, n: int) -> dict[str, float]:
    """From opening the link to the answer (the form plans on load), then from pressing Plan
    with a new arrival rate (a new plan over every GPU) to its answer."""
    start = time.perf_counter()
    page.goto(f"{url}/?page=planner&plan_gpus=none&plan_sim=0")
    _settle(page, "document.body.innerText.includes('configurations in')")
    out = {"answer_s": round(time.perf_counter() - start, 3)}
    times = []
    for i in range(max(1, min(n, 3))):  # each is a whole sweep: a few suffice
        rate = f"{5.5 + i:.1f}"
        page.get_by_role("spinbutton", name="Arrival rate (requests/s)").fill(rate)
        begin = page.evaluate("performance.now()")
        page.get_by_role("button", name="Plan", exact=True).click()
        answered = (f"location.search.includes('plan_rate={rate}') && "
                    "document.body.innerText.includes('configurations in')")  # fmt: skip
        times.append(_settle(page, answered, begin))
    out["plan_press_s"] = round(statistics.median(times), 3)
    return out


def time_pages(url: str, pages: list[str], n: int) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        browser = pw.chromium.launch_persistent_context(
            profile, executable_path=_chromium(), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )  # fmt: skip
        page = browser.new_page()
        page.set_default_timeout(300_000)
        batch = 20
        for name in pages:
            if name == "planner":
                out[name] = _time_planner(page, url, n)
                continue
            extra: dict[str, float] = {}
            if name == "validation" and page.url.startswith(url):
                # its first visit in this server process, from the sidebar as a user gets there
                extra["first_visit_s"] = round(_switch_to(page, "Validation", name), 3)
            start = time.perf_counter()
            page.goto(f"{url}/?page={name}")  # a full load: Streamlit's own start included
            _settle(page, "!!document.querySelector('h2')")
            load_s = time.perf_counter() - start
            times, cpu = [], []
            for _ in range(n):
                batch += 1
                before = cpu_ms()
                times.append(_timed_change(page, "Batch (sequences)", batch))
                cpu.append(cpu_ms() - before)  # the 400 ms quiet wait's polling included
            median = statistics.median(times)
            out[name] = {**extra, "first_load_s": round(load_s, 3), "median_s": round(median, 3),
                         "max_s": round(max(times), 3),
                         "cpu_ms": round(statistics.median(cpu))}  # fmt: skip
        browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", type=Path, default=REPO / "app.py")
    parser.add_argument("-n", type=int, default=5, help="widget changes timed per page")
    parser.add_argument("--pages", default=",".join(TARGETS_S))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    proc, url = _serve(args.app.resolve())
    try:
        results = time_pages(url, args.pages.split(","), args.n)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"cpus visible: {os.cpu_count()} (shared); app: {args.app}")
    for name, r in results.items():
        key = {"planner": "plan_press_s", "validation": "first_visit_s"}.get(name, "median_s")
        key = key if key in r else "median_s"
        verdict = "ok" if 0 <= r[key] <= TARGETS_S[name] else "OVER"
        print(f"{name:14s} {json.dumps(r)}  target {TARGETS_S[name]:g} s: {verdict}")


if __name__ == "__main__":
    main()
