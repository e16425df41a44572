"""Fixtures for the dashboard tests: run `app.py` headless through Streamlit's AppTest."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

HERE = Path(__file__).parent
# Lets `import apptest_helpers` (this folder's helper) work under any pytest import mode.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from apptest_helpers import APP  # noqa: E402


@pytest.fixture
def app() -> Callable[..., AppTest]:
    """`app(page="roofline", batch="32")` -> an AppTest that has run once with that URL."""

    def run(**query: str | list[str]) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        return at

    return run
