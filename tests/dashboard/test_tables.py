"""What a person reads: the operator tables carry a unit in every cell and three significant
digits (no "171800.003 MB"), read back to the SI frame they came from; numbers and log-axis ticks
round as stated; the does-not-fit advice names changes that do fit, checked by a second route."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from apptest_helpers import si

from rooflens.dashboard import sweeps
from rooflens.dashboard.figures.roofline import roofline_points
from rooflens.dashboard.labels import advice_text
from rooflens.dashboard.numbers import MAX_TICKS, fmt_count, fmt_ms, fmt_sig, log_ticks, sig
from rooflens.dashboard.settings import DEFAULTS, Settings
from rooflens.dashboard.tables import ops_table, plain, roofline_table
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.specs.presets import get_model

# "13.7 TFLOP", "21.5 GB", "77.8 ms", "0 B": at most 3 significant digits, then a unit
WITH_UNIT = re.compile(r"^(\d+(?:\.\d+)?) (\S+)$")


def _number(text: str) -> float:
    """A table's plain number read back: '1,320' -> 1320.0."""
    return float(text.replace(",", ""))


def _digits(number: str) -> int:
    """Significant digits of a plain decimal ('0.0625' -> 3, '47600' -> 3, '1.10' -> 2)."""
    return len(number.replace(".", "").strip("0")) or 1


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    # the longest context: operators from nanoseconds to seconds, the widest spread of units
    longest = get_model("llama-3.1-70b").max_context - 128 + 1
    return sweeps.predict(Settings(model="llama-3.1-70b", prompt_len=longest)).ops_frame()


@pytest.mark.parametrize(
    ("column", "si_column"), [("FLOPs", "flops"), ("bytes moved", "bytes"), ("time", "time_s")]
)
def test_operator_cells_carry_a_unit_and_three_digits(frame, column: str, si_column: str) -> None:  # type: ignore[no-untyped-def]
    table = ops_table(frame)
    for text, value in zip(table[column], frame[si_column], strict=True):
        match = WITH_UNIT.match(text)
        assert match, f"{column}: {text!r} is not 'number unit'"
        assert _digits(match.group(1)) <= 3, text
        assert si(text) == pytest.approx(value, rel=5e-3, abs=1e-12), (text, value)


def test_operator_numbers_are_rounded_and_shares_add_up(frame) -> None:  # type: ignore[no-untyped-def]
    table = ops_table(frame)
    intensity = table["intensity (FLOP/byte)"]
    comm = frame["kind"] == "comm"
    assert (intensity[comm] == "—").all()  # no FLOPs: shown as a dash, not as 0 or None
    texts = intensity[~comm]
    shown = np.array([_number(t) for t in texts])
    np.testing.assert_allclose(shown, frame.loc[~comm, "intensity"].to_numpy(float), rtol=5e-3)
    assert all(_digits(t.replace(",", "")) <= 3 for t in texts)
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", t) for t in texts)  # separated
    for phase, group in table.groupby("phase"):
        shares = [_number(t) for t in group["share of step (%)"]]
        assert sum(shares) == pytest.approx(100, rel=1e-2), phase


def test_roofline_table_matches_the_chart(frame) -> None:  # type: ignore[no-untyped-def]
    placed, _ = roofline_points(frame)
    table = roofline_table(placed)
    attained = placed["attained_flops_per_s"] / 1e12
    shown = [_number(t) for t in table["attained (TFLOP/s)"]]
    np.testing.assert_allclose(shown, attained, rtol=5e-3)
    assert all(WITH_UNIT.match(t) for t in table["time"])


def test_sig_and_fmt_sig_round_to_three_significant_digits() -> None:
    assert sig(171800.003) == 172000.0
    assert sig(0.0012345) == pytest.approx(0.00123)
    assert sig(-2.555) == pytest.approx(-2.56) and sig(0.0) == 0.0 and math.isnan(sig(math.nan))
    assert fmt_sig(171800.003, "MB") == "172,000 MB" and fmt_sig(0.625) == "0.625"
    assert fmt_sig(math.inf) == "—"


def test_log_ticks_are_1_2_5_and_few() -> None:
    for lo, hi in [(8.8, 1.3e5), (70.0, 5100.0), (19.0, 115.0), (1e-3, 1e9), (0.3, 4.0)]:
        ticks = log_ticks(lo, hi)
        assert 2 <= len(ticks) <= MAX_TICKS, (lo, hi, ticks)
        assert all(lo <= t <= hi for t in ticks) and ticks == sorted(ticks)
    assert log_ticks(70.0, 5100.0) == [100, 200, 500, 1000, 2000, 5000]
    assert fmt_ms(100_000) == "100 s" and fmt_ms(20) == "20 ms" and fmt_ms(0.05) == "50 µs"
    assert fmt_count(2000, "tokens/s") == "2k tokens/s" and fmt_count(500) == "500"


def _fits(s: Settings) -> bool:
    sc = make_scenario(get_model(s.model_ref), s.gpu_ref, **s.scenario_kwargs())
    return bool(make_pipeline(sc, s.opts).memory().fits)


def test_fit_advice_names_changes_that_fit() -> None:
    # Llama 3 70B in bf16 (141 GB) on one H100: fp8 weights (H100 has fp8 tensor cores, the
    # cheapest fix) or TP 2 each fit on their own; the dashboard words them as its widgets
    one = DEFAULTS.with_(tp=1)
    assert not _fits(one)
    advice = advice_text(sweeps.fit_advice(one))
    assert advice == "Try “Precision scheme” W8A8-FP8, or “Tensor-parallel GPUs (TP)” 2."
    assert _fits(one.with_(tp=2)) and _fits(one.with_(quant="w8a8-fp8"))
    # Llama 3.1 405B on one L4 (24 GB): nothing single fits, TP 16 with int4 weights does
    l4 = Settings(model="llama-3.1-405b", gpu="l4", tp=1, batch=1)
    advice = advice_text(sweeps.fit_advice(l4))
    assert advice == (
        "Try “Tensor-parallel GPUs (TP)” 16 and “Precision scheme” W4A16 (no single change fits)."
    )
    assert _fits(l4.with_(tp=16, quant="w4a16"))
    assert not _fits(l4.with_(tp=16)) and not _fits(l4.with_(quant="w4a16"))


def _table_with(at, column: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The one static table on the page that has `column`."""
    (table,) = [t.value for t in at.table if column in t.value.columns]
    return table


def test_explore_and_roofline_pages_show_these_tables(app) -> None:  # type: ignore[no-untyped-def]
    frame = sweeps.predict(DEFAULTS).ops_frame()
    shown = _table_with(app(), "calls per step")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), ops_table(frame))
    placed, _ = roofline_points(frame)
    shown = _table_with(app(page="roofline"), "attained (TFLOP/s)")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), roofline_table(placed))


@pytest.mark.parametrize(
    "text",
    [
        "+ KV cache",
        "- a",
        "* b",
        "1. first",
        "12) x",
        "# h",
        "> q",
        "-",
        "1.6 ms",
        "-5 %",
        "$12.34 / $0.567",
        "$ per M tokens",
        "$/M output tokens",
    ],
)
def test_static_table_cells_read_as_written(text: str) -> None:
    # st.table renders a cell as Markdown: an optimization stage "+ KV cache" became a bullet
    # (and two prices an equation). A second route: CommonMark (markdown-it) renders the
    # escaped cell as the text itself.
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(str(plain(text)))
    assert html == f"<p>{text.replace('>', '&gt;')}</p>\n"
