"""Scaling: latency and throughput against batch (decode's memory→compute crossover and the
memory limit marked), against context length, and against TP degree."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context, url_state
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.scaling import batch_figure, context_figure, tp_figure
from rooflens.dashboard.settings import Settings
from rooflens.dashboard.sweeps import decode_crossover
from rooflens.dashboard.views.common import fit_warning, scenario_line
from rooflens.io.units import fmt_quantity, fmt_time

SECTIONS = ("batch", "context length", "TP degree")


def render(ctx: Context) -> None:
    s = ctx.settings
    pred = compute.prediction(s)
    st.header("Scaling")
    scenario_line(ctx, pred)
    fit_warning(ctx, pred)
    # One sweep at a time: each is a dozen full pipeline runs, so a rerun stays interactive.
    shown = st.radio("Sweep against", SECTIONS, horizontal=True,
                     key=url_state(ctx, "sweep", SECTIONS[0]))  # fmt: skip
    if shown == "batch":
        _batch(s, pred.memory.max_batch)
    elif shown == "context length":
        frame = compute.context_sweep(s)
        show(context_figure(frame, s.prompt_len), key="scaling_context")
        st.caption(
            f"Prompt from {frame['prompt_len'].min():,} to {frame['prompt_len'].max():,} tokens "
            f"(the longest this model holds with {s.output_len:,} output tokens), "
            f"batch {s.batch:,} sequences."
        )
        download_row("rooflens-context-sweep", frame=frame)
    else:
        frame = compute.tp_sweep(s)
        if frame.empty:
            st.warning("no TP degree in 1–16 divides this model's heads")
        else:
            show(tp_figure(frame, s.tp), key="scaling_tp")
            st.caption(_tp_caption(frame))
            download_row("rooflens-tp-sweep", frame=frame)


def _batch(s: Settings, max_batch: int) -> None:
    frame = compute.batch_sweep(s)
    crossover = decode_crossover(frame)
    show(batch_figure(frame, crossover, max_batch, s.batch), key="scaling_batch")
    if crossover is None:
        bound = frame["decode_bound"].iloc[-1]
        text = f"Decode stays {bound}-bound from 1 to {frame['batch'].max():,} sequences."
    else:
        text = (
            f"Decode turns compute-bound between batch {crossover[0]:,} and {crossover[1]:,} "
            "sequences (the step time's largest share moves from memory- to compute-bound "
            "operators)."
        )
    fits = frame[frame["fits"]]
    limit = (
        f" Memory allows up to {max_batch:,} sequences at this context (hollow points do not fit)."
        if len(fits)
        else " No batch fits in memory at this context (hollow points)."
    )
    st.caption(text + limit)
    download_row("rooflens-batch-sweep", frame=frame)


def _tp_caption(frame: pd.DataFrame) -> str:
    """The TP degrees the heads allow, and the best of those that fit in memory: a degree that
    does not fit is never recommended (issue 15 item 4)."""
    allowed = f"TP degrees the heads allow: {', '.join(str(t) for t in frame['tp'])}."
    fits = frame[frame["fits"]]
    if fits.empty:
        return (
            f"{allowed} None of them fits in memory at this batch and context (hollow points): "
            "see the advice above."
        )
    best = fits.iloc[int(fits["output_tokens_per_s_per_gpu"].to_numpy().argmax())]
    fastest = fits.iloc[int(fits["tpot_s"].to_numpy().argmin())]
    unfit = [str(t) for t in frame.loc[~frame["fits"], "tp"]]
    skipped = f" TP {', '.join(unfit)} does not fit in memory (hollow points)." if unfit else ""
    return (
        f"{allowed}{skipped} Of those that fit: lowest TPOT at TP {int(fastest['tp'])} "
        f"({fmt_time(fastest['tpot_s'])}); most tokens/s per GPU at TP {int(best['tp'])} "
        f"({fmt_quantity(best['output_tokens_per_s_per_gpu'], 'tokens/s')} per GPU)."
    )
