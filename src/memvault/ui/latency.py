"""Recall latency as this process measured it: p50 and p95 of the recall routes, estimated
from the HTTP latency histogram the way Prometheus' ``histogram_quantile`` does (linear within
a bucket), so the overview and a Grafana panel over ``/metrics`` agree."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client.metrics import MetricWrapperBase

from memvault.metrics import REQUEST_LATENCY

# The routes that answer a question from memory, as the API's route templates name them.
RECALL_ROUTES = {
    "/v1/memories/search": "search",
    "/v1/remember": "remember()",
}


@dataclass(frozen=True)
class Latency:
    name: str
    count: int
    p50_ms: float | None
    p95_ms: float | None


def recall_latency(histogram: MetricWrapperBase = REQUEST_LATENCY) -> list[Latency]:
    """Each recall route's answered requests (2xx) since the process started."""
    buckets: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for metric in histogram.collect():
        for sample in metric.samples:
            labels = sample.labels
            route = RECALL_ROUTES.get(labels.get("route", ""))
            if sample.name.endswith("_bucket") and route and labels.get("status") == "2xx":
                buckets[route][float(labels["le"])] += sample.value
    shown = []
    for route in RECALL_ROUTES.values():
        cumulative = sorted(buckets[route].items())
        count = int(cumulative[-1][1]) if cumulative else 0
        shown.append(
            Latency(route, count, _ms(quantile(0.5, cumulative)), _ms(quantile(0.95, cumulative)))
        )
    return shown


def quantile(q: float, cumulative: Sequence[tuple[float, float]]) -> float | None:
    """The q-quantile of a histogram given as (upper bound, cumulative count), ascending."""
    if not cumulative or cumulative[-1][1] == 0:
        return None
    rank = q * cumulative[-1][1]
    lower, below = 0.0, 0.0
    for upper, seen in cumulative:
        if seen >= rank:
            if math.isinf(upper):
                return lower  # past the last finite bound: that bound is all that is known
            return lower + (upper - lower) * (rank - below) / ((seen - below) or 1)
        lower, below = upper, seen
    return lower


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)
