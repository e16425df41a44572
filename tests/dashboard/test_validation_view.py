"""The Validation page's cached view (dashboard/validation_data.py `compact`) against the uncached
route, the full `validate.compare.join`: the same statistics on every row, figures drawn only
from real rows of the join, and a disk cache that keeps a bounded number of files."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.dashboard import validation_data as vd
from rooflens.validate.compare import join, summarize

PROFILES = ("ideal", "calibrated")


@pytest.fixture(scope="module")
def joined(measured_dir) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """A few thousand rows of every GPU and class of the shared sets, joined (a second route)."""
    from rooflens.validate.datasets import load_kernels

    measured = load_kernels(measured_dir)
    part = measured.groupby(["gpu", "op"], group_keys=False).head(400)
    return join(part, PROFILES)


@pytest.mark.slow
def test_summary_of_the_view_is_the_summary_of_the_full_join(joined) -> None:  # type: ignore[no-untyped-def]
    view = vd.compact(joined, PROFILES)
    gpus = tuple(sorted(joined["gpu"].unique()))
    for ops in (tuple(sorted(joined["op"].unique())), ("gemm",), ("attention_decode", "norm")):
        full = summarize(vd.picked(joined, gpus, ops), profiles=PROFILES)
        cached = summarize(vd.picked(view.stats, gpus, ops), profiles=PROFILES)
        pd.testing.assert_frame_equal(cached, full)
    # the page's tiles: rows, within ±20 %, cache effects
    assert len(view.stats) == len(joined)
    assert int(view.stats["cache_effect"].sum()) == int(joined["cache_effect"].sum())
    for p in PROFILES:
        kept = joined[~joined["below_ideal"]]
        expect = (kept[f"error_{p}"].abs() <= 0.2).mean()
        got = view.stats.loc[~view.stats["below_ideal"], f"error_{p}"].abs().le(0.2).mean()
        assert got == expect


def test_figures_draw_real_rows_at_most_a_sample_per_class(joined) -> None:  # type: ignore[no-untyped-def]
    view = vd.compact(joined, PROFILES)
    shown = view.shown
    kept = joined[~joined["below_ideal"]]
    assert not shown["below_ideal"].any()  # rows faster than the roofline are not drawn
    counts = shown.groupby(["gpu", "op"]).size()
    expected = kept.groupby(["gpu", "op"]).size().clip(upper=vd.SHOWN_PER_GROUP)
    pd.testing.assert_series_equal(counts.sort_index(), expected.sort_index())
    # every drawn point is a row of the join with the same measured and predicted times
    keys = ["gpu", "op", "measured_s", "predicted_ideal_s", "predicted_calibrated_s"]
    merged = shown[keys].merge(kept[keys].drop_duplicates(), on=keys, how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    # a class's sample does not depend on which other classes are picked
    gpus = tuple(sorted(joined["gpu"].unique()))
    alone = vd.compact(joined[joined["op"] == "gemm"], PROFILES).shown
    both = vd.picked(shown, gpus, ("gemm",))
    assert len(alone) == len(both)


def test_svg_figures_keep_every_point(joined) -> None:  # type: ignore[no-untyped-def]
    from rooflens.dashboard.figures.validation import as_svg
    from rooflens.validate.report import parity_figure

    shown = vd.compact(joined, PROFILES).shown
    gl = parity_figure(shown, PROFILES)
    svg = as_svg(gl)
    assert {t.type for t in gl.data} == {"scattergl", "scatter"}
    assert {t.type for t in svg.data} == {"scatter"}
    drawn = [{**t, "type": "scatter"} for t in gl.to_dict()["data"]]
    assert svg.to_dict()["data"] == drawn  # only the trace type differs


def test_disk_cache_keeps_the_newest_files_of_a_kind(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    monkeypatch.setattr(vd, "CACHE_DIR", tmp_path)
    for i in range(vd.KEEP_FILES + 3):
        vd._on_disk(f"view-{i}.pkl", lambda i=i: {"i": i}, kind="view-")
        os.utime(tmp_path / f"view-{i}.pkl", (i, i))  # distinct ages, oldest first
    vd._on_disk("other.pkl", lambda: 1)
    left = sorted(p.name for p in tmp_path.glob("view-*.pkl"))
    assert len(left) == vd.KEEP_FILES
    assert vd._on_disk(f"view-{vd.KEEP_FILES + 2}.pkl", lambda: None) == {"i": vd.KEEP_FILES + 2}
    assert (tmp_path / "other.pkl").is_file()  # another kind is left alone


def test_files_of_earlier_versions_are_pruned_when_a_view_is_written(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the 110 MB joins, figures and summaries earlier versions wrote (here and in /tmp) go;
    # the current views and anything else stay
    cache, old_tmp = tmp_path / "cache", tmp_path / "tmp-cache"
    old_tmp.mkdir()
    monkeypatch.setattr(vd, "CACHE_DIR", cache)
    monkeypatch.setattr(vd, "LEGACY_DIRS", (cache, old_tmp))
    vd._on_disk("validation-view-a-1.pkl", lambda: 1, kind="validation-view-a-")
    legacy = [cache / "validation-0d049caa6b4b595749e419c6.pkl",
              cache / "validation-figures-0d04-gemm.pkl",
              old_tmp / "validation-summary-3b55-all.pkl"]  # fmt: skip
    kept = [cache / "validation-view-a-1.pkl", cache / "notes.pkl", old_tmp / "other.pkl"]
    for path in [*legacy, *kept[1:]]:
        path.write_bytes(b"x")
    vd._on_disk("validation-view-a-2.pkl", lambda: 2, kind="validation-view-a-")
    assert [p for p in legacy if p.exists()] == []
    assert all(p.exists() for p in kept) and (cache / "validation-view-a-2.pkl").exists()
