"""The Streamlit dashboard behind `app.py`: the scenario settings and their URL form
(`settings`), the sidebar widgets (`controls`), cached calls into `model/` and `validate/`
(`compute`, `sweeps`), plotly figure builders (`figures`), downloads (`export`) and one module per
page (`views`). No cost formulas live here: every number comes from `model/` or `validate/`."""
