"""The script `rooflens dashboard` runs with Streamlit (the checkout's app.py is its twin): it runs
rooflens.dashboard.app afresh on every rerun, from an installed package, from any directory."""

import runpy

runpy.run_module("rooflens.dashboard.app", run_name="__main__")
