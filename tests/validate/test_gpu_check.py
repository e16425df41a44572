"""scripts/gpu_check.sh --dry-run: every step of the GPU check on the CPU with tiny shapes, so
the script cannot rot between the rare runs on a lent GPU (issue 25)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
STEPS = ("provenance", "pytest", "suite", "speed", "e2e_eager", "e2e_compile", "summary")


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**base, "PYTHON": sys.executable, "GPU_CHECK_ROOT": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_dry_run_runs_every_step_and_leaves_results_with_provenance(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path / "root", "--dry-run", OUT=str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for step in STEPS:
        assert f"step {step}: ok" in result.stdout, f"step {step} did not finish"
    kernels = pd.read_csv(tmp_path / "root" / "benchmarks" / "cpu" / "kernels.csv")
    # old and new variants side by side, each row stamped with where it ran
    assert kernels["triton_s"].gt(0).all() and kernels["triton_v1_s"].gt(0).all()
    assert kernels["commit"].notna().all() and kernels["torch_version"].notna().all()
    suite = next((tmp_path / "root" / "validate" / "cpu").glob("*-quick.csv"))
    assert {"device_name", "git_commit", "date"} <= set(pd.read_csv(suite).columns)
    summary = (out / "summary.md").read_text()
    for heading in ("Provenance", "Accuracy per operator class", "Accuracy per end-to-end phase",
                    "Speed per kernel", "Result files"):  # fmt: skip
        assert f"## {heading}" in summary
    assert "not computed" not in summary and "skipped" not in summary
    assert (out / "gpu_check-cpu.tar.gz").stat().st_size > 0


def test_refuses_in_one_line_when_a_wheel_is_missing(tmp_path: Path) -> None:
    # A python that sees no site-packages (-S -I): every third-party package is missing.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -I "$@"\n')
    wrapper.chmod(0o755)
    result = _run(tmp_path, "--dry-run", PYTHON=str(wrapper))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: missing python packages:")
    assert "pydantic" in lines[0]


def test_rejects_unknown_arguments(tmp_path: Path) -> None:
    result = _run(tmp_path, "--fast")
    assert result.returncode == 2 and "usage:" in result.stderr


def test_board_state_reads_power_and_clocks_and_survives_an_older_driver(tmp_path, monkeypatch):
    """The provenance line that tells a power-capped or down-clocked board from a model error:
    every queried field named with its value; a driver refusing the newest field (clock-event
    reasons) still gives the rest; no nvidia-smi at all is said, not raised."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_check_summary as summary

    fake = tmp_path / "nvidia-smi"
    fake.write_text('#!/bin/sh\ncase "$1" in *event_reasons*) exit 2;; esac\n'
                    'echo "500.00 W, 700.00 W, 700.00 W, 1755 MHz, 1980 MHz, 2619 MHz, '
                    '3201 MHz, 61"\n')  # fmt: skip
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    line = summary.board_state()
    assert line.startswith("power.limit=500.00 W; power.default_limit=700.00 W;")
    assert "clocks.sm=1755 MHz; clocks.max.sm=1980 MHz" in line
    assert line.endswith("temperature.gpu=61") and "event_reasons" not in line
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert summary.board_state() == "unknown (nvidia-smi: FileNotFoundError)"
