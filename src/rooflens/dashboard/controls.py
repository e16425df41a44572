"""The sidebar: every scenario widget, uploads, the pinned baseline and the share link.

Widget state lives in `st.session_state` under fixed keys. On a session's first run the keys are
seeded from the URL's query parameters (`settings.from_query`); after every run the URL is
rewritten from the current settings (`dashboard.links.write_url`), so the address bar is always
a link to what is on screen. Widgets are created with keys only (no `value=`), as Streamlit requires
when state is seeded through `st.session_state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import streamlit as st

from rooflens.dashboard.compute import save_upload
from rooflens.dashboard.labels import (
    LABELS,
    describe,
    gpu_choices,
    gpu_label,
    locate,
    profile_text,
    quant_label,
    topology_text,
)
from rooflens.dashboard.opt_widgets import OPT_KEY, optimizations
from rooflens.dashboard.settings import (
    BASELINE_PARAM,
    CHOICES,
    DEFAULTS,
    FIELDS,
    MINIMUMS,
    PAGE_PARAM,
    UPLOAD_PREFIX,
    Settings,
    baseline_from_param,
    from_query,
)
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import ENGINE_NAMES
from rooflens.model.optimizations import parse_opt
from rooflens.model.predict.request import meta
from rooflens.model.specs.presets import get_model, model_ids

SAME_AS_ACT = "same as activations"
FROM_SCHEME = "from the scheme"  # weight/act dtype: the precision scheme's (None)
SCHEME_DTYPES = ("weight_dtype", "act_dtype")
LAST_VALID = "last_valid_settings"
EMPTY_LIST = "none"  # a page's list widget left empty, in a link (the planner's "every GPU")
# Numbers with a place of their own in the sidebar; every other number the schema has gets its
# widget under "More settings", so a new numeric field needs no line here.
DRAWN_ABOVE = ("batch", "prompt_len", "output_len", "tp", "price_per_gpu_hour")


@dataclass
class Context:
    """What a page renders: the settings on screen, the pinned baseline, and any warnings."""

    settings: Settings
    baseline: Settings | None
    problems: list[str] = field(default_factory=list)
    page_params: dict[str, Any] = field(default_factory=dict)  # widget key -> its default
    # When the sidebar's scenario is invalid: what the widgets say (the link keeps it), and the
    # message shown beside the widget that caused it; `settings` is then the last valid one.
    typed: Settings | None = None
    invalid: str = ""


def url_state(ctx: Context, key: str, default: Any) -> str:
    """A page's own widget kept in the link: seeded from the URL the first time it shows (a
    value of the wrong type falls back to the default), written back by `write_url` when it
    differs from the default. `default` is a str, int, float or list of str. Returns the key."""
    if key not in st.session_state:
        value = default
        if isinstance(default, list):
            given = [v for v in st.query_params.get_all(key) if v]
            value = [] if given == [EMPTY_LIST] else (given or default)
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
    for name in FIELDS:
        if name != "opts":
            st.session_state[name] = getattr(s, name)
    st.session_state.kv_dtype = s.kv_dtype or SAME_AS_ACT
    for name in SCHEME_DTYPES:
        st.session_state[name] = getattr(s, name) or FROM_SCHEME
    for name, value in (("model", s.model), ("gpu", s.gpu)):
        known = model_ids() if name == "model" else gpu_choices()
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
    model = st.selectbox(LABELS["model"], model_ids(), key="model")
    gpu = st.selectbox(LABELS["gpu"], gpu_choices(), key="gpu", format_func=gpu_label,
                       help="a GPU (in the usual box for it), or a system preset with its "
                       "NVLink/PCIe and inter-node links")  # fmt: skip
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
    slots: dict[str, Any] = {}  # Settings field -> a place under its widget for its error
    with st.sidebar:
        page = st.radio("Page", pages, key="page", format_func=lambda p: titles[p])
        model, gpu = _model_and_gpu(problems)
        slots["model"] = slots["gpu"] = st.empty()
        topology = st.empty()
        st.session_state.model_ref = model.removeprefix(UPLOAD_PREFIX)
        _number(st, "batch")
        slots["batch"] = st.empty()
        left, right = st.columns(2)
        _number(left, "prompt_len")
        _number(right, "output_len")
        slots["prompt_len"] = slots["output_len"] = st.empty()
        st.button("Longest context the model holds", on_click=_longest_context)
        st.selectbox(LABELS["quant"], CHOICES["quant"], key="quant",
                     format_func=partial(quant_label, model, gpu),
                     help="the precision scheme, as engines name it; native keeps the "
                     "checkpoint's own format")  # fmt: skip
        left, right = st.columns(2)
        _choice(left, "weight_dtype", [FROM_SCHEME, *CHOICES["weight_dtype"]])
        _choice(right, "act_dtype", [FROM_SCHEME, *CHOICES["act_dtype"]])
        slots["quant"] = st.empty()
        slots["weight_dtype"] = slots["act_dtype"] = slots["group_size"] = st.empty()
        _choice(st, "kv_dtype", [SAME_AS_ACT, *CHOICES["kv_dtype"]])
        slots["kv_dtype"] = st.empty()
        _number(st, "tp")
        slots["tp"] = st.empty()
        _profile_widget()
        slots["profile"] = in_force = st.empty()
        st.selectbox(LABELS["engine"], CHOICES["engine"], key="engine",
                     format_func=ENGINE_NAMES.__getitem__,
                     help=FIELDS["engine"].description)  # fmt: skip
        slots["engine"] = st.empty()
        opts = optimizations(st.session_state.model_ref)
        slots["opts"] = st.empty()
        more = [name for name in MINIMUMS if name not in DRAWN_ABOVE]
        with st.expander("More settings"):
            for name in more:
                _number(st, name)
        below = st.empty()
        for name in more:  # group_size's errors stay beside the weights' dtype
            slots.setdefault(name, below)
        _number(st, "price_per_gpu_hour", described=True)
        s = _settings(model, gpu, opts)
        ctx = _checked(s, problems, slots)
        if not ctx.invalid:
            from rooflens.dashboard.compute import prediction

            sc = prediction(s).scenario
            topology.caption(topology_text(sc))
            in_force.caption(profile_text(sc))
        left, right = st.columns(2)
        left.button("Pin baseline", on_click=_pin, args=(ctx.settings,),
                    help="the deltas compare to it", disabled=bool(ctx.invalid))  # fmt: skip
        if right.button("Clear", disabled=st.session_state.baseline is None):
            st.session_state.baseline = None
        ctx.baseline = st.session_state.baseline
        if ctx.baseline is not None:
            st.caption(f"Baseline: {describe(ctx.baseline)}")
    return page, ctx


def _profile_widget() -> None:
    st.radio(LABELS["profile"], CHOICES["profile"], key="profile", horizontal=True,
             help=FIELDS["profile"].description)  # fmt: skip


def _number(where: Any, name: str, described: bool = False) -> None:
    """A Settings number's widget: its bound and step (and help, when `described`: a label
    that says it all needs none) are the schema field's."""
    f = FIELDS[name]
    kind = int if f.annotation is int else float
    low = MINIMUMS.get(name)
    where.number_input(
        LABELS[name],
        key=name,
        min_value=None if low is None else kind(low),
        step=meta(f).get("step"),
        help=f.description if described else None,
    )


def _choice(where: Any, name: str, options: Any) -> None:
    where.selectbox(LABELS[name], options, key=name)


def _settings(model: str, gpu: str, opts: tuple[str, ...]) -> Settings:
    """The Settings the widgets hold (a field without a widget, e.g. images, keeps what the
    link gave it)."""
    state = st.session_state
    values = {n: state.get(n, getattr(DEFAULTS, n)) for n in FIELDS if n not in ("model", "gpu")}
    values["kv_dtype"] = None if values["kv_dtype"] == SAME_AS_ACT else values["kv_dtype"]
    for name in SCHEME_DTYPES:
        values[name] = None if values[name] == FROM_SCHEME else values[name]
    return Settings(**{**values, "model": model, "gpu": gpu, "opts": opts})


def _checked(s: Settings, problems: list[str], slots: dict[str, Any]) -> Context:
    """The context for `s`; when `s` is invalid, its message goes under the widget that set it
    and the pages keep showing the last valid settings (if any)."""
    from rooflens.dashboard.compute import prediction

    try:
        prediction(s)
    except RooflensError as exc:
        name, text = locate(exc)
        slots.get(name, slots["model"]).error(text, icon="⚠️")
        last = st.session_state.get(LAST_VALID)
        return Context(last or s, None, problems, typed=s, invalid=text)
    st.session_state[LAST_VALID] = s
    return Context(s, None, problems)
