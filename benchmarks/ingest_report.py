"""bench_ingest.py's numbers per job, and the Markdown table they print as."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``; NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Result:
    """One job's numbers; the store columns are None for the pass-through (no sink)."""

    job: str
    events: int
    events_per_s: float
    offered_rate: float
    paced_events: int
    ops_latencies_ms: list[float]
    peak_rss_mib: float
    paced_turns: int | None = None
    store_latencies_ms: list[float] | None = None
    sink_peak_rss_mib: float | None = None


def _latencies(values: list[float] | None, total: int | None) -> str:
    """``seen/total | p50 / p95 / p99`` (two cells), or dashes without a measurement."""
    if values is None or total is None:
        return "– | –"
    quantiles = " / ".join(f"{percentile(values, q):,.0f}" for q in (0.5, 0.95, 0.99))
    return f"{len(values)}/{total} | {quantiles}"


def report(results: Sequence[Result]) -> str:
    """The results as a Markdown table."""
    rows = [
        "| job | backlog events | sustained events/s | offered rate (ev/s) "
        "| paced events seen in memory.ops | event → visible in memory.ops p50 / p95 / p99 ms "
        "| paced turns seen in the stores | event → turn visible in the stores "
        "(Redis working memory, via the sink) p50 / p95 / p99 ms "
        "| peak RSS MiB (job / sink) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        peak = f"{r.peak_rss_mib:,.0f}"
        if r.sink_peak_rss_mib is not None:
            peak += f" / {r.sink_peak_rss_mib:,.0f}"
        rows.append(
            f"| {r.job} | {r.events} | {r.events_per_s:,.0f} | {r.offered_rate:,.1f} "
            f"| {_latencies(r.ops_latencies_ms, r.paced_events)} "
            f"| {_latencies(r.store_latencies_ms, r.paced_turns)} | {peak} |"
        )
    return "\n".join(rows)
