"""`validate e2e` output: a rich table per scenario, the results-store frame, the error summary.

Error = predicted / measured − 1, as everywhere in validate/. Times shown in ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.table import Table

STEP_NAMES = {"prefill": "TTFT (prefill)", "decode": "TPOT (decode step)"}


def error(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None or measured <= 0:
        return None
    return predicted / measured - 1.0


def _ms(value: float | None) -> str:
    """Milliseconds, four significant digits, never in exponent notation."""
    if value is None:
        return "—"
    if value == 0:
        return "0"
    ms = value * 1e3
    if abs(ms) >= 1000:
        return f"{ms:,.0f}"
    return f"{ms:.4g}" if abs(ms) >= 1e-3 else f"{ms:.6f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f} %"


def scenario_table(rows: list[dict[str, Any]], title: str) -> Table:
    """One scenario (a batch and context): its prefill and decode rows side by side."""
    by_phase = {r["phase"]: r for r in rows}
    spreads = ", ".join(
        f"{STEP_NAMES[p][:4]} {_ms(r['measured_q20_s'])}–{_ms(r['measured_q80_s'])} ms"
        for p, r in by_phase.items()
    )
    t = Table(title=title, title_justify="left", header_style="bold",
              caption=f"measured: median of repeats; 20th–80th percentile {spreads}",
              caption_justify="left")  # fmt: skip
    t.add_column("operator")
    for phase in by_phase:
        short = "pre" if phase == "prefill" else "dec"
        for what in ("predicted ms", "measured ms", "error"):
            t.add_column(f"{short} {what}", justify="right")
    totals = []
    for r in by_phase.values():
        totals += [_ms(r["predicted_s"]), _ms(r["measured_s"]),
                   _pct(error(r["predicted_s"], r["measured_s"]))]  # fmt: skip
    t.add_row("[bold]TTFT / TPOT[/bold]", *totals, end_section=True)
    names = list(dict.fromkeys(op["name"] for r in by_phase.values() for op in r["ops"]))
    for name in names:
        cells = []
        for r in by_phase.values():
            op = next((o for o in r["ops"] if o["name"] == name), None)
            p, m = (op["predicted_s"], op["measured_s"]) if op else (None, None)
            cells += [_ms(p), _ms(m), _pct(error(p, m))]
        label = "unattributed (host, gaps)" if name == "unattributed" else name
        t.add_row(label, *cells)
    return t


def results_frame(rows: list[dict[str, Any]], meta: dict[str, Any]) -> pd.DataFrame:
    """One line per (scenario, phase, operator), the step itself as op `total`."""
    lines = []
    for r in rows:
        base = {
            **meta,
            "mode": r["mode"],
            "batch": r["batch"],
            "context": r["context"],
            "phase": r["phase"],
        }
        lines.append(
            {
                **base,
                "op": "total",
                "predicted_s": r["predicted_s"],
                "measured_s": r["measured_s"],
                "q20_s": r["measured_q20_s"],
                "q80_s": r["measured_q80_s"],
            }
        )
        for op in r["ops"]:
            measured = {"measured_s": op["measured_s"], "q20_s": None, "q80_s": None}
            lines.append({**base, "op": op["name"], "predicted_s": op["predicted_s"], **measured})
    frame = pd.DataFrame(lines)
    frame["error"] = frame["predicted_s"] / frame["measured_s"] - 1.0
    return frame


def median_step_error(rows: list[dict[str, Any]]) -> float:
    """Median |predicted / measured − 1| over the TTFT and TPOT rows."""
    errors = [abs(e) for r in rows if (e := error(r["predicted_s"], r["measured_s"])) is not None]
    return float(np.median(errors)) if errors else float("nan")


def json_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = (
        "phase",
        "batch",
        "context",
        "predicted_s",
        "measured_s",
        "measured_q20_s",
        "measured_q80_s",
        "mode",
        "ops",
    )
    return [{k: r[k] for k in keys} for r in rows]


def load_e2e(root: Path | None = None) -> pd.DataFrame:
    """Every stored `validate e2e` run (`<results>/e2e/<device>/<run>.csv`), with `device` and
    `run` columns; an empty frame when there is none."""
    from rooflens.validate.store import RESULTS_DIR

    folder = (root or RESULTS_DIR) / "e2e"
    files = sorted(folder.glob("*/*.csv")) if folder.is_dir() else []
    frames = [pd.read_csv(f).assign(device=f.parent.name, run=f.stem) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
