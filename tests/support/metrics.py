"""A broker's /metrics as samples, read with prometheus-client's own parser."""
from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple], float]


def scrape(url: str) -> Samples:
    """{(sample name, sorted labels): value} of ``url``/metrics."""
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}
