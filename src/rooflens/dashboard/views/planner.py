"""Capacity planner: the `rooflens plan` form, its recommendation and explanation, the Pareto
chart, rejected-reason counts and the simulation check (`model.planner`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context, url_state
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.planner import pareto_figure, rejected_figure
from rooflens.dashboard.headline import USD_PER_M_LABEL, fmt_usd_per_m
from rooflens.dashboard.numbers import fmt_sig
from rooflens.dashboard.plan_tables import frontier_table, simulation_table
from rooflens.hardware.errors import FieldError, RooflensError
from rooflens.hardware.presets import gpu_ids
from rooflens.hardware.profiles import ENGINE_NAMES, ENGINES
from rooflens.io.units import fmt_number, fmt_time
from rooflens.model.planner.explain import ALTERNATIVES_HINT
from rooflens.model.planner.pareto import thinning_rule
from rooflens.model.planner.plan_lists import engine_list, listed
from rooflens.model.planner.serving import MODES
from rooflens.model.planner.sim import WARMUP_SHARE
from rooflens.model.planner.space import SweepSpace
from rooflens.model.predict.scenario import priced_by_engines

DTYPES = ["bf16", "fp8", "int8", "int4"]
# The form's list widgets: (label, link key, the SweepSpace field giving the default, options)
MULTI = (
    # fp8 weights run W8A8-FP8 on GPUs with fp8 units (else W8A16); int8/int4 run W8A16/W4A16
    ("Weight dtypes", "plan_wdtypes", "weight_dtypes", DTYPES),
    ("KV dtypes", "plan_kvdtypes", "kv_dtypes", DTYPES),
    ("Schedulers", "plan_modes", "modes", list(MODES)),
)
# The serving engines searched, as `plan --engine` (plan_lists.engine_list checks them, and its
# error about the `engine` field shows under this widget); they start as the sidebar's engine.
ENGINES_LABEL = "Engines (searched like TP)"
PROGRESS_STEP = 0.05  # the progress bar moves in steps of this fraction of the sweep


def _form(ctx: Context) -> tuple[dict[str, Any], dict[str, Any]]:
    """The form's request (`plan_args.build_request`'s arguments) and, per field whose errors
    show under its widget, the place for them."""
    s = ctx.settings
    with st.form("plan_form"):
        a, b, c = st.columns(3)
        a.number_input(
            "Arrival rate (requests/s)", min_value=0.001, key=url_state(ctx, "plan_rate", 5.0)
        )
        b.text_input(
            "Prompt length (tokens)",
            key=url_state(ctx, "plan_prompt", "512"),
            help="N, or lognormal:mean=N,p99=M",
        )
        c.text_input(
            "Output length (tokens)",
            key=url_state(ctx, "plan_output", "128"),
            help="N, or lognormal:mean=N,p99=M",
        )
        a.number_input(
            "TTFT p99 SLO (ms, 0 = none)", min_value=0.0, key=url_state(ctx, "plan_ttft_ms", 2000.0)
        )
        b.number_input(
            "TPOT p99 SLO (ms, 0 = none)", min_value=0.0, key=url_state(ctx, "plan_tpot_ms", 50.0)
        )
        c.text_input("TP degrees", key=url_state(ctx, "plan_tp", listed("tp")))
        default_gpu = s.gpu if s.gpu in gpu_ids() else "h100-sxm"
        st.multiselect(
            "GPUs (none = every GPU with a listed price)",
            gpu_ids(),
            key=url_state(ctx, "plan_gpus", [default_gpu]),
        )
        a, b, c, d = st.columns(4)
        for column, (label, key, name, options) in zip((a, b, c), MULTI, strict=True):
            default = list(SweepSpace.default(name))
            column.multiselect(label, options, key=url_state(ctx, key, default))
        key = url_state(ctx, "plan_engines", [s.engine])
        given = list(st.session_state[key])  # a link may name engines that do not exist
        st.session_state[key] = [e for e in given if e in ENGINES]
        d.multiselect(ENGINES_LABEL, list(ENGINES), key=key, format_func=ENGINE_NAMES.__getitem__,
                      help="each engine's own measured kernels price `calibrated`; `ideal` "
                      "prices them alike")  # fmt: skip
        slots = {"engine": (d.empty(), ENGINES_LABEL)}
        if given != st.session_state[key]:
            try:
                engine_list(",".join(given))
            except FieldError as exc:
                slots["engine"][0].warning(f"{exc.worded(ENGINES_LABEL)} (in the link; left out)")
        max_gpus = SweepSpace.default("max_gpus")
        a.number_input(
            "Max GPUs", min_value=1, step=1, key=url_state(ctx, "plan_max_gpus", max_gpus)
        )
        b.radio("Profile", ["calibrated", "ideal"], key=url_state(ctx, "plan_profile",
                s.profile), horizontal=True, help="starts as the sidebar's")  # fmt: skip
        a.radio("Objective", ["cost", "goodput-per-dollar"], horizontal=True,
                key=url_state(ctx, "plan_objective", SweepSpace.default("objective")),
                help="the cheapest configuration, or the most goodput (requests/s within every "
                "SLO) per dollar")  # fmt: skip
        c.number_input(
            "Simulated requests (0 = skip the check)",
            min_value=0,
            step=500,
            key=url_state(ctx, "plan_sim", 2000),
        )
        st.form_submit_button("Plan", type="primary")
    st.caption(
        f"Model: {s.model_ref}, with the sidebar's optimizations in every configuration; GPU "
        "prices from model/planner/prices.yaml (with sources)."
    )
    state = st.session_state
    for key in ("plan_prompt", "plan_output"):
        if str(state[key]).strip().startswith("file:"):
            raise RooflensError("length files (file:PATH) are for `rooflens plan`; give N or a "
                                "lognormal:mean=N,p99=M here")  # fmt: skip
    return {
        "model": s.model_ref,
        "gpus": ",".join(state.plan_gpus) or "all",
        "rate": float(state.plan_rate),
        "prompt_len": str(state.plan_prompt),
        "output_len": str(state.plan_output),
        "ttft_slo": float(state.plan_ttft_ms) / 1e3 or None,
        "tpot_slo": float(state.plan_tpot_ms) / 1e3 or None,
        "tp": str(state.plan_tp),
        "weight_dtypes": ",".join(state.plan_wdtypes),
        "kv_dtypes": ",".join(state.plan_kvdtypes),
        "modes": ",".join(state.plan_modes),
        "max_gpus": int(state.plan_max_gpus),
        "profile": str(state.plan_profile),
        "engine": ",".join(state.plan_engines),
        "opts": tuple(s.opts),
        "simulate_requests": int(state.plan_sim),
        "objective": str(state.plan_objective),
    }, slots


def render(ctx: Context) -> None:
    st.header("Capacity planner")
    request, slots = _form(ctx)
    bar = st.empty()
    shown = [-1.0]  # the last fraction drawn

    def progress(done: int, total: int) -> None:
        # Every group would be a message and a redraw (288 for every GPU): draw each 5 %.
        if done == total or done / total - shown[0] >= PROGRESS_STEP:
            shown[0] = done / total
            bar.progress(done / total, text=f"Sweeping configurations: group {done:,} of {total:,}")

    try:
        result, feasible = compute.capacity_plan(progress=progress, **request)
    except FieldError as exc:  # beside its widget, in the widget's words
        if exc.field not in slots:
            raise
        slot, label = slots[exc.field]
        slot.error(exc.worded(label), icon="⚠️")
        return
    bar.empty()
    rec = result["recommended"]
    relax = result.get("relaxation")
    if rec is None:
        st.error("No configuration meets this load and its SLOs.")
        if relax:  # the nearest feasible relaxation, from this sweep (model/planner/relax.py)
            st.info(relax["line"])
    else:
        gpus = f"{rec['n_gpus']:,} GPU" + ("s" if rec["n_gpus"] != 1 else "")
        values = (
            (f"GPUs ({rec['gpu']})", gpus),
            ("$ per hour", f"${fmt_number(rec['cost_per_hour'])}"),
            (USD_PER_M_LABEL, fmt_usd_per_m(rec["cost_per_million_tokens"])),
            ("TTFT p99", fmt_time(rec["ttft_p99_s"])),
            ("TPOT p99", fmt_time(rec["tpot_p99_s"])),
            ("Goodput", f"{fmt_sig(rec['goodput_requests_per_s'])} requests/s"),
        )
        for column, (label, value) in zip(st.columns(len(values)), values, strict=True):
            column.metric(label, value, border=True)
    for line in result["explanation"]:
        if not (line.startswith(ALTERNATIVES_HINT) or (relax and line == relax["line"])):
            st.markdown(f"- {line}")  # the CLI's hint to re-plan is no widget here
    pareto = pd.DataFrame(result["pareto"])
    fig = pareto_figure(feasible, pareto, rec)
    if len(feasible):
        show(fig, key="plan_pareto")
    n_feasible = result["n_configs_evaluated"] - sum(result["rejected"].values())
    show(rejected_figure(result["rejected"], n_feasible), key="plan_rejected")
    space = result["space"]
    st.caption(
        f"Priced by the {priced_by_engines(space['profile'], tuple(space['engines']))}. "
        f"{result['n_configs_evaluated']:,} configurations in {result['sweep_s']:.2f} s "
        f"(plan total {result['elapsed_s']:.2f} s). " + " ".join(result["notes"])
    )
    if len(pareto):
        st.subheader("Pareto frontier")
        tables.show(frontier_table(pareto))
        st.caption(f"{thinning_rule(result['pareto_hidden'])} {GOODPUT_TEXT}")
    if result["simulations"]:
        st.subheader("Simulation check (one replica, Poisson arrivals, seeded)")
        tables.show(simulation_table(result["simulations"]))
        st.caption(warmup_text(request["simulate_requests"]))
    download_row("rooflens-plan", frame=feasible, data=result, fig=fig)


GOODPUT_TEXT = (
    "Goodput is the highest arrival rate a configuration serves with every SLO met (DistServe, "
    "Zhong et al. OSDI'24): its replicas times one replica's rate at its batch cap. It jumps "
    "from row to row with the replicas and the batch cap, not with the GPU count: fewer, wider "
    "replicas (a higher TP) serve fewer requests/s within the same SLOs."
)


def warmup_text(requests: int) -> str:
    """Why the simulation counts fewer requests than the form asks for (sim.WARMUP_SHARE)."""
    dropped = int(WARMUP_SHARE * requests)
    return (
        f"Each check simulates {requests:,} requests and drops the first "
        f"{WARMUP_SHARE * 100:g} % ({dropped:,}) as warm-up, since they meet an empty replica: "
        f"{requests - dropped:,} requests are counted. A configuration both recommended and on "
        "the frontier is simulated once and listed once."
    )
