"""`rooflens predict`: TTFT, TPOT, end-to-end time, throughput, memory and energy of one scenario,
what each optimization buys, and the per-operator roofline of a prefill and a mean decode
step; JSON with `--json`."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd
from rich.console import Group

from rooflens.argtypes import finite
from rooflens.cli.args import EXIT_DOES_NOT_FIT
from rooflens.cli.memory import complain_does_not_fit
from rooflens.cli.render import console, print_json, table, times, weights_text
from rooflens.cli.scenario_args import add_scenario_args, scenario_from_args
from rooflens.io.units import fmt_bytes, fmt_flops, fmt_time
from rooflens.model.predict.api import make_pipeline
from rooflens.model.predict.scenario import priced_by


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="TTFT, TPOT, throughput and the per-operator roofline")
    add_scenario_args(p)
    p.add_argument("--no-ops", action="store_true", help="headline only, no operator tables")
    p.add_argument("--ignore-memory", action="store_true", help="predict even if it does not fit")
    p.add_argument(
        "--usd-per-kwh",
        type=finite(0.0),
        default=0.0,
        help="electricity tariff, $/kWh: adds the energy part of $/Mtok (default: none)",
    )
    p.set_defaults(handler=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    sc = scenario_from_args(args)
    pipeline = make_pipeline(sc)  # the optimizations the scenario was built with
    pred = pipeline.predict()
    if not pred.memory.fits and not args.ignore_memory:
        complain_does_not_fit(pipeline.scenario, pred.memory, args.opts)
        return EXIT_DOES_NOT_FIT
    from rooflens.model.analysis.contributions import contributions

    effects = contributions(sc, args.opts, pred)
    from rooflens.model.analysis.energy import energy

    # energy needs the board's TDP; a spec without one (optional) leaves energy out, with a note
    power = energy(pred, args.usd_per_kwh) if sc.gpu.tdp_watts is not None else None
    no_energy = f"energy not estimated: GPU spec '{sc.gpu.id}' gives no tdp_watts"
    from rooflens.model.analysis.quant_vs_bf16 import quant_slower_than_bf16

    slower = quant_slower_than_bf16(pred, args.opts, alternatives=True)
    if args.json:
        data = with_call_exact(pred)
        print_json({**data, "contributions": effects,
                    "energy": power.to_dict() if power else None,
                    "quant_slower_than_bf16": slower.to_dict() if slower else None,
                    "notes": data["notes"] + ([] if power else [no_energy])
                    + ([slower.note] if slower else [])})  # fmt: skip
        return 0
    w, m = sc.workload, pred.memory
    title = (
        f"{sc.model.id} on {sc.gpu.id} ({priced_by(sc.profile, sc.engine, sc.gpu)}): "
        f"batch {w.batch}, prompt {w.prompt_len}"
        + (f" (with {w.images_per_prompt} image(s))" if w.images_per_prompt else "")
        + ", "
        f"output {w.output_len}, precision {weights_text(sc)}, KV {sc.precision.kv_dtype}, "
        f"TP {sc.parallel.tp}" + (f", opts {', '.join(args.opts)}" if args.opts else "")
    )
    headline = [
        ["TTFT (prefill)", fmt_time(pred.ttft_s), pred.prefill.bound + "-bound"],
        ["TPOT (mean decode step)", fmt_time(pred.tpot_s), pred.decode.bound + "-bound"]
        if w.output_len > 1
        else ["TPOT (mean decode step)", "n/a", "one output token: no decode step"],
        ["end-to-end", fmt_time(pred.e2e_s),
         f"{fmt_time(pred.e2e_per_output_token_s)}/token incl."],
        ["output throughput", f"{pred.output_tokens_per_s:,.0f} tokens/s", f"batch {w.batch}"],
        ["memory per GPU", f"{fmt_bytes(m.total_bytes)} of {fmt_bytes(m.capacity_bytes)}",
         f"max batch {m.max_batch:,}"],
    ]  # fmt: skip
    if power is None:
        headline.append(["energy", "—", no_energy])
    else:
        headline += _energy_rows(power, args.usd_per_kwh)
    console.print(table(title, ["metric", "value", "note"], headline))
    if slower:  # under the headline it qualifies (model/analysis/quant_vs_bf16.py)
        console.print(f"note: {slower.note}")
    if effects:
        console.print(_contributions_table(effects))
    if not args.no_ops:
        frame = pred.ops_frame()
        console.print(_ops_table(frame[frame["phase"] == "prefill"], "prefill", pred.ttft_s))
        decode = frame[frame["phase"] != "prefill"]
        if set(decode["phase"]) <= {"decode"}:
            console.print(_ops_table(decode, "decode", pred.tpot_s))
        else:  # a drafting optimization: its iteration is draft steps, then a verify step
            decode = decode.sort_values("phase", key=lambda p: p != "draft", kind="stable")
            console.print(_ops_table(decode, "iteration", float(decode["time_s"].sum())))
    for note in pred.notes:
        console.print(f"note: {note}")
    return 0


def _ops_table(frame: pd.DataFrame, phase: str, phase_time: float) -> Group:
    label = {"prefill": "one prefill step", "decode": "mean decode step"}.get(
        phase, "one decode iteration: the draft steps, then the verify step"
    )
    rows = []
    r: Any  # a row of the ops frame: name, count, flops, bytes, intensity, time_s, bound
    for r in frame.itertuples():
        name = r.name if r.phase in ("prefill", "decode") else f"{r.phase} · {r.name}"
        share = r.time_s / phase_time * 100 if phase_time else 0.0
        intensity = "—" if pd.isna(r.intensity) else f"{r.intensity:,.1f}"
        rows.append([name, str(r.count), fmt_flops(r.flops), fmt_bytes(r.bytes), intensity,
                     fmt_time(r.time_s), f"{share:.1f} %", r.bound])  # fmt: skip
    return table(
        f"Operators, {label} (totals over count)",
        ["operator", "count", "FLOPs", "bytes", "FLOP/byte", "time", "share", "bound"],
        rows,
    )


def _contributions_table(effects: list[dict[str, Any]]) -> Group:
    rows = []
    for e in effects:
        if "error" in e:
            rows.append([e["label"], "—", "—", "—", "—", e["error"]])
            continue
        mb = e["max_batch"]
        rows.append([e["label"], times(e["ttft_s"]["speedup"]), times(e["tpot_s"]["speedup"]),
                     fmt_bytes(e["memory_bytes"]["saved_bytes"]),
                     f"{mb['without']:,} → {mb['with']:,}",
                     times(e["max_batch_output_tokens_per_s"]["gain"])])  # fmt: skip
    return table(
        "What each optimization buys (against the same stack without it)",
        ["optimization", "TTFT speedup", "TPOT speedup", "memory saved", "max batch",
         "tokens/s at max batch"],
        rows,
    )  # fmt: skip


def with_call_exact(pred: Any) -> dict[str, Any]:
    """`pred.to_dict()` with each op row saying whether its kernel call, priced alone, gives its
    time (`call_exact`, model/pricing/reprice.py): the check `kernels predict` users rely on."""
    from rooflens.hardware.profiles import get_profile
    from rooflens.model.pricing.reprice import call_exact

    sc = pred.scenario
    data = pred.to_dict()
    priced = pred.prefill.priced + pred.decode.priced
    exact = call_exact(priced, sc.system, get_profile(sc.profile, sc.gpu, sc.engine))
    for row, same in zip(data["ops"], exact, strict=True):
        row["call_exact"] = same
    return data


def _energy_rows(power: Any, usd_per_kwh: float) -> list[list[str]]:
    """The headline's energy rows (model/analysis/energy.py)."""
    rows = [
        ["energy per output token", f"{power.joules_per_output_token:,.3g} J/token",
         f"{power.output_tokens_per_joule:,.3g} tokens/J"],
        ["GPU board power", f"{power.prefill_power_w:,.0f} W prefill, "
         f"{power.decode_power_w:,.0f} W decode", f"per GPU; idle {power.idle_w:,.0f} W, "
         f"TDP {power.tdp_w:,.0f} W"],
    ]  # fmt: skip
    if power.electricity_usd_per_million_tokens is not None:
        rows.append(["electricity", f"${power.electricity_usd_per_million_tokens:,.3g}/Mtok",
                     f"at ${usd_per_kwh:g}/kWh"])  # fmt: skip
    return rows
