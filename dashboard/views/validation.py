"""validation page (placeholder until its backend lands)."""

from __future__ import annotations

import streamlit as st

from dashboard.controls import Context


def render(ctx: Context) -> None:
    st.header("validation")
