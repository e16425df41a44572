"""What a deployment must serve: request rate, prompt/output length distributions, latency SLOs
and GPU prices. (`model.scenario.Workload` is one prediction's fixed batch; this is a load.)

Lengths are fixed, lognormal (fitted to a mean and a p99) or empirical (measured lengths). The
analytical model reads a distribution through `points(n)`: n equal-probability quantiles (the
midpoints of n equal-mass bins), so E[f(X)] ≈ mean f(points) for any cost f, exact for fixed
lengths. The simulation draws from the same distribution with `sample`.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rooflens.hardware.errors import RooflensError, validation_message
from rooflens.hardware.presets import check_readable
from rooflens.model.planner.trace import RequestTrace

Z99 = NormalDist().inv_cdf(0.99)  # 2.3263


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class LengthDist(_Frozen):
    """Token lengths of prompts or outputs (integers ≥ 1)."""

    kind: Literal["fixed", "lognormal", "empirical"] = "fixed"
    mean_tokens: float = Field(default=512, gt=0, description="mean length, tokens")
    p99_tokens: float | None = Field(default=None, gt=0, description="lognormal: the 99th pct")
    samples: tuple[int, ...] = Field(default=(), description="empirical: measured lengths")

    @model_validator(mode="after")
    def _check(self) -> LengthDist:
        if self.kind == "lognormal":
            if self.p99_tokens is None or self.p99_tokens <= self.mean_tokens:
                raise ValueError("a lognormal length needs p99_tokens above mean_tokens")
            if math.log(self.p99_tokens / self.mean_tokens) > Z99**2 / 2:
                raise ValueError(
                    f"p99/mean = {self.p99_tokens / self.mean_tokens:.1f} is beyond any "
                    f"lognormal (at most {math.exp(Z99**2 / 2):.1f}); give an empirical file"
                )
        if self.kind == "empirical" and (not self.samples or min(self.samples) < 1):
            raise ValueError("empirical lengths need at least one sample, each ≥ 1 token")
        return self

    @property
    def sigma(self) -> float:
        """Lognormal shape from mean and p99: ln(p99/mean) = zσ − σ²/2, the smaller root
        σ = z − sqrt(z² − 2 ln(p99/mean)) (from E[X] = e^(μ+σ²/2), p99 = e^(μ+zσ))."""
        assert self.p99_tokens is not None
        return Z99 - math.sqrt(Z99**2 - 2 * math.log(self.p99_tokens / self.mean_tokens))

    def points(self, n: int = 32) -> np.ndarray:
        """n equal-probability quantiles (bin midpoints), rounded to whole tokens ≥ 1."""
        q = (np.arange(n) + 0.5) / n
        if self.kind == "fixed":
            return np.full(n, float(round(self.mean_tokens)))
        if self.kind == "empirical":
            return np.maximum(1.0, np.round(np.quantile(np.asarray(self.samples, float), q)))
        s = self.sigma
        mu = math.log(self.mean_tokens) - s * s / 2
        z = np.array([NormalDist().inv_cdf(float(x)) for x in q])
        return np.maximum(1.0, np.round(np.exp(mu + s * z)))

    def mean(self, n: int = 32) -> float:
        """E[X]: exact for measured lengths (a long tail is not lost between n quantiles:
        199 × 500 + 1 × 100,000 tokens has mean 997.5), else over `points(n)`."""
        if self.kind == "empirical":
            return float(np.mean(np.asarray(self.samples, float)))
        return float(np.mean(self.points(n)))

    def second_moment(self, n: int = 32) -> float:
        """E[X²], exact for measured lengths as `mean`."""
        if self.kind == "empirical":
            return float(np.mean(np.asarray(self.samples, float) ** 2))
        return float(np.mean(self.points(n) ** 2))

    def p99(self) -> float:
        if self.kind == "fixed":
            return float(round(self.mean_tokens))
        if self.kind == "empirical":
            return float(np.quantile(np.asarray(self.samples, float), 0.99))
        return float(self.p99_tokens or self.mean_tokens)

    def sample(self, rng: np.random.Generator, size: int, cap: int) -> np.ndarray:
        """`size` draws, clipped to [1, cap] whole tokens."""
        if self.kind == "fixed":
            out = np.full(size, float(round(self.mean_tokens)))
        elif self.kind == "empirical":
            out = rng.choice(np.asarray(self.samples, float), size=size)
        else:
            s = self.sigma
            out = rng.lognormal(math.log(self.mean_tokens) - s * s / 2, s, size=size)
        return np.clip(np.round(out), 1, cap)

    def label(self) -> str:
        if self.kind == "fixed":
            return f"{self.mean_tokens:.0f} tokens"
        if self.kind == "lognormal":
            return f"lognormal, mean {self.mean_tokens:.0f}, p99 {self.p99_tokens:.0f} tokens"
        mean = f"{self.mean():,.1f}".removesuffix(".0")  # 997.5, not 998; 500, not 500.0
        return f"empirical ({len(self.samples):,} samples), mean {mean} tokens"

    @classmethod
    def parse(cls, text: str, p99: float | None = None) -> LengthDist:
        """`512` (fixed), `512` with p99 (lognormal), `lognormal:mean=512,p99=2048`, or
        `file:PATH` (one length per line, or a CSV whose first column holds lengths)."""
        text = text.strip()
        if p99 is not None and text.startswith(("file:", "lognormal:")):
            raise RooflensError(f"a separate p99 goes with a plain mean length N, not '{text}'")
        try:
            if text.startswith("file:"):
                return cls(kind="empirical", samples=_read_lengths(Path(text[5:])))
            if text.startswith("lognormal:"):
                kv = dict(item.split("=", 1) for item in text[10:].split(",") if item)
                return cls(kind="lognormal", mean_tokens=float(kv["mean"]),
                           p99_tokens=float(kv["p99"]))  # fmt: skip
            value = float(text)
            if p99 is not None:  # p99 ≤ mean or NaN is an error, not a fixed length
                if not p99 > value:
                    raise RooflensError(f"length '{text}': p99 {p99:g} must be above the mean")
                return cls(kind="lognormal", mean_tokens=value, p99_tokens=p99)
            return cls(kind="fixed", mean_tokens=value)
        except ValidationError as exc:
            raise RooflensError(validation_message(exc, f"length '{text}'")) from None
        except RooflensError:
            raise
        except (KeyError, ValueError):
            raise RooflensError(
                f"cannot read length '{text}': use N, lognormal:mean=N,p99=M or file:PATH"
            ) from None


def _read_lengths(path: Path) -> tuple[int, ...]:
    check_readable(path)  # a server (the dashboard) reads only uploads: hardware/presets.py
    if path.is_dir():
        raise RooflensError(f"length file '{path}' is a folder; give a file")
    if not path.exists():
        raise RooflensError(f"length file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflensError(f"cannot read lengths from {path} ({type(exc).__name__})") from None
    values = []
    for line in text.splitlines():
        head = line.split(",")[0].strip()
        if head.replace(".", "", 1).isdigit():
            values.append(round(float(head)))
    if not values:
        raise RooflensError(f"{path} holds no lengths (one number per line, or a first CSV column)")
    return tuple(values)


class SLO(_Frozen):
    """Latency targets in seconds; None = not constrained. p99 over requests."""

    ttft_p99_s: float | None = Field(default=None, gt=0)
    tpot_p99_s: float | None = Field(default=None, gt=0)
    ttft_mean_s: float | None = Field(default=None, gt=0)
    tpot_mean_s: float | None = Field(default=None, gt=0)

    def label(self) -> str:
        parts = [
            f"{name} ≤ {value * 1e3:.0f} ms"
            for name, value in (
                ("TTFT p99", self.ttft_p99_s),
                ("TPOT p99", self.tpot_p99_s),
                ("TTFT mean", self.ttft_mean_s),
                ("TPOT mean", self.tpot_mean_s),
            )
            if value is not None
        ]
        return ", ".join(parts) or "no latency SLO"


class ServingWorkload(_Frozen):
    """A load to serve: Poisson arrivals at `rate_per_s` with these lengths and targets."""

    rate_per_s: float = Field(gt=0, description="request arrival rate, requests/s")
    prompt: LengthDist = LengthDist(mean_tokens=512)
    output: LengthDist = LengthDist(mean_tokens=128)
    slo: SLO = SLO()
    prices_usd_per_gpu_hour: dict[str, float] = Field(
        default_factory=dict, description="overrides of model/planner/prices.yaml, per GPU id"
    )
    trace: RequestTrace | None = Field(default=None, description="replayed instead of Poisson")
    prefix_hit_rate: float = Field(default=0.0, ge=0, lt=1, description="prompt share cached")
    prefix_pool_tokens: float = Field(default=0.0, ge=0, description="cached prefix tokens")

    def kv_len_mean_tokens(self) -> float:
        """Mean KV length a decode step reads per running sequence, time-weighted: a request
        stays O steps, so running ones are length-biased, E[O²]/E[O], and half-way through
        on average: E[P] + E[O²]/(2E[O]) (renewal theory, inspection paradox; P ⟂ O).
        For fixed lengths this is P + O/2, the mean of predict's decode steps."""
        o = self.output
        return self.prompt.mean() + o.second_moment() / (2 * o.mean())
