"""Issue 26 §6: the Validation page leads with what a newcomer needs: what a measurement and a
row are and the held-out accuracy first, that the ±20 % tiles are in-sample, CPU runs labelled
as CPU runs, and the whole-model figure showing the error its caption defines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from apptest_helpers import assert_clean, figures

from rooflens.dashboard.validation_text import held_out_text
from rooflens.validate.cv import CV_FILE
from rooflens.validate.e2e.report import results_frame


def test_the_page_opens_with_rows_and_the_held_out_accuracy(app) -> None:  # type: ignore[no-untyped-def]
    if not CV_FILE.is_file():
        pytest.skip(f"no cross-validation table at {CV_FILE}")
    at = app(page="validation", vsection="held-out GPU")
    assert_clean(at)
    lead = at.markdown[0].value
    assert lead.startswith("A measurement is one kernel call")
    assert "a row of the tables below sums up one GPU and operator class" in lead
    # second route: the row-weighted median |error| of the committed table, by numpy
    cv = pd.read_csv(CV_FILE)
    classes = cv[~cv["op"].str.contains("/")]
    weighted = np.average(classes["median"], weights=classes["rows"])
    assert f"median |error| is {weighted * 100:.0f} % over {classes['rows'].sum():,}" in lead
    assert lead.index("Held out first") < len(lead) // 2 + len(lead) // 4


def test_no_table_says_nothing_held_out() -> None:
    assert held_out_text(None) == "" and held_out_text(pd.DataFrame()) == ""


def _cpu_run(root) -> None:  # type: ignore[no-untyped-def]
    ops = [{"name": "attn.core", "predicted_s": 1e-3, "measured_s": 2e-3}]
    rows = [{"phase": p, "batch": 1, "context": 64, "mode": "eager", "predicted_s": 1e-3,
             "measured_s": 2e-3, "measured_q20_s": 2e-3, "measured_q80_s": 2e-3, "ops": ops}
            for p in ("prefill", "decode")]  # fmt: skip
    folder = root / "e2e" / "cpu"
    folder.mkdir(parents=True)
    frame = results_frame(rows, {"model": "tiny-llama", "gpu": "cpu"})
    frame.to_csv(folder / "20260101-e2e.csv", index=False)


def test_a_cpu_run_is_labelled_a_cpu_run_and_shows_its_error(app, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import rooflens.validate.store as store

    _cpu_run(tmp_path)
    monkeypatch.setattr(store, "RESULTS_DIR", tmp_path)
    at = app(page="validation", vsection="whole model")
    assert_clean(at)
    picker = at.selectbox(key="ve2e_run")
    assert picker.options == ["tiny-llama · CPU run · 20260101-e2e"]
    assert any(i.value.startswith("A CPU run (validate/results/e2e/cpu)") for i in at.info)
    scenarios = figures(at)[0]["data"][0]["x"][0]
    assert scenarios[0] == "B=1, S=64<br>error -50 %"  # 1 ms predicted / 2 ms measured − 1
