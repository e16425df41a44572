"""Rendering a plan: terminal (rich), markdown, CSV (the kept configurations) and a
self-contained HTML report with the Pareto plot and the verdict counts (plotly, its JavaScript
inlined once)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from rooflens.io.units import fmt_time
from rooflens.model.planner.check import roles
from rooflens.model.planner.explain import engine_id
from rooflens.model.planner.grid import OPT_SEP
from rooflens.model.planner.pareto import thinning_rule
from rooflens.model.planner.plan import Plan
from rooflens.model.predict.scenario import priced_by_engines
from rooflens.model.specs.quant import precision_label

COLUMNS = ["gpu", "engine", "GPUs", "layout", "precision", "scheduler", "batch", "TTFT p99",
           "TPOT p99", "tok/s/GPU", "tok/s/user", "$/h", "$/M tok"]  # fmt: skip


def _marks(opts: object) -> str:
    """' +name' per optimization of a row (names only; parameters are in the JSON/CSV)."""
    return "".join(f" +{o.split(':')[0]}" for o in str(opts or "").split(OPT_SEP) if o)


def shared_opts(plan: Plan) -> str | None:
    """The optimizations every row shown runs, when they all run the same (else None)."""
    shown = {str(r.get("opts") or "") for _, r in _rows(plan)}
    shown |= {str(s["config"].get("opts") or "") for s in plan.simulations}
    return shown.pop() if len(shown) == 1 else None


def _cells(r: dict[str, Any], mark: bool = True) -> list[str]:
    unit = f"TP{r['tp']}" + (f"×EP{r['ep']}" if r["ep"] > 1 else "")
    unit += f"×PP{r['pp']}" if r["pp"] > 1 else ""
    layout = (
        f"{r['prefill_replicas']}P+{r['decode_replicas']}D × {unit}"
        if r["mode"] == "disaggregated"
        else f"{r['replicas']} × {unit}"
    )
    layout += _marks(r.get("opts")) if mark else ""
    gpu = r["gpu"]
    if r.get("prefill_gpu") not in (None, "", gpu):  # mixed pair: prefill GPU (TP) → decode
        gpu = f"{r['prefill_gpu']} TP{r['prefill_tp']} → {gpu}"
    return [
        gpu, engine_id(r), str(r["n_gpus"]), layout,
        precision_label(r["weight_dtype"], r["act_dtype"], r["kv_dtype"], r.get("scheme", "")),
        r["mode"],
        str(r["batch"]), fmt_time(r["ttft_p99_s"]), fmt_time(r["tpot_p99_s"]),
        f"{r['tokens_per_s_per_gpu']:,.0f}", f"{r['tokens_per_s_per_user']:,.1f}",
        f"{r['cost_per_hour']:,.2f}", f"{r['cost_per_million_tokens']:,.3f}",
    ]  # fmt: skip


def _rows(plan: Plan, limit: int = 12) -> list[tuple[str, dict[str, Any]]]:
    out = [("recommended", plan.recommended)] if plan.recommended else []
    step = max(1, len(plan.pareto) // limit)
    out += [("pareto", r) for r in plan.pareto[::step][:limit]]
    return out


def _sim_cells(s: dict[str, Any], mark: bool = True) -> list[str]:
    c = s["config"]
    unit = f"TP{c['tp']}" + (f" EP{c['ep']}" if c.get("ep", 1) > 1 else "")
    unit += _marks(c.get("opts")) if mark else ""
    gpu = c["gpu"] if c.get("prefill_gpu") in (None, "", c["gpu"]) else (
        f"{c['prefill_gpu']} → {c['gpu']}")  # fmt: skip
    return [roles(s), f"{c['n_gpus']} × {gpu} {unit} {engine_id(c)} {c['mode']} batch "
            f"{c['batch']}", precision_label(c["weight_dtype"], c["act_dtype"], c["kv_dtype"]),
            fmt_time(s["ttft_p50_s"]), fmt_time(s["ttft_p99_s"]), fmt_time(s["tpot_p50_s"]),
            fmt_time(s["tpot_p99_s"]), "; ".join(s["optimistic"]) or "—"]  # fmt: skip


SIM_COLUMNS = ["role", "configuration", "precision", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
               "analytical optimistic?"]  # fmt: skip


def header(plan: Plan) -> str:
    w = plan.workload
    load = f"{w.rate_per_s:.4g} requests/s"
    if w.trace is not None:
        load += f" (trace {w.trace.path}: {w.trace.n:,} requests over {w.trace.span_s:,.1f} s)"
    return (
        f"Capacity plan: {plan.space.model} at {load}, prompts "
        f"{w.prompt.label()}, outputs {w.output.label()}; {w.slo.label()} "
        f"({priced_by_engines(plan.space.profile, plan.space.engines)})"
    )


def sim_title(plan: Plan) -> str:
    arrivals = "the trace's arrivals" if plan.workload.trace else "Poisson arrivals"
    return f"Simulation check (one replica, {arrivals}, seeded)"


def footer(plan: Plan) -> str:
    rej = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in plan.sweep.rejected.items())
    thinned = f"{thinning_rule(plan.pareto_hidden)} " if plan.pareto_hidden else ""
    return thinned + (
        f"{plan.sweep.n_configs:,} configurations in {plan.sweep.elapsed_s:.2f} s "
        f"({plan.sweep.n_configs / max(plan.sweep.elapsed_s, 1e-9):,.0f} per second); "
        f"rejected: {rej}. Total {plan.elapsed_s:.2f} s (with simulation and explanations)."
    )


def opts_line(plan: Plan) -> str | None:
    shared = shared_opts(plan)
    return f"Every configuration shown runs {shared.replace(OPT_SEP, ' and ')}." if shared else None


def terminal(plan: Plan, console: Console) -> None:
    console.print(f"[bold]{header(plan)}[/bold]")
    for line in plan.explanation:
        console.print(line)
    mark = shared_opts(plan) is None
    if opts_line(plan):
        console.print(opts_line(plan))
    if plan.recommended or plan.pareto:
        t = Table(title="Recommended and Pareto frontier (tokens/s per GPU vs per user)",
                  title_justify="left", header_style="bold")  # fmt: skip
        t.add_column("")
        for name in COLUMNS:
            t.add_column(name, justify="right")
        for role, r in _rows(plan):
            t.add_row("★" if role == "recommended" else "", *_cells(r, mark))
        console.print(t)
    if plan.simulations:
        t = Table(title=sim_title(plan),
                  title_justify="left", header_style="bold")  # fmt: skip
        for name in SIM_COLUMNS:
            t.add_column(name)
        for s in plan.simulations:
            t.add_row(*_sim_cells(s, mark))
        console.print(t)
    for note in plan.sweep.notes:
        console.print(f"note: {note}")
    console.print(footer(plan))


def _md_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(plan: Plan) -> str:
    parts = [f"## {header(plan)}", "", *[f"- {line}" for line in plan.explanation], ""]
    mark = shared_opts(plan) is None
    if opts_line(plan):
        parts += [str(opts_line(plan)), ""]
    if plan.recommended or plan.pareto:
        rows = [["★" if role == "recommended" else "", *_cells(r, mark)] for role, r in _rows(plan)]
        parts += [_md_table(["", *COLUMNS], rows), ""]
    if plan.simulations:
        parts += [_md_table(SIM_COLUMNS, [_sim_cells(s, mark) for s in plan.simulations]), ""]
    parts += [f"*{note}*" for note in plan.sweep.notes]
    parts.append(footer(plan))
    return "\n".join(parts) + "\n"


def csv_frame(plan: Plan) -> pd.DataFrame:
    """The CSV `--csv` writes: `Plan.to_frame`."""
    return plan.to_frame()


def pareto_figure(plan: Plan) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    rows = plan.sweep.rows
    if not rows.empty:
        ok = rows[rows["feasible"]]
        fig.add_trace(go.Scatter(
            x=ok["tokens_per_s_per_gpu"], y=ok["tokens_per_s_per_user"], mode="markers",
            name="feasible (kept)", marker={"color": "#9ab", "size": 6},
            text=[f"{r['n_gpus']}× {r['gpu']} TP{r['tp']} {engine_id(r)} {r['mode']} "
                  f"${r['cost_per_million_tokens']:.3f}/Mtok" for r in ok.to_dict("records")],
        ))  # fmt: skip
    if plan.pareto:
        front = pd.DataFrame(plan.pareto)
        fig.add_trace(go.Scatter(
            x=front["tokens_per_s_per_gpu"], y=front["tokens_per_s_per_user"],
            mode="lines+markers", name="Pareto frontier", line={"color": "#1f77b4"},
        ))  # fmt: skip
    if plan.recommended:
        r = plan.recommended
        fig.add_trace(go.Scatter(
            x=[r["tokens_per_s_per_gpu"]], y=[r["tokens_per_s_per_user"]], mode="markers",
            name="recommended", marker={"symbol": "star", "size": 16, "color": "#d62728"},
        ))  # fmt: skip
    fig.update_layout(
        title=header(plan), xaxis_title="output tokens/s per GPU (at the planned load)",
        yaxis_title="output tokens/s per user (1 / mean TPOT)", template="plotly_white",
    )  # fmt: skip
    return fig


def rejected_figure(plan: Plan) -> Any:
    """Configurations by verdict (first failing reason), counts."""
    import plotly.graph_objects as go

    counts = {"feasible": plan.sweep.n_configs - sum(plan.sweep.rejected.values())}
    counts.update({k.replace("_", " "): v for k, v in plan.sweep.rejected.items()})
    fig = go.Figure(go.Bar(x=list(counts.values()), y=list(counts), orientation="h"))
    fig.update_layout(
        title=f"{plan.sweep.n_configs:,} configurations by verdict", height=320,
        xaxis_title="configurations", template="plotly_white",
    )  # fmt: skip
    return fig


def html(plan: Plan) -> str:
    """Self-contained (works offline): plotly.js inlined once in the head, then every figure
    as a div that uses it."""
    import html as html_lib

    from plotly.offline import get_plotlyjs

    figures = [pareto_figure(plan), rejected_figure(plan)]
    divs = "".join(f.to_html(full_html=False, include_plotlyjs=False) for f in figures)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>rooflens plan</title>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head>"
        "<body style='font-family:sans-serif;max-width:1200px;margin:auto'>"
        + divs
        + "<pre style='white-space:pre-wrap'>"
        + html_lib.escape(markdown(plan))
        + "</pre></body></html>"
    )
