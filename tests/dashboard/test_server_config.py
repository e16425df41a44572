"""The repository's Streamlit config (.streamlit/config.toml, read by `streamlit run app.py` from
the checkout): every option it sets exists in the installed Streamlit (a renamed option would be
ignored without a word), and the post-run garbage collection stays off (~90 ms a rerun)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from streamlit import config

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def test_every_option_set_exists_and_post_run_gc_is_off() -> None:
    settings = tomllib.loads(CONFIG.read_text())
    known = config.get_config_options()
    names = [f"{section}.{key}" for section, table in settings.items() for key in table]
    assert names and [n for n in names if n not in known] == []
    assert settings["runner"]["postScriptGC"] is False
