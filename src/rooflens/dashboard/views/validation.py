"""Validation: measured against predicted kernel times from the shared measurement sets and the
validator's results store (`validate.datasets`, `validate.store`, joined and summarised by
`validate.compare`), error by operator class and GPU, and the calibration profile in use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context, url_state
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.validation import BAND, cv_figure, error_figure
from rooflens.dashboard.numbers import fmt_sig
from rooflens.dashboard.validation_text import (
    CPU_DEVICE,
    IN_SAMPLE_TEXT,
    e2e_run_label,
    lead_text,
)
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import get_profile
from rooflens.io.units import fmt_quantity

# One section at a time (as the Scaling page's sweeps): each is a few charts, so the page
# answers in about a second instead of drawing every chart of every section on each visit.
SECTIONS = ("error by class", "measured vs predicted", "measured on the roofline",
            "held-out GPU", "whole model", "calibration profile", "kernel benchmark")  # fmt: skip
MEASURED = SECTIONS[:3]  # the sections drawn from the picked measurements


def render(ctx: Context) -> None:
    from rooflens.validate.cv import CV_FILE

    st.header("Validation")
    st.markdown(lead_text(pd.read_csv(CV_FILE) if CV_FILE.is_file() else None))
    sources = compute.validation_sources()
    key = url_state(ctx, "vsource", sources[0])
    hint = "the shared public sets, or a device in validate/results/"
    source = st.selectbox("Measurements", sources, key=key, help=hint)
    section = st.radio("Show", SECTIONS, horizontal=True,
                       key=url_state(ctx, "vsection", SECTIONS[0]))  # fmt: skip
    if section in MEASURED:
        _measurements(source, section)
    elif section == "held-out GPU":
        _cross_validation()
    elif section == "whole model":
        _e2e()
    elif section == "calibration profile":
        _profile(ctx)
    else:
        _kernel_benchmark()


def _measurements(source: str, section: str) -> None:
    """The picked measurements' tiles, then the section's chart: the error by class (with its
    table), measured against predicted, or the measured points on each GPU's roofline."""
    profiles = compute.validation_profiles(source)
    stats = compute.validation_view(source).stats  # every row, the columns statistics read
    left, right = st.columns(2)
    all_gpus, all_ops = (sorted(str(v) for v in stats[c].unique()) for c in ("gpu", "op"))
    gpus = left.multiselect("GPUs", all_gpus, default=all_gpus, key="vgpus")
    ops = right.multiselect("Operator classes", all_ops, default=all_ops, key="vops")
    rows = compute.picked(stats, tuple(gpus), tuple(ops))
    if rows.empty:
        st.info("Pick at least one GPU and one operator class.")
        return
    kept = rows[~rows["below_ideal"]]
    columns = st.columns(len(profiles) + 2)
    columns[0].metric("Measured kernels", fmt_quantity(len(rows), "rows"), border=True)
    for column, p in zip(columns[1:], profiles, strict=False):
        within = float((kept[f"error_{p}"].abs() <= BAND).mean()) if len(kept) else 0.0
        column.metric(f"Within ±20 % ({p})", f"{within * 100:.1f} %", border=True,
                      help=f"share of the measured rows the {p} profile predicts within ±20 % "
                      "(rows faster than the roofline left out)"
                      + ("; in-sample: the profile was fitted on these rows"
                         if p == "calibrated" else ""))  # fmt: skip
    cache = int(rows["cache_effect"].sum())
    columns[-1].metric("Cache effects (left out)", fmt_quantity(cache, "rows"), border=True,
                       help="left out of the statistics; see validate/compare.py")  # fmt: skip
    st.caption(IN_SAMPLE_TEXT)
    if section != MEASURED[0]:
        parity, roofline = compute.validation_figures(source, tuple(gpus), tuple(ops))
        fig = parity if section == MEASURED[1] else roofline
        show(fig, key="validation_parity" if fig is parity else "validation_roofline")
        st.caption(
            ("Error = predicted / measured − 1; dotted lines: ±20 %. " if section == MEASURED[1]
             else "Achieved TFLOP/s against FLOP/byte, under each GPU's roofline. ")
            + "From validate/report.py (as `rooflens validate report`), at most "
            f"{compute.SHOWN_PER_GROUP} seeded samples per GPU and operator class, rows faster "
            "than the roofline left out; the statistics above use every row."
        )  # fmt: skip
        download_row(f"rooflens-validation-{section.replace(' ', '-')}", fig=fig)
        return
    summary = compute.validation_summary(source, tuple(gpus), tuple(ops))
    errors = error_figure(summary, profiles)
    chart = st.container()  # above the table, sent after it
    tables.show(_summary_table(summary, profiles))  # static: its headers wrap, none is cut
    download_row("rooflens-validation", frame=summary, fig=errors)
    with chart:
        show(errors, key="validation_errors")


def _cross_validation() -> None:
    """The committed leave-one-GPU-out table (`rooflens validate cv -o`): read, not recomputed."""
    from rooflens.validate.cv import CV_FILE, RULE_TEXT

    st.subheader("Accuracy on a GPU nobody has measured")
    if not CV_FILE.is_file():
        st.info(f"No cross-validation table at {CV_FILE}: run `rooflens validate cv -o {CV_FILE}`.")
        return
    cv = pd.read_csv(CV_FILE)
    show(cv_figure(cv), key="validation_cv")
    first = cv.iloc[0]
    st.caption(
        "Each measured GPU left out in turn: calibration fitted on the others "
        f"({first['rule']} rule: {RULE_TEXT.get(str(first['rule']), 'as recorded')}), the "
        "left-out GPU predicted from its datasheet, each call "
        "priced as the engine that ran it (vLLM, SGLang, TensorRT-LLM). Attention on "
        f"the fastest implementation per shape. From `rooflens validate cv` at commit "
        f"{str(first['git_commit'])[:10]}, {str(first['date'])[:10]}."
    )


def _e2e() -> None:
    """Whole-model runs of `rooflens validate e2e` from the results store, one at a time."""
    from rooflens.dashboard.figures.e2e import e2e_figure
    from rooflens.validate.e2e.report import load_e2e

    runs = load_e2e()
    st.subheader("Whole model: predicted vs measured per operator")
    if runs.empty:
        st.caption(
            "No whole-model runs stored yet: run `rooflens validate e2e --model M "
            "--device cuda` (or `--device cpu`) to check TTFT and TPOT here."
        )
        return
    left, right = st.columns(2)
    names = sorted(runs["run"].unique(), reverse=True)
    first = {r: runs[runs["run"] == r].iloc[0] for r in names}
    labels = {r: e2e_run_label(str(f["model"]), str(f["device"]), r) for r, f in first.items()}
    run = left.selectbox("Run", names, format_func=lambda r: labels[r], key="ve2e_run")
    if str(first[run]["device"]) == CPU_DEVICE:
        st.info(
            "A CPU run (validate/results/e2e/cpu): it checks the operator accounting and the "
            "host term on this machine's CPU, not a GPU's speed."
        )
    phase = right.radio("Step", ("prefill", "decode"), horizontal=True, key="ve2e_phase")
    show(e2e_figure(runs[runs["run"] == run], phase), key="validation_e2e")
    st.caption(
        "`unattributed`: the step time no operator accounts for (host, gaps), beside "
        "the model's host term (model/pricing/host.py). Error = predicted / measured − 1."
    )


def _summary_table(summary: pd.DataFrame, profiles: tuple[str, ...]) -> pd.DataFrame:
    """One row per GPU and operator class; numbers as read (thousands separated, 3 digits)."""

    def percent(values: pd.Series) -> list[str]:
        return [fmt_sig(v * 100) for v in values]

    table = pd.DataFrame(
        {
            "GPU": summary["gpu"],
            "operator class": summary["op"],
            "rows": [f"{int(v):,}" for v in summary["rows"]],
            "left out (cache)": [f"{int(v):,}" for v in summary["excluded_cache"]],
            "ideal under-predicts (% of rows)": percent(summary["ideal_under_share"]),
        }
    )
    for p in profiles:
        table[f"{p} median |err| (%)"] = percent(summary[f"{p}_median"])
        table[f"{p} p90 |err| (%)"] = percent(summary[f"{p}_p90"])
    return table


def _profile(ctx: Context) -> None:
    gpu = get_gpu(ctx.settings.gpu_ref)
    calibrated = get_profile("calibrated", gpu)
    st.subheader(f"Calibration profile for {gpu.name}")
    st.caption(
        f"The sidebar's profile: **{ctx.settings.profile}**. Calibrated profile source: "
        f"{calibrated.source}"
        + (f" (fitted on {calibrated.gpu_id})" if calibrated.gpu_id else " (generic, any GPU)")
    )
    terms = pd.DataFrame({kind: _terms(eff.model_dump()) for kind, eff in calibrated.kinds.items()})
    # one column per operator kind, one row per term: every column fits a 1400-px window
    narrow = {c: st.column_config.NumberColumn(width="small") for c in terms.columns}
    terms = terms.round(2).rename_axis("term").reset_index()
    narrow["term"] = st.column_config.TextColumn(width="medium")
    st.dataframe(terms, hide_index=True, width="stretch", placeholder="—", column_config=narrow)
    st.caption(
        f"Communication: {calibrated.comm_bandwidth_fraction * 100:.1f} % of the link bandwidth, "
        f"latency {calibrated.comm_latency_scale:g} × the link latency per step."
    )


def _kernel_benchmark() -> None:
    """Issue 13: our Triton kernels vs torch, from the committed benchmarks/results/*/kernels.csv"""
    from rooflens.dashboard.figures.kernels import (
        kernel_figure,
        load_kernel_results,
        load_kernel_targets,
    )

    results = load_kernel_results()
    st.subheader("Kernel benchmark: our Triton kernels vs torch")
    if results.empty:
        st.info("No kernel benchmark committed yet: run `python -m benchmarks.kernels` on a GPU.")
        return
    gpus = sorted(results["gpu"].unique())
    gpu = st.selectbox("Benchmarked GPU", gpus, key="kbench_gpu") if len(gpus) > 1 else gpus[0]
    show(kernel_figure(results, load_kernel_targets(), gpu), key="kernel_benchmark")
    first = results[results["gpu"] == gpu].iloc[0]
    st.caption(
        f"{first['device_name']}, commit {first['commit']}, {first['date']}; both sides timed by "
        f"the validator's runner. Roofs: {first['roofs_source']}. Right panel: fraction of the "
        "datasheet roofline, as the targets state it; the hover adds the measured roofs'."
    )


# KindEfficiency field -> (column with its unit, scale from the stored value)
TERMS = {
    "compute_fraction": ("compute (% of peak)", 100.0),
    "memory_fraction": ("memory (% of HBM bandwidth)", 100.0),
    "overhead_s": ("overhead per call (µs)", 1e6),
    "overhead_cycles": ("overhead per call (SM cycles)", 1.0),
    "wave_latency_s": ("least time per wave of blocks (µs)", 1e6),
    "wave_latency_cycles": ("least time per wave of blocks (SM cycles)", 1.0),
    "saturation_blocks_per_sm": ("blocks per SM to saturate HBM (blocks/SM)", 1.0),
    "overlap_power": ("compute/memory overlap exponent p (1 = sum; none = max)", 1.0),
}


def _terms(values: dict[str, object]) -> dict[str, object]:
    """A profile's terms with their units; a term this page does not know keeps its field name
    (whose suffix carries the unit, by the project's convention)."""
    out: dict[str, object] = {}
    for key, value in values.items():
        label, scale = TERMS.get(key, (key, 1.0))
        out[label] = value * scale if isinstance(value, int | float) else value
    return out
