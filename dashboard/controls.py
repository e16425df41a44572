"""The sidebar: every scenario widget, uploads, the pinned baseline and the share link.

Widget state lives in `st.session_state` under fixed keys. On a session's first run the keys are
seeded from the URL's query parameters (`settings.from_query`); after every run the URL is
rewritten from the current settings (`settings.to_query`), so the address bar is always a link
to what is on screen. Widgets are created with keys only (no `value=`), as Streamlit requires
when state is seeded through `st.session_state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import streamlit as st

from dashboard.compute import save_upload
from dashboard.settings import (
    BASELINE_PARAM,
    DEFAULTS,
    PAGE_PARAM,
    UPLOAD_PREFIX,
    Settings,
    baseline_from_param,
    baseline_to_param,
    from_query,
    to_query,
)
from hardware.errors import RooflensError
from hardware.presets import get_gpu, gpu_ids
from model.dtypes import ACTIVATION_DTYPES, STORAGE_DTYPES
from model.optimizations import parse_opt, registry
from model.presets import get_model, model_ids

SAME_AS_ACT = "same as activations"
OPT_KEY = "opts_selected"


@dataclass
class Context:
    """What a page renders: the settings on screen, the pinned baseline, and any warnings."""

    settings: Settings
    baseline: Settings | None
    problems: list[str] = field(default_factory=list)
    page_params: dict[str, Any] = field(default_factory=dict)  # widget key -> its default


def url_state(ctx: Context, key: str, default: Any) -> str:
    """A page's own widget kept in the link: seeded from the URL the first time it shows (a
    value of the wrong type falls back to the default), written back by `write_url` when it
    differs from the default. `default` is a str, int, float or list of str. Returns the key."""
    if key not in st.session_state:
        value = default
        if isinstance(default, list):
            value = [v for v in st.query_params.get_all(key) if v] or default
        elif key in st.query_params:
            try:
                value = type(default)(st.query_params[key])
            except ValueError:
                value = default
        st.session_state[key] = value
    ctx.page_params[key] = default
    return key


def _seed_from_url(pages: list[str]) -> list[str]:
    params = {k: st.query_params.get_all(k) for k in st.query_params.keys()}
    s, problems = from_query(params)
    for f in fields(Settings):
        if f.name != "opts":
            st.session_state[f.name] = getattr(s, f.name)
    st.session_state.kv_dtype = s.kv_dtype or SAME_AS_ACT
    for name, value in (("model", s.model), ("gpu", s.gpu)):
        known = model_ids() if name == "model" else gpu_ids()
        if value not in known:
            problems.append(f"{name} '{value}' from the link is not a preset; using the default")
            st.session_state[name] = getattr(DEFAULTS, name)
    selected = []
    for text in s.opts:
        try:
            opt = parse_opt(text)
        except RooflensError as exc:
            problems.append(f"opt: {exc}")
            continue
        selected.append(opt.name)
        for key, value in opt.values.items():
            st.session_state[f"opt.{opt.name}.{key}"] = value
    st.session_state[OPT_KEY] = selected
    page = st.query_params.get(PAGE_PARAM, pages[0])
    st.session_state.page = page if page in pages else pages[0]
    st.session_state.baseline = None
    if BASELINE_PARAM in st.query_params:
        st.session_state.baseline, more = baseline_from_param(st.query_params[BASELINE_PARAM])
        problems += more
    return problems


def _upload(label: str, key: str, kinds: list[str], help_text: str) -> str | None:
    file = st.file_uploader(label, type=kinds, key=key, help=help_text)
    return None if file is None else save_upload(file.name, file.getvalue())


def _model_and_gpu(problems: list[str]) -> tuple[str, str]:
    model = st.selectbox("Model", model_ids(), key="model")
    gpu = st.selectbox("GPU", gpu_ids(), key="gpu")
    with st.expander("Upload a model or GPU spec"):
        model_ref = _upload(
            "Model: Hugging Face config.json or rooflens spec",
            "model_upload",
            ["json", "yaml", "yml"],
            "a local config.json (no network); it replaces the preset while it is uploaded",
        )
        gpu_ref = _upload(
            "GPU: JSON/YAML spec (GPUSpec fields with sources)",
            "gpu_upload",
            ["json", "yaml", "yml"],
            "see `rooflens list gpus --json` for the fields",
        )
        if model_ref or gpu_ref:
            st.caption("Uploaded files stay on this server: a shared link carries presets only.")
    for ref, loader, kind in ((model_ref, get_model, "model"), (gpu_ref, get_gpu, "GPU")):
        if ref is None:
            continue
        try:
            spec = loader(ref.removeprefix(UPLOAD_PREFIX))
        except RooflensError as exc:
            problems.append(f"uploaded {kind} not used: {exc}")
            continue
        st.caption(f"Using the uploaded {kind}: **{spec.name}** (`{spec.id}`)")
        if kind == "model":
            model = ref
        else:
            gpu = ref
    return model, gpu


def _opt_string(name: str) -> str:
    cls = registry()[name]
    changed = []
    for key, param in cls.params.items():
        value = st.session_state.get(f"opt.{name}.{key}", param.default)
        if value != param.default and value is not None:
            text = str(value).lower() if isinstance(value, bool) else f"{value}"
            changed.append(f"{key}={text}")
    return f"{name}:{','.join(changed)}" if changed else name


def _optimizations() -> tuple[str, ...]:
    table = registry()
    if not table:
        st.caption("No optimizations are registered yet (model/optimizations/).")
        st.session_state[OPT_KEY] = []
        return ()
    st.session_state[OPT_KEY] = [n for n in st.session_state.get(OPT_KEY, []) if n in table]
    names = st.multiselect(
        "Optimizations",
        list(table),
        key=OPT_KEY,
        help="applied in their registry order on top of the default stack "
        "(KV cache, Flash attention, paged KV, fused add+norm)",
    )
    for name in names:
        cls = table[name]
        with st.expander(f"{name}: {cls.summary}"):
            st.caption(f"Source: {cls.citation}")
            for key, param in cls.params.items():
                _param_widget(name, key, param)
    return tuple(_opt_string(n) for n in names)


def _param_widget(name: str, key: str, param: Any) -> None:
    state_key = f"opt.{name}.{key}"
    if state_key not in st.session_state:
        st.session_state[state_key] = param.default
    if param.type is bool:
        st.checkbox(key, key=state_key, help=param.help)
    elif param.type in (int, float):
        step = 1 if param.type is int else None
        # the bounds of model/optimizations' Param, as the CLI and links apply them
        low, high = (None if b is None else param.type(b) for b in (param.lo, param.hi))
        st.number_input(key, key=state_key, help=param.help, step=step,
                        min_value=low, max_value=high)  # fmt: skip
    else:
        st.text_input(key, key=state_key, help=param.help)


def _longest_context() -> None:
    """Button callback: the longest prompt the chosen model holds with the current output."""
    try:
        max_context = get_model(st.session_state.model_ref).max_context
    except RooflensError:
        return
    st.session_state.prompt_len = max(1, max_context - int(st.session_state.output_len) + 1)


def _pin(s: Settings) -> None:
    st.session_state.baseline = s


def sidebar(pages: list[str], titles: dict[str, str]) -> tuple[str, Context]:
    """Draw the sidebar; return the chosen page and the context the page renders."""
    problems: list[str] = []
    if "page" not in st.session_state:
        problems = _seed_from_url(pages)
    with st.sidebar:
        page = st.radio("Page", pages, key="page", format_func=lambda p: titles[p])
        model, gpu = _model_and_gpu(problems)
        st.session_state.model_ref = model.removeprefix(UPLOAD_PREFIX)
        st.number_input("Batch (sequences)", min_value=1, step=1, key="batch")
        left, right = st.columns(2)
        left.number_input("Prompt (tokens)", min_value=1, step=128, key="prompt_len")
        right.number_input("Output (tokens)", min_value=1, step=64, key="output_len")
        st.button("Longest context the model holds", on_click=_longest_context)
        left, right = st.columns(2)
        left.selectbox("Weights", STORAGE_DTYPES, key="weight_dtype")
        right.selectbox("Activations", ACTIVATION_DTYPES, key="act_dtype")
        st.selectbox("KV cache", [SAME_AS_ACT, *STORAGE_DTYPES], key="kv_dtype")
        st.number_input("Tensor-parallel GPUs (TP)", min_value=1, step=1, key="tp")
        st.radio(
            "Profile",
            ("ideal", "calibrated"),
            key="profile",
            horizontal=True,
            help="ideal: datasheet peaks and bandwidth, a lower bound on time (as `rooflens "
            "predict`); calibrated: efficiencies and per-call overheads fitted on measured "
            "kernels (hardware/calibration/, see the Validation page)",
        )
        opts = _optimizations()
        with st.expander("More settings"):
            st.number_input("Pipeline stages (PP)", min_value=1, step=1, key="pp")
            st.number_input("Expert-parallel degree (EP)", min_value=1, step=1, key="ep")
            st.number_input("Quantization group (weights)", min_value=1, step=32, key="group_size")
            st.number_input("Runtime overhead (GB)", min_value=0.0, key="overhead_gb")
            st.number_input("Prefill chunk (tokens, 0 = none)", min_value=0, key="prefill_chunk")
        st.number_input(
            "Price ($ per GPU-hour, 0 = listed)",
            min_value=0.0,
            step=0.1,
            key="price_per_gpu_hour",
            help="your rental or amortised price; 0 uses the GPU's listed on-demand price "
            "(model/planner/prices.yaml, with its source) where there is one",
        )
        kv = st.session_state.kv_dtype
        s = Settings(
            model=model,
            gpu=gpu,
            batch=int(st.session_state.batch),
            prompt_len=int(st.session_state.prompt_len),
            output_len=int(st.session_state.output_len),
            weight_dtype=st.session_state.weight_dtype,
            act_dtype=st.session_state.act_dtype,
            kv_dtype="" if kv == SAME_AS_ACT else kv,
            tp=int(st.session_state.tp),
            pp=int(st.session_state.pp),
            ep=int(st.session_state.ep),
            group_size=int(st.session_state.group_size),
            profile=st.session_state.profile,
            overhead_gb=float(st.session_state.overhead_gb),
            prefill_chunk=int(st.session_state.prefill_chunk),
            opts=opts,
            price_per_gpu_hour=float(st.session_state.price_per_gpu_hour),
        )
        left, right = st.columns(2)
        left.button("Pin baseline", on_click=_pin, args=(s,), help="the deltas compare to it")
        if right.button("Clear", disabled=st.session_state.baseline is None):
            st.session_state.baseline = None
        baseline = st.session_state.baseline
        if baseline is not None:
            st.caption(f"Baseline: {describe(baseline)}")
    return page, Context(s, baseline, problems)


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


def write_url(page: str, ctx: Context) -> None:
    """Rewrite the address bar to this page, these settings, the baseline and page widgets."""
    wanted: dict[str, str | list[str]] = {}
    if page != "explore":
        wanted[PAGE_PARAM] = page
    wanted.update(to_query(ctx.settings))
    if ctx.baseline is not None and not _uploaded(ctx.baseline):
        wanted[BASELINE_PARAM] = baseline_to_param(ctx.baseline)
    for key, default in ctx.page_params.items():
        value = st.session_state.get(key, default)
        if value != default:
            wanted[key] = [str(v) for v in value] if isinstance(value, list) else str(value)
    current = {k: st.query_params.get_all(k) for k in st.query_params.keys()}
    normal = {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}
    if current != normal:
        st.query_params.from_dict(wanted)


def _uploaded(s: Settings) -> bool:
    return s.model.startswith(UPLOAD_PREFIX) or s.gpu.startswith(UPLOAD_PREFIX)
