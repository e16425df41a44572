"""End to end in a real browser: `streamlit run app.py` on a free local port, driven by Playwright
in Debian's headless Chromium (never a browser Playwright downloads). Changes a control, sees the
headline metric change and the link follow, uploads a Hugging Face config.json, opens the
Roofline page and counts the operators plotted, and saves screenshots (also to
docs/img/dashboard.png and docs/img/roofline.png for the README when
ROOFLENS_UPDATE_SCREENSHOT=1).

Skips with the reason where Chromium or Playwright is missing (`scripts/install-browser.sh`
installs Chromium; Playwright comes with the `test` extra)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from apptest_helpers import REPO, si

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
README_SHOT = REPO / "docs" / "img" / "dashboard.png"
ROOFLINE_SHOT = REPO / "docs" / "img" / "roofline.png"
HF_CONFIG = REPO / "tests" / "model" / "fixtures" / "Meta-Llama-3-70B" / "config.json"
TIMEOUT_MS = 90_000


def _chromium() -> str:
    for candidate in (os.environ.get("ROOFLENS_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):  # fmt: skip
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.skip("Chromium not found (install Debian's `chromium`: scripts/install-browser.sh)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.headless",
         "true", "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false",
         # other work in the tree (tests writing caches, editors) must not trigger reruns
         "--server.fileWatcherType", "none", "--server.runOnSave", "false"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"streamlit did not start: {err[-2000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _metric(page: Any, label: str) -> Any:
    return (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text=label)
        .locator('[data-testid="stMetricValue"]')
    )


def _save(page: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    page.screenshot(path=str(tmp))
    tmp.replace(path)  # atomic: an interrupted run never leaves half a PNG


def test_change_a_control_and_see_the_headline_change(server: str, tmp_path: Path) -> None:
    with _open_page(tmp_path, 1500, 1000) as (page, sync_api):
        page.goto(server)
        throughput = _metric(page, "Throughput")
        sync_api.expect(throughput).to_contain_text("tokens/s", timeout=TIMEOUT_MS)
        before = throughput.inner_text()
        page.get_by_role("button", name="Pin baseline").click()
        batch = page.get_by_label("Batch (sequences)")
        batch.fill("64")
        batch.press("Enter")
        batch.blur()
        sync_api.expect(throughput).not_to_have_text(before, timeout=TIMEOUT_MS)
        after = throughput.inner_text()
        assert si(after) > si(before), (before, after)  # 8x the batch, more tokens/s
        page.wait_for_url("**batch=64**")  # the address bar is a link to this scenario
        page.locator('[data-testid="stSidebarContent"]').evaluate("e => e.scrollTo(0, 0)")
        time.sleep(1.0)  # let the deltas settle before the picture
        _save(page, tmp_path / "dashboard.png")
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
        if os.environ.get("ROOFLENS_UPDATE_SCREENSHOT"):  # refresh the README's picture
            _save(page, README_SHOT)

        page.get_by_text("Upload a model or GPU spec").click()
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(
            str(HF_CONFIG)
        )
        sync_api.expect(page.get_by_text("Using the uploaded model")).to_be_visible()


def _settle(page: Any, sync_api: Any) -> None:
    """Wait until Streamlit has finished the run (its 'Running…' status widget is gone), as
    long as the other waits here: under a loaded CI machine a page's run outlasts the default
    5 s (a fresh-clone run beside a 10-minute fit failed on it)."""
    sync_api.expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(
        0, timeout=TIMEOUT_MS
    )
    time.sleep(0.5)


def test_roofline_page_plots_every_operator(server: str, tmp_path: Path) -> None:
    """The Roofline page in a browser: the roof and ceilings are drawn and every prefill and
    decode operator with FLOPs and bytes is a point on the chart; with a baseline pinned and the
    batch changed, the hollow baseline points appear beside them."""
    from rooflens.dashboard import sweeps
    from rooflens.dashboard.figures.roofline import roofline_points
    from rooflens.dashboard.settings import DEFAULTS
    from rooflens.hardware.presets import get_gpu

    placed, _ = roofline_points(sweeps.predict(DEFAULTS).ops_frame())
    with _open_page(tmp_path, 1500, 1080) as (page, sync_api):
        page.goto(f"{server}/?page=roofline")
        chart = page.locator('[data-testid="stPlotlyChart"]').first
        sync_api.expect(chart.locator(".scatterlayer")).to_have_count(1, timeout=TIMEOUT_MS)
        _settle(page, sync_api)
        points = chart.locator(".scatterlayer .trace .points path.point")
        ridge_points = len(set(get_gpu(DEFAULTS.gpu).peak_flops_per_s.values()))
        assert points.count() == len(placed) + ridge_points
        assert chart.get_by_text("ridge 295 FLOP/byte").count() == 1  # 989.4 / 3.35
        page.get_by_role("button", name="Pin baseline").click()
        batch = page.get_by_label("Batch (sequences)")
        batch.fill("64")
        batch.press("Enter")
        batch.blur()
        page.wait_for_url("**batch=64**")
        sync_api.expect(chart.get_by_text("baseline (pinned)")).to_have_count(1)
        _settle(page, sync_api)
        assert points.count() == 2 * len(placed) + ridge_points
        _save(page, tmp_path / "roofline.png")
        if os.environ.get("ROOFLENS_UPDATE_SCREENSHOT"):
            _save(page, ROOFLINE_SHOT)


@contextmanager
def _open_page(tmp_path: Path, width: int = 1400, height: int = 1000) -> Iterator[tuple[Any, Any]]:
    """A fresh headless Chromium page (its own profile under tmp_path) with the tests' timeout,
    and Playwright's sync API; skipped visibly without Chromium or Playwright."""
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": width, "height": height},
        )  # fmt: skip
        try:
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            yield page, sync_api
        finally:
            browser.close()


def test_tiles_and_columns_fit_at_1400_px_and_pictures_draw(server: str, tmp_path: Path) -> None:
    """Issue 15: at a normal 1400-px window no metric tile is cut short and no table hides
    columns; the time breakdown draws its five operator classes and the curve its two lines;
    a huge scenario reads in human units (no exponent)."""
    with _open_page(tmp_path) as (page, sync_api):
        page.goto(f"{server}/?model=llama-3.1-405b&tp=16&batch=256&prompt=100000&wdtype=fp8")
        sync_api.expect(_metric(page, "TTFT")).to_contain_text("min", timeout=TIMEOUT_MS)
        _settle(page, sync_api)
        cut = page.eval_on_selector_all(  # the value or any box inside it overflowing
            '[data-testid="stMetricValue"]',
            "els => els.filter(e => [e, ...e.querySelectorAll('*')].some("
            "d => d.scrollWidth > d.clientWidth + 1)).map(e => e.innerText)",
        )
        assert cut == []
        values = page.eval_on_selector_all(
            '[data-testid="stMetricValue"]', "els => els.map(e => e.innerText)"
        )
        assert len(values) == 7 and not [v for v in values if "e+" in v]  # 6 tiles + energy
        hidden = page.eval_on_selector_all(  # a table scrolling sideways hides columns
            '[data-testid="stTable"] table, [data-testid="stDataFrame"] .dvn-scroller',
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).length",
        )
        assert hidden == 0
        charts = page.locator('[data-testid="stPlotlyChart"]')
        sync_api.expect(charts.first.locator(".barlayer .trace")).to_have_count(5)
        sync_api.expect(charts.nth(1).locator(".scatterlayer .trace")).to_have_count(2)
        _save(page, tmp_path / "explore-405b.png")


def test_invalid_input_keeps_the_page_and_names_the_widget(server: str, tmp_path: Path) -> None:
    with _open_page(tmp_path) as (page, sync_api):
        page.goto(server)
        throughput = _metric(page, "Throughput")
        sync_api.expect(throughput).to_contain_text("tokens/s", timeout=TIMEOUT_MS)
        before = throughput.inner_text()
        tp = page.get_by_role("spinbutton", name="Tensor-parallel GPUs (TP)", exact=True)
        tp.fill("3")
        tp.press("Enter")
        sidebar = page.locator('[data-testid="stSidebarContent"]')
        sync_api.expect(sidebar.get_by_text("“Tensor-parallel GPUs (TP)” = 3 must divide")
                        ).to_be_visible()  # fmt: skip
        page.wait_for_url("**tp=3**")
        _settle(page, sync_api)
        assert page.get_by_role("heading", name="Explore").is_visible()
        assert throughput.inner_text() == before  # the last valid scenario stays
        assert "--tp" not in page.locator("body").inner_text()
        # speculative from the sidebar: a draft is picked, nothing blanks
        page.goto(f"{server}/?model=llama-3.1-70b&opt=speculative")
        sync_api.expect(_metric(page, "TPOT")).to_contain_text("ms", timeout=TIMEOUT_MS)
        sync_api.expect(page.get_by_text("draft llama-3.1-8b")).to_be_visible()


def test_static_tables_show_their_cells_as_written(server: str, tmp_path: Path) -> None:
    """st.table renders cells as Markdown: an optimization stage "+ KV cache" drew as a bullet
    and the planner's "$/h / $ per M tokens" pair could read as an equation."""
    cells = '[data-testid="stTable"] td'
    with _open_page(tmp_path) as (page, sync_api):
        page.goto(f"{server}/?page=optimizations")
        sync_api.expect(page.locator(cells).filter(has_text="+ KV cache").first).to_be_visible(
            timeout=TIMEOUT_MS
        )
        page.goto(f"{server}/?page=planner&plan_sim=0")
        # the heading, not the chart's legend entry of the same name (which renders later)
        frontier = page.get_by_role("heading", name="Pareto frontier")
        sync_api.expect(frontier).to_be_visible(timeout=TIMEOUT_MS)
        prices = page.locator(cells).filter(has_text="$")
        sync_api.expect(prices.first).to_contain_text(" / $", timeout=TIMEOUT_MS)
        inside = '[data-testid="stTable"] li, [data-testid="stTable"] .katex'
        assert page.locator(inside).count() == 0
