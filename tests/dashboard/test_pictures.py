"""The pictures issue 15 asks for on Explore: the time breakdown by operator class (it adds up to
the step times the model reports, a second route), the latency–throughput curve with the memory
limit and the critical batch marked, the scenario report, and the launch settings."""

from __future__ import annotations

import numpy as np
import pytest
from apptest_helpers import assert_clean, figures, si

from rooflens.dashboard import sweeps
from rooflens.dashboard.breakdown import CLASSES, time_breakdown
from rooflens.dashboard.figures.breakdown import breakdown_figure
from rooflens.dashboard.figures.roofline import roofline_points
from rooflens.dashboard.report import scenario_report_html
from rooflens.dashboard.settings import DEFAULTS
from rooflens.hardware.profiles import get_profile
from rooflens.model.ops.op import kernels_per_call
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.pricing.host import EAGER_LAUNCH_S, step_launches
from rooflens.model.pricing.kinds import kind_terms
from rooflens.model.pricing.roofline import per_launch_s


def test_breakdown_adds_up_to_the_step_times() -> None:
    pred = sweeps.predict(DEFAULTS.with_(profile="ideal"))
    frame = time_breakdown(pred)
    by_phase = frame.groupby("phase")["time_s"].sum()
    assert by_phase["prefill"] == pytest.approx(pred.ttft_s, rel=1e-12)
    assert by_phase["decode"] == pytest.approx(pred.decode.time_s, rel=1e-12)
    rows = frame.set_index(["phase", "class"])
    # 8 × 512 prompt tokens per GEMM: far past H100's ridge (295 FLOP/byte) -> compute-bound;
    # one decode token per sequence at batch 8: weights streamed -> memory-bound; TP 4 -> comm
    assert rows.loc[("prefill", "weights GEMM"), "bound"] == "compute"
    assert rows.loc[("decode", "weights GEMM"), "bound"] == "memory"
    assert rows.loc[("decode", "communication"), "bound"] == "comm"
    assert rows.loc[("decode", "launch floors"), "time_s"] == 0.0  # ideal: no per-call cost


def test_calibrated_launch_floors_are_the_per_call_time() -> None:
    s = DEFAULTS.with_(profile="calibrated")
    pred = sweeps.predict(s)
    profile = get_profile("calibrated", pred.scenario.gpu)
    calls = [p for p in pred.decode.priced if p.op.kind != "comm"]
    # a second route to the floors: the fitted per-launch overhead of each call's kind, once
    # per kernel it launches (split-KV attention: two)
    expected = sum(
        per_launch_s(kind_terms(profile, p.op), pred.scenario.gpu)
        * float(np.mean(kernels_per_call(p.op)))
        * p.op.count
        for p in calls
    )
    frame = time_breakdown(pred).set_index(["phase", "class"])
    assert expected > 0
    assert frame.loc[("decode", "launch floors"), "time_s"] == pytest.approx(expected)
    assert frame.loc[("decode", "launch floors"), "bound"] == "launch"


def test_eager_host_overhead_is_its_own_class_beside_the_launch_floors() -> None:
    sc = make_scenario("gemma-3-1b", "h100-sxm", batch=1, prompt_len=512, output_len=16,
                       profile="calibrated")  # fmt: skip
    pred = run(sc, ["eager-launch"])
    frame = time_breakdown(pred)
    rows = frame.set_index(["phase", "class"])
    (host,) = [p for p in pred.decode.priced if p.op.kind == "host"]
    # the class is the host row: the exposed host time, max(0, launches × 7.5 µs − GPU step)
    assert rows.loc[("decode", "host overhead"), "time_s"] == pytest.approx(np.mean(host.total_s))
    assert rows.loc[("decode", "host overhead"), "bound"] == "host"
    assert rows.loc[("decode", "launch floors"), "time_s"] > 0  # calibrated per-kernel floors
    assert frame.groupby("phase")["time_s"].sum()["decode"] == pytest.approx(pred.tpot_s)
    plain_pred = run(sc)
    # a second route: the whole step is the host's (a 1B model at batch 1 is host-bound), so
    # the class is launches × 7.5 µs less the graph-captured step
    # (host-bound, the split decode attention runs unsplit: the table's own launches and GPU time)
    table = [p for p in pred.decode.priced if p.op.kind != "host"]
    launches = np.mean(step_launches(p.op for p in table))
    device = np.mean(sum(p.total_s for p in table))
    assert device >= plain_pred.tpot_s  # unsplit costs the GPU more than the graph's split
    assert rows.loc[("decode", "host overhead"), "time_s"] == pytest.approx(
        launches * EAGER_LAUNCH_S - device
    )
    plain = time_breakdown(plain_pred).set_index(["phase", "class"])
    assert plain.loc[("decode", "host overhead"), "time_s"] == 0.0  # graph-captured default
    drawn = [t["name"] for t in breakdown_figure(frame).to_dict()["data"]]
    assert drawn == list(CLASSES)  # an eager step draws its host-overhead segment


def test_the_host_row_is_listed_off_the_roofline_with_its_reason() -> None:
    sc = make_scenario(
        "gemma-3-1b", "h100-sxm", batch=1, prompt_len=512, output_len=16, profile="ideal"
    )  # both steps host-bound against the ideal GPU time
    placed, skipped = roofline_points(run(sc, ["eager-launch"]).ops_frame())
    assert "host" not in set(placed["name"])
    host = skipped[skipped["name"] == "host"]
    assert set(host["phase"]) == {"prefill", "decode"}  # both steps are host-bound
    assert host["reason"].str.startswith("host launch overhead").all()


def test_explore_draws_the_breakdown_and_the_curve(app) -> None:  # type: ignore[no-untyped-def]
    at = app()
    assert_clean(at)
    figs = figures(at)
    breakdown = next(f for f in figs if f["layout"].get("barmode") == "stack")
    # the default step is graph-captured: no host-overhead segment
    assert [t["name"] for t in breakdown["data"]] == [c for c in CLASSES if c != "host overhead"]
    shares = np.sum([t["x"] for t in breakdown["data"]], axis=0)
    assert shares == pytest.approx([100.0, 100.0])  # each bar is its whole step
    curve = next(f for f in figs if "Latency against throughput" in f["layout"]["title"]["text"])
    frame = sweeps.batch_sweep(DEFAULTS)
    crossover = sweeps.decode_crossover(frame)
    assert crossover is not None
    notes = " ".join(a["text"] for a in curve["layout"]["annotations"])
    assert f"critical batch ≈ {crossover[1]:,}" in notes and "memory limit" in notes
    tpot = next(t for t in curve["data"] if t["name"] == "TPOT")
    assert tpot["y"] == pytest.approx((frame["tpot_s"] * 1e3).tolist())
    assert tpot["x"] == pytest.approx(frame["output_tokens_per_s"].tolist())
    assert not at.code  # launch settings only when asked for
    at.toggle(key="deploy").set_value(True).run()
    codes = [c.value for c in at.code]
    assert any(c.startswith("vllm serve") and "--tensor-parallel-size 4" in c for c in codes)


def test_report_is_one_offline_page_with_the_figures() -> None:
    pred = sweeps.predict(DEFAULTS)
    fig = breakdown_figure(time_breakdown(pred))
    page = scenario_report_html("rooflens: test", "ideal profile", [], [fig, fig], ["a note"])
    assert page.count("<script") >= 2 and page.count("plotly.js") >= 1
    assert "weights GEMM" in page and "a note" in page


def test_gpus_side_by_side_match_each_gpus_own_prediction(app) -> None:  # type: ignore[no-untyped-def]
    at = app(page="compare", cmp_gpus=["h100-sxm", "b200", "dgx-a100"])
    assert_clean(at)
    table = at.table[0].value
    assert list(table["GPU / system"]) == ["h100-sxm", "b200", "dgx-a100"]
    for _, row in table.iterrows():
        direct = sweeps.predict(DEFAULTS.with_(gpu=row["GPU / system"]))
        assert si(row["TPOT"]) == pytest.approx(direct.tpot_s, rel=5e-3)
        assert si(row["throughput"]) == pytest.approx(direct.output_tokens_per_s, rel=5e-3)
        bounds = f"{direct.prefill.bound} / {direct.decode.bound}"
        assert row["bound (prefill / decode)"] == bounds
    links = " ".join(c.value for c in at.caption if c.value.startswith("Interconnect"))
    assert "dgx-a100: nvlink3 in a node" in links  # the DGX A100's own link
    fig = figures(at)[0]
    assert fig["data"][0]["x"] == ["h100-sxm", "b200", "dgx-a100"]
    assert len(fig["data"]) == 4  # TTFT, TPOT, tokens/s, $ per M tokens


def test_sidebar_states_the_profile_and_the_links(app) -> None:  # type: ignore[no-untyped-def]
    at = app(gpu="dgx-h100", tp="8", pp="2")
    assert_clean(at)
    said = " ".join(c.value for c in at.sidebar.caption)
    assert "In force: **calibrated** profile" in said and "Same default as the capacity" in said
    assert "TP 8 inside one node over nvlink4" in said
    assert "PP 2 across nodes over infiniband-ndr" in said
    ideal = app(profile="ideal")
    assert "In force: **ideal** profile" in " ".join(c.value for c in ideal.sidebar.caption)


def test_validation_join_is_kept_on_disk(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from rooflens.dashboard import validation_data as compute

    monkeypatch.setattr(compute, "CACHE_DIR", tmp_path)
    calls = []
    first = compute._on_disk("x.pkl", lambda: calls.append(1) or {"a": 1})
    again = compute._on_disk("x.pkl", lambda: calls.append(1) or {"a": 2})
    assert first == again == {"a": 1} and calls == [1]  # made once, then read back
    (tmp_path / "x.pkl").write_bytes(b"not a pickle")
    assert compute._on_disk("x.pkl", lambda: {"a": 3}) == {"a": 3}  # damaged: recomputed
    (tmp_path / "x.pkl").chmod(0o666)  # anyone could have planted it: never unpickled
    assert compute._on_disk("x.pkl", lambda: {"a": 4}) == {"a": 4}
    key = compute._join_key(compute.SHARED_SETS)
    assert key == compute._join_key(compute.SHARED_SETS) != compute._join_key("cpu")
