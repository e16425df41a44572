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
from rooflens.model.optimizations.speculative import default_draft, draft_candidates
from rooflens.model.specs.presets import get_model, model_ids

OPT_KEY = "opts_selected"
DRAFT_KEY = "opt.speculative.draft"
DRAFT_TARGET_KEY = "opt.speculative._target"  # the target the draft was chosen for


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
    """Draw the optimization widgets; return the selected optimizations as `--opt` texts."""
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
    out = []
    for name in names:
        cls = table[name]
        usable = True
        with st.expander(f"{name}: {cls.summary}"):
            st.caption(f"Source: {cls.citation}")
            for key, param in cls.params.items():
                if (name, key) == ("speculative", "draft"):
                    usable = _draft_widget(model_ref, param.help)
                else:
                    _param_widget(name, key, param)
        if usable:
            out.append(opt_string(name))
    return tuple(out)


def _draft_widget(model_ref: str, help_text: str) -> bool:
    """The draft model picker; False (speculative left out) when no preset can draft."""
    try:
        target = get_model(model_ref)
    except RooflensError:
        return False
    candidates = draft_candidates(target)
    state = st.session_state
    if not candidates and not state.get(DRAFT_KEY):
        st.warning(
            f"No preset shares {target.id}'s tokenizer and is smaller, so there is no draft "
            "model to pick: speculative decoding is left out. Try medusa or lookahead, which "
            "need no draft."
        )
        return False
    options = candidates + [m for m in model_ids() if m not in candidates]
    if state.get(DRAFT_TARGET_KEY) != target.id:  # a new target: a draft that fits it
        if state.get(DRAFT_KEY) not in candidates and state.get(DRAFT_TARGET_KEY) is not None:
            state[DRAFT_KEY] = default_draft(target) or options[0]
        state[DRAFT_TARGET_KEY] = target.id
    if state.get(DRAFT_KEY) not in options:
        state[DRAFT_KEY] = default_draft(target) or options[0]
    st.selectbox(
        "draft",
        options,
        key=DRAFT_KEY,
        help=f"{help_text}. Listed first: presets sharing {target.id}'s tokenizer, smallest "
        "first (the default is the smallest that holds the target's context).",
    )
    return True


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
