"""The pure parts of benchmarks/bench_soak.py: cycles, flatness, per-minute rows, CSV and SVG."""

from __future__ import annotations

import csv
import io
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from benchmarks.bench_soak import (
    LAG_RATIO,
    RSS_SLACK_MIB,
    Sample,
    code_fingerprint,
    cycles,
    duplicated,
    flatness,
    per_minute,
    samples_csv,
    svg_plot,
    thirds,
)


def _sample(t: float, lag: float = 0.0, rss: float = 1000.0, spool: float = 0.0) -> Sample:
    return Sample(
        t=t,
        phase="soak",
        published=int(t * 10),
        worker_lag=lag,
        sink_lag=lag / 2,
        worker_rss_mib=rss,
        sink_rss_mib=rss / 4,
        spool=spool,
        load1=2.0,
    )


def test_cycles_run_from_kill_to_kill_and_the_last_to_the_end() -> None:
    kills = [300.0, 600.0, 900.0, 1200.0, 1500.0]
    assert cycles(1800, kills, warmup_s=60) == [
        (300.0, 600.0),
        (600.0, 900.0),
        (900.0, 1200.0),
        (1200.0, 1500.0),
        (1500.0, 1800.0),
    ]


def test_kills_inside_the_warmup_start_no_cycle() -> None:
    assert cycles(240, [30.0, 120.0], warmup_s=60) == [(120.0, 240.0)]


def test_without_kills_the_time_after_warmup_is_cut_in_thirds() -> None:
    assert cycles(360, [], warmup_s=60) == [(60.0, 160.0), (160.0, 260.0), (260.0, 360.0)]


def test_thirds_are_whole_windows_and_at_least_one() -> None:
    windows = [(float(i), float(i + 1)) for i in range(5)]
    first, last = thirds(windows)
    assert first == windows[:2] and last == windows[-2:]
    assert thirds(windows[:1]) == (windows[:1], windows[:1])


def test_a_saw_tooth_lag_and_steady_rss_are_flat() -> None:
    # Each cycle: lag jumps at the kill and drains; the same every cycle.
    samples = [_sample(t, lag=max(0.0, 500 - (t % 300) * 5)) for t in range(300, 1800, 5)]
    windows = cycles(1800, [300.0, 600.0, 900.0, 1200.0, 1500.0], 60)
    verdicts = flatness(samples, windows, {"worker_lag": 100.0, "sink_lag": 50.0})
    assert [v.series for v in verdicts] == [
        "worker_lag",
        "sink_lag",
        "spool",
        "worker_rss_mib",
        "sink_rss_mib",
    ]
    assert all(v.flat for v in verdicts)
    assert math.isclose(verdicts[0].first, verdicts[0].last)


def test_a_growing_lag_is_not_flat_but_a_small_one_within_the_slack_is() -> None:
    windows = cycles(900, [], 0)
    growing = [_sample(t, lag=t * 10) for t in range(0, 900, 5)]
    lag = flatness(growing, windows, {"worker_lag": 100.0})[0]
    assert lag.last > lag.first * LAG_RATIO + 100 and not lag.flat
    noise = [_sample(t, lag=1.0 if t < 300 else 20.0) for t in range(0, 900, 5)]
    assert flatness(noise, windows, {"worker_lag": 100.0})[0].flat


def test_growing_rss_is_not_flat() -> None:
    windows = cycles(900, [], 0)
    leaking = [_sample(t, rss=1000 + t) for t in range(0, 900, 5)]
    rss = flatness(leaking, windows, {})[3]
    assert rss.series == "worker_rss_mib" and not rss.flat
    assert rss.allowed == rss.first * 1.10 + RSS_SLACK_MIB


def test_no_samples_in_a_window_is_not_flat() -> None:
    verdicts = flatness([], cycles(900, [], 0), {})
    assert not any(v.flat for v in verdicts)


def test_unanswered_samples_are_left_out_of_the_means() -> None:
    samples = [_sample(0, lag=10), _sample(5, lag=math.nan), _sample(800, lag=10)]
    lag = flatness(samples, cycles(900, [], 0), {})[0]
    assert lag.first == 10 and lag.last == 10


def test_per_minute_rows_take_the_worst_lag_the_mean_rss_and_count_kills() -> None:
    samples = [_sample(0, lag=5, rss=100), _sample(30, lag=50, rss=300), _sample(65, spool=7)]
    rows = per_minute(samples, kills=[20.0, 61.0, 62.0])
    assert [r.minute for r in rows] == [0, 1]
    assert rows[0].worker_lag_max == 50 and rows[0].worker_rss_mib == 200 and rows[0].kills == 1
    assert rows[1].spool_max == 7 and rows[1].kills == 2 and rows[1].published == 650


def test_csv_has_a_column_per_field_and_a_row_per_sample() -> None:
    text = samples_csv([_sample(0), _sample(5, lag=math.nan)])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["t", "phase", "published"]
    assert len(rows) == 3 and rows[2][3] == "nan"


def test_svg_is_well_formed_with_a_line_per_series_and_kill() -> None:
    samples = [_sample(t, lag=t, spool=t % 7) for t in range(0, 600, 5)]
    svg = svg_plot(samples, kills=[120.0, 240.0], title="soak <test> & co")
    root = ET.fromstring(svg)  # noqa: S314 - our own output
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polyline")) == 5  # 2 lags, 2 RSS, 1 spool
    assert len(root.findall(f"{ns}line")) == 2 * 3  # each kill in each panel
    assert "soak <test> & co" in "".join(root.itertext())


def test_svg_of_nothing_still_renders() -> None:
    ET.fromstring(svg_plot([], [], "empty"))  # noqa: S314 - our own output


def test_duplicated_keeps_pairs_seen_twice() -> None:
    pairs = [("c1", "e1"), ("c1", "e2"), ("c1", "e1"), ("c2", "e1")]
    assert duplicated(pairs) == {("c1", "e1"): 2}


def test_the_code_fingerprint_changes_with_any_source_file(tmp_path: Path) -> None:
    (tmp_path / "pipelines" / "extract").mkdir(parents=True)
    module = tmp_path / "pipelines" / "extract" / "tagging.py"
    module.write_text("SPANS = 1\n")
    (tmp_path / "pipelines" / "notes.txt").write_text("not code")
    before = code_fingerprint(tmp_path, ("pipelines", "jobs"))
    assert code_fingerprint(tmp_path, ("pipelines", "jobs")) == before
    (tmp_path / "pipelines" / "notes.txt").write_text("still not code")
    assert code_fingerprint(tmp_path, ("pipelines", "jobs")) == before
    module.write_text("SPANS = 2\n")
    assert code_fingerprint(tmp_path, ("pipelines", "jobs")) != before
