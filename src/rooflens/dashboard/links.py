"""The address bar as a link to what is on screen: after every run the page, the settings that
differ from their defaults, the pinned baseline and each page's own widgets (`url_state`) are
written back as query parameters."""

from __future__ import annotations

import streamlit as st

from rooflens.dashboard.controls import EMPTY_LIST, Context
from rooflens.dashboard.settings import (
    BASELINE_PARAM,
    PAGE_PARAM,
    UPLOAD_PREFIX,
    Settings,
    baseline_to_param,
    to_query,
)


def write_url(page: str, ctx: Context) -> None:
    """Rewrite the address bar to this page, these settings, the baseline and page widgets."""
    wanted: dict[str, str | list[str]] = {}
    if page != "explore":
        wanted[PAGE_PARAM] = page
    wanted.update(to_query(ctx.typed or ctx.settings))
    if ctx.baseline is not None and not _uploaded(ctx.baseline):
        wanted[BASELINE_PARAM] = baseline_to_param(ctx.baseline)
    for key, default in ctx.page_params.items():
        value = st.session_state.get(key, default)
        if value != default:
            if isinstance(value, list):  # an empty list must travel too ("every GPU")
                wanted[key] = [str(v) for v in value] or [EMPTY_LIST]
            else:
                wanted[key] = str(value)
    current = {k: st.query_params.get_all(k) for k in st.query_params.keys()}
    normal = {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}
    if current != normal:
        st.query_params.from_dict(wanted)


def _uploaded(s: Settings) -> bool:
    return s.model.startswith(UPLOAD_PREFIX) or s.gpu.startswith(UPLOAD_PREFIX)
