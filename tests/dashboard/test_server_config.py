"""The dashboard's Streamlit config (src/rooflens/dashboard/entry/config.toml; the checkout's
.streamlit/config.toml links to it for `streamlit run app.py`, and `rooflens dashboard` passes it
as flags): every option it sets exists in the installed Streamlit (a renamed option would be
ignored without a word), the post-run garbage collection stays off (~90 ms a rerun), and the
flags say what the file says."""

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


def test_rooflens_dashboard_passes_the_config_as_flags() -> None:
    from rooflens.cli.dashboard import config_flags, streamlit_command

    assert CONFIG.resolve().samefile(CONFIG)  # the link resolves (to the package's file)
    assert set(config_flags()) == {"--server.address=localhost", "--runner.postScriptGC=false"}
    command = streamlit_command(["--server.port=8502"])
    assert command[1:4] == ["-m", "streamlit", "run"] and command[4].endswith("entry/page.py")
    assert command[-1] == "--server.port=8502"  # given last: it wins over the shipped options
