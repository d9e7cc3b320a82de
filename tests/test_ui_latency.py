"""The overview's recall latency: p50/p95 estimated from the process's latency histogram as
Prometheus' histogram_quantile estimates them, and shown once recall has been answered."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, Histogram

from memvault.ui.latency import quantile, recall_latency

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25)


def test_quantiles_interpolate_within_a_bucket_like_prometheus() -> None:
    histogram = Histogram(
        "t_seconds", "t", ["method", "route", "status"], buckets=BUCKETS,
        registry=CollectorRegistry(),
    )  # fmt: skip
    search = histogram.labels("POST", "/v1/memories/search", "2xx")
    for seconds in [0.003] * 50 + [0.02] * 40 + [0.2] * 10:
        search.observe(seconds)
    histogram.labels("POST", "/v1/memories/search", "4xx").observe(9)  # refused: not recall
    histogram.labels("GET", "/v1/memories", "2xx").observe(9)  # not a recall route
    found = {row.name: row for row in recall_latency(histogram)}
    # Half of 100 fall in the first bucket: its upper bound; the 95th lies in (0.1, 0.25].
    assert (found["search"].count, found["search"].p50_ms) == (100, 5.0)
    assert found["search"].p95_ms == 175.0
    assert (found["remember()"].count, found["remember()"].p95_ms) == (0, None)


def test_past_the_last_finite_bucket_the_estimate_is_that_bound() -> None:
    assert quantile(0.95, [(0.1, 1.0), (float("inf"), 10.0)]) == 0.1
    assert quantile(0.5, []) is None


def test_the_overview_shows_recall_latency_once_recall_was_answered(client: TestClient) -> None:
    client.post("/v1/memories", json={"content": "Ana likes figs", "user_id": "default"})
    asked = client.post("/v1/memories/search", json={"query": "figs", "user_id": "default"})
    assert asked.status_code == 200
    page = client.get("/ui/").text
    row = re.search(r'<th scope="row">search</th><td>(\d+)</td><td>([^<]+)</td>', page)
    assert row and int(row[1]) >= 1 and row[2].endswith(" ms")
