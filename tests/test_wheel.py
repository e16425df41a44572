"""The wheel installs one package, `rooflens`, with its presets and calibration as package data,
and works from any directory when installed (not editable) into a fresh environment: the Python
API, the `rooflens` command and `rooflens dashboard` (which serves the package's page)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(out), "--no-deps",
         "--no-build-isolation", "-q"],
        capture_output=True, text=True,
    )  # fmt: skip
    if build.returncode:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1:]}")
    return next(out.glob("rooflens-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed, not editable, into a folder of its own (pip --target: nothing else
    is touched); its dependencies come from this interpreter's environment. The folder."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
         str(target), "-q", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    return target


def _outside(site: Path, tmp: Path) -> dict[str, str]:
    """An environment whose `rooflens` is the installed wheel's: its folder first on the path
    (ahead of any editable install of the checkout), run from a folder outside the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), PYTHONNOUSERSITE="1", HOME=str(tmp))
    return env


@pytest.mark.slow
def test_the_wheel_holds_rooflens_alone_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = wheel.name.split("-py3")[0] + ".dist-info"
    assert {n.split("/")[0] for n in names} == {"rooflens", dist_info}
    for data in ("rooflens/model/specs/presets/llama-3-8b.yaml",
                 "rooflens/hardware/presets/gpus/h100-sxm.yaml",
                 "rooflens/hardware/calibration/h100-sxm.yaml",
                 "rooflens/dashboard/entry/config.toml",
                 "rooflens/dashboard/entry/page.py"):  # fmt: skip
        assert data in names


@pytest.mark.slow
def test_an_installed_wheel_works_from_any_directory(installed: Path, tmp_path: Path) -> None:
    env = _outside(installed, tmp_path)
    where = subprocess.run(
        [sys.executable, "-c", "import rooflens; print(rooflens.__file__); "
         "print(rooflens.predict(model='llama-3-8b', gpu='h100-sxm').tpot_s)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert where[0] == str(installed / "rooflens" / "__init__.py")
    assert 0 < float(where[1]) < 1
    command = installed / "bin" / "rooflens"
    out = subprocess.run(
        [str(command), "predict", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f'"tpot_s": {where[1]}' in out  # the same number by the command


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_rooflens_dashboard_serves_from_an_installed_wheel(installed: Path, tmp_path: Path) -> None:
    if shutil.which("streamlit", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("streamlit is not installed in this environment")
    port = _free_port()
    server = subprocess.Popen(
        [str(installed / "bin" / "rooflens"), "dashboard", "--headless", "--port", str(port)],
        cwd=tmp_path, env=_outside(installed, tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline, health = time.monotonic() + 60, ""
        while time.monotonic() < deadline and not health:
            try:
                url = f"http://localhost:{port}/_stcore/health"
                health = urllib.request.urlopen(url, timeout=2).read().decode()
            except OSError:
                time.sleep(0.5)
        assert health == "ok", "the dashboard did not answer within 60 s"
    finally:
        server.terminate()
        server.wait(timeout=20)
