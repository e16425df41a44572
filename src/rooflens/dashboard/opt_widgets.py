"""The sidebar's optimization widgets: the multiselect over the registry, one widget per
parameter (state key `opt.NAME.KEY`), and the `NAME[:k=v,...]` text each selection becomes.

A speculative draft is a model: it gets a preset picker that defaults to the smallest preset
sharing the target's tokenizer (`model.optimizations.speculative.default_draft`), and says so
when there is none instead of passing an empty draft on (issue 15 item 1).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from rooflens.dashboard.labels import LABELS
from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import registry
from rooflens.model.optimizations.speculative import (
    default_draft,
    draft_candidates,
    draft_problem,
    no_draft_text,
)
from rooflens.model.specs.presets import get_model
from rooflens.model.specs.spec import ModelSpec

OPT_KEY = "opts_selected"
DRAFT_KEY = "opt.speculative.draft"
SUBSTITUTED_KEY = "opt.speculative._substituted"  # (target, draft, what was said)


def opt_string(name: str) -> str:
    cls = registry()[name]
    changed = []
    for key, param in cls.params.items():
        value = st.session_state.get(f"opt.{name}.{key}", param.default)
        if value != param.default and value is not None:
            text = str(value).lower() if isinstance(value, bool) else f"{value}"
            changed.append(f"{key}={text}")
    return f"{name}:{','.join(changed)}" if changed else name


def optimizations(model_ref: str) -> tuple[str, ...]:
    """Draw the optimization widgets; return the selected optimizations as `--opt` texts.
    What is dropped or substituted is said right under the chips, not inside an expander."""
    table = registry()
    if not table:
        st.caption("No optimizations are registered yet (model/optimizations/).")
        st.session_state[OPT_KEY] = []
        return ()
    st.session_state[OPT_KEY] = [n for n in st.session_state.get(OPT_KEY, []) if n in table]
    names = st.multiselect(
        LABELS["opts"],
        list(table),
        key=OPT_KEY,
        help="applied in their registry order on top of the default stack "
        "(KV cache, Flash attention, paged KV, fused add+norm)",
    )
    beside_chips = st.container()
    out = []
    for name in names:
        cls = table[name]
        usable, notice = True, None
        with st.expander(f"{name}: {cls.summary}"):
            st.caption(f"Source: {cls.citation}")
            for key, param in cls.params.items():
                if (name, key) == ("speculative", "draft"):
                    usable, notice = _draft_widget(model_ref, param.help)
                else:
                    _param_widget(name, key, param)
        if notice:
            beside_chips.warning(notice)
        if usable:
            out.append(opt_string(name))
    return tuple(out)


def _draft_problem(target: ModelSpec, ref: str) -> str | None:
    """Why the draft `ref` cannot draft for `target` (the model's words), None when it can."""
    try:
        return draft_problem(target, get_model(ref))
    except RooflensError as exc:
        return str(exc)


def _draft_widget(model_ref: str, help_text: str) -> tuple[bool, str | None]:
    """The draft model picker, listing only drafts that can draft for the target; returns
    (speculative kept, what to say beside its chip). A draft that cannot (a link's, or the
    previous target's) is replaced by the default draft and the page says so; with none, the
    optimization is left out and the page says why, in the CLI's words (`no_draft_text`)."""
    try:
        target = get_model(model_ref)
    except RooflensError:
        return False, None  # the model's own widget reports it
    state = st.session_state
    candidates = draft_candidates(target)
    current = str(state.get(DRAFT_KEY) or "")
    problem = _draft_problem(target, current) if current else None
    options = [current, *candidates] if current and problem is None else candidates
    options = list(dict.fromkeys(options))
    if not options:
        state[SUBSTITUTED_KEY] = None
        return (
            False,
            f"speculative is left out: {no_draft_text(target)}. Medusa and lookahead "
            "need no draft.",
        )
    if current not in options:
        state[DRAFT_KEY] = default_draft(target) or options[0]
        state[SUBSTITUTED_KEY] = (
            (target.id, state[DRAFT_KEY], f"speculative: draft {state[DRAFT_KEY]} instead of "
             f"{current}, because {problem}")
            if current else None
        )  # fmt: skip
    st.selectbox(
        "draft",
        options,
        key=DRAFT_KEY,
        help=f"{help_text}. Only drafts that can draft for {target.id} are listed: presets "
        "sharing its tokenizer and smaller, smallest first (the default is the smallest that "
        "holds the target's context).",
    )
    said = state.get(SUBSTITUTED_KEY)  # said while that target and that draft stay
    if said and said[:2] == (target.id, state[DRAFT_KEY]):
        return True, said[2]
    return True, None


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
