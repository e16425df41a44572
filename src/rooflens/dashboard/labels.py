"""Widget labels, one place: the sidebar draws its widgets with them, and a model error that
names a CLI flag (`--tp 3 must divide …`) is told in the words of the widget that set it and
shown beside that widget (issue 15 item 6)."""

from __future__ import annotations

import re

from rooflens.dashboard.settings import FIELDS, UPLOAD_PREFIX, Settings
from rooflens.hardware.presets import gpu_ids
from rooflens.hardware.profiles import get_profile
from rooflens.hardware.systems import get_system, system_ids
from rooflens.model.analysis.advice import FIT_TP, FitAdvice
from rooflens.model.predict.request import meta
from rooflens.model.predict.scenario import Scenario
from rooflens.model.units import fmt_rate, fmt_time

# The widgets' words (units included) and the CLI flag -> the Settings field whose widget sets
# it: both from the schema's field metadata (model/predict/request.py).
LABELS: dict[str, str] = {name: meta(f)["label"] for name, f in FIELDS.items()}
FLAG_FIELDS: dict[str, str] = {
    flag: name
    for name, f in FIELDS.items()
    for flag in (meta(f).get("flag"), (meta(f).get("memory") or {}).get("flag"))
    if flag
}
_FLAG = re.compile(r"(--[a-z][a-z-]*)(?: (\d[\d.]*)\b)?")


def _flag_text(match: re.Match[str]) -> str:
    field = FLAG_FIELDS.get(match.group(1))
    if field is None:
        return match.group(0)
    value = f" = {match.group(2)}" if match.group(2) else ""
    return f"“{LABELS[field]}”{value}"


def locate(message: str) -> tuple[str, str]:
    """(the Settings field a model error is about, the message in the widgets' words).

    The field is the first flag the message names; a message naming none is about the model
    (its spec or its size), so it goes beside the Model widget. `--opt NAME` reads
    "Optimizations → NAME"."""
    message = message.removeprefix("error: ")
    first = next((m.group(1) for m in _FLAG.finditer(message) if m.group(1) in FLAG_FIELDS), "")
    text = re.sub(r"--opt ([\w:.-]+)", lambda m: f"“{LABELS['opts']}” → {m.group(1)}", message)
    text = text.replace("--context (memory) or ", "")
    text = _FLAG.sub(_flag_text, text)
    return FLAG_FIELDS.get(first, "model"), text


def advice_text(advice: FitAdvice) -> str:
    """`model.advice.fit_fixes` in the sidebar's words: 'Try “Weights” fp8, or “…(TP)” 2.'"""
    if not advice.fixes:
        return (
            f"Nothing up to TP {FIT_TP[-1]} with int4 weights fits this GPU: pick a GPU with more "
            f"memory, or add pipeline stages (More settings → {LABELS['pp']})."
        )
    texts = [
        " and ".join(f"“{LABELS[k]}” {v:,}" if isinstance(v, int) else f"“{LABELS[k]}” {v}"
                     for k, v in fix.changes.items())
        + (" or less" if fix.at_most else "")
        for fix in advice.fixes
    ]  # fmt: skip
    if advice.combined:
        return f"Try {texts[0]} (no single change fits)."
    return "Try " + ", or ".join(texts) + "."


def describe(s: Settings) -> str:
    model = s.model.rsplit("/", 1)[-1] if s.model.startswith(UPLOAD_PREFIX) else s.model
    gpu = s.gpu.rsplit("/", 1)[-1]
    return f"{model} on {s.n_gpus} × {gpu}, {workload_text(s)}"


def workload_text(s: Settings) -> str:
    """'batch 8, prompt 512 + output 128 tokens, weights bf16, KV cache bf16, + opts'."""
    opts = f", + {' + '.join(s.opts)}" if s.opts else ""
    return (
        f"batch {s.batch:,}, prompt {s.prompt_len:,} + output {s.output_len:,} tokens, "
        f"weights {s.weight_dtype}, activations {s.act_dtype}, KV cache "
        f"{s.kv_dtype or s.act_dtype}{opts}"
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
