"""Explore: the headline numbers of one scenario, with deltas against the pinned baseline, the
two phases, the model and GPU facts, and every operator's cost."""

from __future__ import annotations

from functools import partial

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context
from rooflens.dashboard.deploy_text import command_text, yaml_text
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.breakdown import breakdown_figure
from rooflens.dashboard.figures.curve import curve_figure
from rooflens.dashboard.headline import e2e_text, headline, ttft_text
from rooflens.dashboard.labels import describe
from rooflens.dashboard.numbers import fmt_sig
from rooflens.dashboard.report import scenario_report_html
from rooflens.dashboard.settings import Settings
from rooflens.dashboard.sweeps import decode_crossover
from rooflens.dashboard.views.common import baseline_prediction, fit_warning, scenario_line
from rooflens.io.units import fmt_bytes, fmt_flops, fmt_time
from rooflens.model.analysis.launch import ENGINES, check, launch_settings
from rooflens.model.predict.steps import Prediction
from rooflens.model.specs.params import count_params

METRICS_PER_ROW = 3


def render(ctx: Context) -> None:
    s = ctx.settings
    pred = compute.prediction(s)
    base = baseline_prediction(ctx)
    st.header("Explore")
    scenario_line(ctx, pred)
    fit_warning(ctx, pred)
    metrics = headline(pred, *compute.gpu_price(s, pred.scenario.gpu.id))
    base_metrics = {}
    if base is not None and ctx.baseline is not None:
        base_price = compute.gpu_price(ctx.baseline, base.scenario.gpu.id)
        base_metrics = {m.key: m for m in headline(base, *base_price)}
    for start in range(0, len(metrics), METRICS_PER_ROW):
        row = metrics[start : start + METRICS_PER_ROW]
        for column, m in zip(st.columns(METRICS_PER_ROW), row, strict=False):
            column.metric(
                m.label,
                m.text,
                delta=m.delta_text(base_metrics.get(m.key)),
                delta_color="inverse" if m.lower_is_better else "normal",
                help=m.help,
                border=True,
            )
    st.caption(e2e_text(pred) + (" · deltas against the pinned baseline" if base else ""))
    st.caption(ttft_text(pred))
    notes = compute.notes(s)
    for note in notes:
        st.info(note)
    breakdown = breakdown_figure(compute.time_breakdown(s))
    show(breakdown, key="explore_breakdown")
    st.caption(
        "Each bar is one step (prefill = TTFT; one decode step = TPOT before speculation), "
        "split by operator class; a segment's bound is what limits most of its time. Host "
        f"overhead is the {pred.scenario.profile} profile's fixed time per kernel call"
        + (" (none under ideal)." if pred.scenario.profile == "ideal" else ".")
    )
    curve = _curve(s, pred)
    if curve:
        show(curve[0], key="explore_curve")
        st.caption(curve[1])
    _tables(s, pred)
    title = f"rooflens: {describe(s)}"
    report = partial(scenario_report_html, title, f"{pred.scenario.profile} profile", metrics,
                     [breakdown, *([curve[0]] if curve else [])], notes)  # fmt: skip
    st.download_button("⬇ Scenario report (HTML)", report, file_name="rooflens-report.html",
                       mime="text/html", on_click="ignore", key="dl-report")  # fmt: skip


def _tables(s: Settings, pred: Prediction) -> None:
    """The phases, the model and GPU facts, every operator, downloads and launch settings."""
    st.subheader("Phases")
    st.table(_phases(pred))
    with st.expander("Model and GPU"):
        st.table(_facts(pred))
    st.subheader("Operators")
    frame = compute.ops_frame(s)
    tables.show(tables.ops_table(frame))
    st.caption(
        "Calls per step: how many times the operator runs in one forward step (once per layer "
        "that has it, or once). Share of step: its part of the phase's step time (TTFT for "
        "prefill, one TPOT for decode). The CSV keeps SI units (FLOP, bytes, seconds)."
    )
    download_row(  # the JSON is built only when its button is clicked
        "rooflens-prediction", frame=frame, data=lambda: {"settings": s.to_dict(), **pred.to_dict()}
    )
    _deploy(s, pred)


def _deploy(s: Settings, pred: Prediction) -> None:
    """The scenario as launch settings for vLLM, SGLang and TensorRT-LLM, to copy."""
    # Built only when asked for: three highlighted code blocks cost a redraw on every rerun.
    if st.toggle("Deploy: launch settings for vLLM, SGLang and TensorRT-LLM", key="deploy"):
        seqs = pred.memory.max_batch
        if seqs < 1:
            st.warning("Nothing to deploy: not one sequence fits at this context.")
            return
        st.caption(
            f"Max concurrent sequences = {seqs:,}, the largest batch that fits at this context "
            "(the engines' own memory headroom differs a little). Each flag is checked against "
            "the engine's documented flags (model/analysis/launch.py, which cites the docs pages)."
        )
        sc = compute.scenario(s)
        for tab, engine in zip(st.tabs([e.name for e in ENGINES.values()]), ENGINES, strict=True):
            with tab:
                settings = launch_settings(engine, sc, s.opts, seqs)
                st.code(command_text(settings), language="bash")
                if settings.config:
                    st.caption("extra-llm-api-options.yaml")
                    st.code(yaml_text(settings.config), language="yaml")
                for note in [*settings.notes, *check(settings)]:
                    st.caption(f"Note: {note}.")
                st.caption(f"Flags: {ENGINES[engine].docs}")


def _curve(s: Settings, pred: Prediction) -> tuple[go.Figure, str] | None:
    """The latency–throughput curve over the batch sweep (cached: moving the batch is free),
    and its caption."""
    frame = compute.batch_sweep(s)
    if frame.empty:
        return None
    crossover = decode_crossover(frame)
    fig = curve_figure(frame, crossover, pred.memory.max_batch, s.batch)
    critical = (
        f"decode turns compute-bound at batch ≈ {crossover[1]:,} (the critical batch)"
        if crossover
        else "decode stays on one side of the roofline over the sweep"
    )
    return fig, (
        f"Batch 1 to {int(frame['batch'].max()):,}: {critical}; memory holds "
        f"{pred.memory.max_batch:,} sequences at this context (hollow points do not fit)."
    )


def _phases(pred: Prediction) -> pd.DataFrame:
    rows = []
    for phase, label in ((pred.prefill, "prefill (one step = TTFT)"), (pred.decode, "decode")):
        intensity = phase.flops / phase.bytes if phase.bytes else float("nan")
        rows.append(
            {
                "phase": label,
                "time per step": fmt_time(phase.time_s),
                "FLOPs per step": fmt_flops(phase.flops),
                "bytes per step": fmt_bytes(phase.bytes),
                "intensity": fmt_sig(intensity, "FLOP/byte"),
                "bound": phase.bound,
            }
        )
    return pd.DataFrame(rows).set_index("phase")


def _facts(pred: Prediction) -> pd.DataFrame:
    sc = pred.scenario
    m, g = sc.model, sc.gpu
    pc = count_params(m)
    rows = [
        ("parameters (total / active)", f"{pc.total / 1e9:,.2f} B / {pc.active / 1e9:,.2f} B"),
        ("layers, d_model, heads (q / kv)",
         f"{m.n_layers} layers, {m.d_model:,} wide, {m.n_heads} / {m.n_kv_heads} heads"),
        ("attention, max context", f"{m.attention}, {m.max_context:,} tokens"),
        ("GPU memory, HBM bandwidth",
         f"{fmt_bytes(g.memory_bytes)}, {g.hbm_bytes_per_s / 1e12:.2f} TB/s"),
        ("bf16 peak, ridge point",
         f"{g.peak('bf16') / 1e12:,.0f} TFLOP/s, {g.ridge_point('bf16'):,.0f} FLOP/byte"),
        ("GPUs (TP × PP)", f"{sc.parallel.tp} × {sc.parallel.pp} = {sc.parallel.n_gpus} GPUs"),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["", "value"]).set_index("")
