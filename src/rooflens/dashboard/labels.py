"""Widget labels, one place: the sidebar draws its widgets with them, and a model error that
is about a field (`--tp 3 must divide …`) is told in the words of the widget that set it and
shown beside that widget."""

from __future__ import annotations

from rooflens.dashboard.settings import FIELDS, UPLOAD_PREFIX, Settings
from rooflens.hardware.errors import FieldError, RooflensError
from rooflens.hardware.presets import gpu_ids
from rooflens.hardware.profiles import get_profile
from rooflens.hardware.systems import get_system, system_ids
from rooflens.io.units import fmt_rate, fmt_time
from rooflens.model.analysis.advice import FIT_TP, FitAdvice
from rooflens.model.predict.request import meta
from rooflens.model.predict.scenario import Scenario
from rooflens.model.specs.quant import SCHEMES

# The widgets' words (units included), from the schema's field metadata
# (model/predict/request.py).
LABELS: dict[str, str] = {name: meta(f)["label"] for name, f in FIELDS.items()}


def locate(exc: RooflensError) -> tuple[str, str]:
    """(the Settings field an error is about, the message in the widgets' words).

    The error says which field it is about (`exc.field`, set by model.predict.api); one about
    none (the model's spec or size) goes beside the Model widget. A FieldError names its field
    through a slot, filled here with the widget's label."""
    field = exc.field if exc.field in LABELS else "model"
    if isinstance(exc, FieldError) and exc.field in LABELS:
        return field, exc.worded(LABELS[field])
    return field, str(exc)


def advice_text(advice: FitAdvice) -> str:
    """`model.advice.fit_fixes` in the sidebar's words: 'Try “Weights” fp8, or “…(TP)” 2.'"""
    if not advice.fixes:
        return (
            f"Nothing up to TP {FIT_TP[-1]} with W4A16 weights fits this GPU: pick a GPU with more "
            f"memory, or add pipeline stages (More settings → {LABELS['pp']})."
        )
    texts = [
        " and ".join(f"“{LABELS[k]}” {v:,}" if isinstance(v, int) else f"“{LABELS[k]}” "
                     f"{SCHEMES[str(v)].label if k == 'quant' else v}"
                     for k, v in fix.changes.items())
        + (" or less" if fix.at_most else "")
        for fix in advice.fixes
    ]  # fmt: skip
    if advice.combined:
        return f"Try {texts[0]} (no single change fits)."
    return "Try " + ", or ".join(texts) + "."


def quant_label(model: str, gpu: str, key: str) -> str:
    """A precision scheme as the picker shows it: 'W4A16 — int4 weight-only, …', and native as
    what it means for this model on this GPU ('native: MXFP4 experts, bf16 attention')."""
    if key in SCHEMES:
        return f"{SCHEMES[key].label} — {SCHEMES[key].means}"
    from rooflens.model.predict.api import make_scenario

    try:
        ref, where = model.removeprefix(UPLOAD_PREFIX), gpu.removeprefix(UPLOAD_PREFIX)
        return make_scenario(ref, where, quant=key).precision.text
    except RooflensError:
        return key


def describe(s: Settings) -> str:
    model = s.model.rsplit("/", 1)[-1] if s.model.startswith(UPLOAD_PREFIX) else s.model
    gpu = s.gpu.rsplit("/", 1)[-1]
    return f"{model} on {s.n_gpus} × {gpu}, {workload_text(s)}"


def precision_text(s: Settings) -> str:
    """'precision W4A16, KV cache bf16': the scheme in force in engine words (model/specs/quant.py),
    native spelled out ('native: MXFP4 experts, bf16 attention')."""
    from rooflens.model.predict.api import scenario_of

    try:
        p = scenario_of(s.request()).precision
    except RooflensError:  # the sidebar reports the problem beside its widget
        return f"precision {s.quant}"
    return f"precision {p.text}, KV cache {p.kv_dtype}"


def workload_text(s: Settings) -> str:
    """'batch 8, prompt 512 + output 128 tokens, precision W4A16, KV cache bf16, + opts'."""
    opts = f", + {' + '.join(s.opts)}" if s.opts else ""
    return (
        f"batch {s.batch:,}, prompt {s.prompt_len:,} + output {s.output_len:,} tokens, "
        f"{precision_text(s)}{opts}"
    )


def gpu_choices() -> list[str]:
    """The GPU widget's options: GPU presets, then system presets (links from their datasheets)."""
    return [*gpu_ids(), *system_ids()]


def gpu_label(ref: str) -> str:
    if ref not in system_ids():
        return ref
    box = get_system(ref)
    inter = box.inter_node.name if box.inter_node else "one node only"
    return f"{ref} (system: {box.gpus_per_node} × {box.gpu.id}, {box.intra_node.name}, {inter})"


def topology_text(sc: Scenario) -> str:
    """Which link each kind of parallelism crosses: TP, PP and EP groups inside a node use the
    node's link, groups larger than a node the inter-node one (`SystemSpec.link_for`)."""
    box, p = sc.system, sc.parallel
    parts = []
    for name, size in (("TP", p.tp), ("PP", p.pp), ("EP", p.ep)):
        if size <= 1:
            continue
        link = box.link_for(size if name != "PP" else p.tp * p.pp)
        where = "inside one node" if link is box.intra_node else "across nodes"
        speed = f"{fmt_rate(link.bytes_per_s, 'B/s')} one way, {fmt_time(link.latency_s)}"
        parts.append(f"{name} {size} {where} over {link.name} ({speed})")
    nodes = -(-p.n_gpus // box.gpus_per_node)
    head = f"Interconnect: {p.n_gpus} GPU(s) on {nodes} node(s) of {box.gpus_per_node}"
    return head + (": " + "; ".join(parts) if parts else ", no link crossed") + "."


def profile_text(sc: Scenario) -> str:
    """Which profile the numbers on every page use, and where it comes from."""
    if sc.profile == "ideal":
        return (
            "In force: **ideal** profile, datasheet peaks and bandwidth, no overheads: a lower "
            "bound on time (the planner's default is calibrated)."
        )
    profile = get_profile(sc.profile, sc.gpu, sc.engine)
    fitted = f"fitted on {profile.gpu_id}" if profile.gpu_id else "generic (no fit for this GPU)"
    fitted = f"{sc.engine} kernels, {fitted}"
    return (
        f"In force: **calibrated** profile, {fitted}: {profile.source}. Same default as the "
        "capacity planner."
    )
