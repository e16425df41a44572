"""The scenario report: one self-contained HTML page (plotly.js inlined once, opens offline) with
the scenario, its headline numbers, the time breakdown and the latency–throughput curve, for the
Explore page's download. Built only when its button is clicked."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from rooflens.dashboard.headline import Metric


def scenario_report_html(title: str, scenario: str, metrics: list[Metric],
                         figures: list[go.Figure], notes: list[str]) -> str:  # fmt: skip
    rows = "".join(
        f"<tr><th>{html.escape(m.label)}</th><td>{html.escape(m.text)}</td>"
        f"<td>{html.escape(m.help)}</td></tr>"
        for m in metrics
    )
    divs = "".join(
        fig.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, fig in enumerate(figures)
    )
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "th,td{text-align:left;padding:4px 12px;border-bottom:1px solid #ddd}</style></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(scenario)}</p>"
        f"<table>{rows}</table><ul>{items}</ul>{divs}</body></html>"
    )
