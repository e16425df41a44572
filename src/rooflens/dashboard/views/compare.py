"""GPUs side by side: the sidebar's scenario on 2–4 GPUs or systems at once, as one table
(memory, TTFT, TPOT, max batch, tokens/s, $ per million tokens, the bound of each phase) and one
chart. Each column is the same `model/` prediction the Explore page shows for that GPU."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context, url_state
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.compare import compare_figure
from rooflens.dashboard.headline import USD_PER_M_LABEL, fmt_usd_per_m, usd_per_million_tokens
from rooflens.dashboard.labels import precision_text
from rooflens.dashboard.views.common import fit_warning
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import gpu_ids
from rooflens.hardware.systems import system_ids
from rooflens.io.units import fmt_bytes, fmt_quantity, fmt_time
from rooflens.model.predict.scenario import priced_by

DEFAULT_OTHERS = ("h200", "b200", "mi300x")
MAX_PICKED = 4


def render(ctx: Context) -> None:
    s = ctx.settings
    st.header("GPUs side by side")
    fit_warning(ctx, compute.prediction(s))
    options = [*gpu_ids(), *system_ids()]
    default = [s.gpu] if s.gpu in options else []
    default += [g for g in DEFAULT_OTHERS if g in options and g != s.gpu][: 3 - len(default)]
    picked = st.multiselect("GPUs or systems (2–4)", options, max_selections=MAX_PICKED,
                            key=url_state(ctx, "cmp_gpus", default))  # fmt: skip
    st.caption(
        f"The sidebar's scenario on each: {s.n_gpus} GPU(s) (TP {s.tp} × PP {s.pp}), batch "
        f"{s.batch:,}, prompt {s.prompt_len:,} + output {s.output_len:,} tokens, "
        f"{precision_text(s)}, {priced_by(s.profile, s.engine)}. Prices: the sidebar's, else the "
        "listed ones."
    )
    if len(picked) < 2:
        st.info("Pick at least two GPUs or systems.")
        return
    rows, problems = [], []
    for gpu in picked:
        try:
            rows.append(_row(s.with_(gpu=gpu), gpu))
        except RooflensError as exc:
            problems.append(f"{gpu}: {exc}")
    for problem in problems:
        st.warning(problem)
    if not rows:
        return
    frame = pd.DataFrame(rows)
    fig = compare_figure(frame)
    show(fig, key="compare_chart")
    tables.show(_table(frame))
    st.caption(
        "Interconnect: "
        + "; ".join(
            f"{g}: {link}" for g, link in zip(frame["label"], frame["interconnect"], strict=True)
        )
        + "."
    )
    download_row("rooflens-gpus", frame=frame, fig=fig)


def _row(s, gpu: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    pred = compute.prediction(s)
    sc, mem = pred.scenario, pred.memory
    price, _ = compute.gpu_price(s, sc.gpu.id)
    return {
        "label": gpu,
        "gpu": sc.gpu.name,
        "memory_total_bytes": mem.total_bytes,
        "capacity_bytes": mem.capacity_bytes,
        "fits": mem.fits,
        "ttft_s": pred.ttft_s,
        "tpot_s": pred.tpot_s,
        "max_batch": mem.max_batch,
        "output_tokens_per_s": pred.output_tokens_per_s,
        "usd_per_million_tokens": usd_per_million_tokens(
            price, sc.parallel.n_gpus, pred.output_tokens_per_s
        ),
        "prefill_bound": pred.prefill.bound,
        "decode_bound": pred.decode.bound,
        "interconnect": f"{sc.system.intra_node.name} in a node"
        + (f", {sc.system.inter_node.name} between nodes" if sc.system.inter_node else ""),
    }


def _memory(total: float, capacity: float, fits: bool) -> str:
    return f"{fmt_bytes(total)} of {fmt_bytes(capacity)}" + ("" if fits else " (over)")


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "GPU / system": frame["label"],
            "memory per GPU": [
                f"{fmt_bytes(m)} of {fmt_bytes(c)}" + ("" if f else " (over)")
                for m, c, f in zip(
                    frame["memory_total_bytes"], frame["capacity_bytes"], frame["fits"], strict=True
                )
            ],
            "TTFT": [fmt_time(v) for v in frame["ttft_s"]],
            "TPOT": [fmt_time(v) for v in frame["tpot_s"]],
            "max batch": [fmt_quantity(v, "sequences") for v in frame["max_batch"]],
            "throughput": [fmt_quantity(v, "tokens/s") for v in frame["output_tokens_per_s"]],
            USD_PER_M_LABEL: [fmt_usd_per_m(v) for v in frame["usd_per_million_tokens"]],
            "bound (prefill / decode)": frame["prefill_bound"] + " / " + frame["decode_bound"],
        }
    )
