"""Optimizations: two stacks side by side, each a waterfall from the naive baseline to the full
stack (`model.waterfall`, what `rooflens compare --stack` prints), plus what every optimization
in the sidebar buys on its own (`model.contributions`, leave-one-out)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context, url_state
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.waterfall import (
    WATERFALL_METRICS,
    stage_values,
    waterfall_figure,
    waterfall_range,
)
from rooflens.dashboard.views.common import fit_warning, scenario_line
from rooflens.hardware.errors import RooflensError
from rooflens.io.units import fmt_bytes, fmt_quantity, fmt_time
from rooflens.model.analysis.waterfall import DEFAULT_STACK
from rooflens.model.optimizations import registry

# The naive baseline: every default of the operator table switched off, turned back on in this
# order (KV cache, FlashAttention, Flash-Decoding, paged KV). model.waterfall.DEFAULT_STACK
# predates `unsplit-decode`; a switch-off the registry lacks is left out.
NAIVE = ("no-kv-cache", "eager-attention", "unsplit-decode", "contiguous-kv")


def naive_stack() -> list[str]:
    known = registry()
    return [name for name in NAIVE if name in known] or list(DEFAULT_STACK)


STACKS = {
    "stack_a": ("Stack A", ",".join(naive_stack())),
    "stack_b": ("Stack B", ",".join([*naive_stack(), "fusion", "quant:scheme=awq"])),
}


def render(ctx: Context) -> None:
    s = ctx.settings
    pred = compute.prediction(s)
    st.header("Optimizations")
    scenario_line(ctx, pred)
    fit_warning(ctx, pred)
    offs = [n for n, cls in registry().items() if getattr(cls, "switches_off", "")]
    others = [n for n in registry() if n not in offs]
    st.caption(
        "Each stack lists optimizations in the order they are added (`NAME[:k=v,...]`, "
        "comma-separated, as `rooflens compare --stack`). The switch-offs in it ("
        + ", ".join(offs)
        + ") together form the naive baseline and are turned back on one by one, in the order "
        "given; then the others are added. The sidebar's optimizations are in every stage. "
        "Others known: " + ", ".join(others) + "."
    )
    metric_key = st.selectbox(
        "Metric",
        list(WATERFALL_METRICS),
        format_func=lambda k: WATERFALL_METRICS[k].label,
        key="waterfall_metric",
    )
    metric = WATERFALL_METRICS[metric_key]
    texts = {
        key: column.text_input(title, key=url_state(ctx, key, default))
        for column, (key, (title, default)) in zip(st.columns(2), STACKS.items(), strict=True)
    }
    results: dict[str, list[dict[str, Any]] | str] = {}
    for key, text in texts.items():
        others = [t for k, t in texts.items() if k != key]
        try:  # a stack the other one extends reuses the other's stages
            results[key] = compute.waterfall(s, text, others[0])
        except RooflensError as exc:
            results[key] = str(exc)
    values = [v for r in results.values() if isinstance(r, list) for v in stage_values(r, metric)]
    y_range = waterfall_range(values)  # one axis for both stacks, so their bars compare
    for column, (key, result) in zip(st.columns(2), results.items(), strict=True):
        with column:
            title = STACKS[key][0]
            if isinstance(result, str):
                st.error(f"{title}: {result}")
                continue
            overridden = compute.stack_overrides(s, texts[key])
            if overridden:
                st.caption(
                    f"{title} lists {', '.join(compute.opt_name(o) for o in overridden)} "
                    f"itself: its setting wins over the sidebar's "
                    f"({', '.join(overridden)}), which is left out of this stack's stages."
                )
            fig = waterfall_figure(result, metric, f"{title}: {metric.label}", y_range)
            show(fig, key=f"waterfall_{key}")
            download_row(f"rooflens-waterfall-{key}", frame=pd.DataFrame(result), fig=fig)
    st.caption(
        "Bar labels: the metric after each stage, then how many times better it is than the "
        "stage before (green: better, red: worse); the last bar, the full stack against the "
        "naive baseline."
    )
    for key, result in results.items():
        if isinstance(result, list):
            st.subheader(f"{STACKS[key][0]}, stage by stage")
            tables.show(_stages_table(result))
    if s.opts:
        st.subheader("What each sidebar optimization buys (leave-one-out)")
        tables.show(_effects_table(compute.contributions(s)))


def _stages_table(stages: list[dict[str, Any]]) -> pd.DataFrame:
    rows: list[dict[str, str]] = []
    for stage in stages:
        at_max = stage["max_batch_output_tokens_per_s"]
        speedup = stage["tpot_speedup_vs_previous"]
        rows.append(
            {
                "stage": stage["stage"],
                "TTFT": fmt_time(stage["ttft_s"]),
                "TPOT": fmt_time(stage["tpot_s"]),
                "TPOT vs previous": "—" if speedup is None or not rows else f"{speedup:,.2f}×",
                "throughput": fmt_quantity(stage["output_tokens_per_s"], "tokens/s"),
                "memory per GPU": fmt_bytes(stage["memory_bytes"])
                + ("" if stage["fits"] else " (over)"),
                "max batch": fmt_quantity(stage["max_batch"], "sequences"),
                "throughput at max batch": "—"
                if at_max is None
                else fmt_quantity(at_max, "tokens/s"),
            }
        )
    return pd.DataFrame(rows)


def _effects_table(effects: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for e in effects:
        if "error" in e:
            rows.append({"optimization": e["label"], "TPOT speedup": e["error"]})
            continue
        tpot, ttft = e["tpot_s"]["speedup"], e["ttft_s"]["speedup"]
        gain = e["max_batch_output_tokens_per_s"]["gain"]
        rows.append(
            {
                "optimization": e["label"],
                "TPOT speedup": "—" if tpot is None else f"{tpot:,.2f}×",
                "TTFT speedup": "—" if ttft is None else f"{ttft:,.2f}×",
                "memory saved per GPU": fmt_bytes(e["memory_bytes"]["saved_bytes"]),
                "max batch (with / without)": f"{e['max_batch']['with']:,} / "
                f"{e['max_batch']['without']:,} sequences",
                "throughput at max batch": "—" if gain is None else f"{gain:,.2f}×",
            }
        )
    return pd.DataFrame(rows)
