"""rooflens dashboard: `streamlit run app.py` (or `rooflens dashboard` from anywhere).

The page itself is the package's script, src/rooflens/dashboard/app.py; Streamlit re-runs this
file on every interaction, so it runs that script afresh each time rather than importing it once.
"""

import runpy

runpy.run_module("rooflens.dashboard.app", run_name="__main__")
