"""SampledStat: Kafka's sampled rate, average and maximum over two 30 s
windows, driven by explicit clock values."""
from __future__ import annotations

import math

from kcore.metrics import SampledStat


def test_nothing_recorded_is_nan_for_avg_and_max_and_zero_for_rate():
    stat = SampledStat()
    assert math.isnan(stat.avg(0.0)) and math.isnan(stat.max(0.0))
    assert stat.rate(0.0) == 0.0


def test_values_of_the_last_two_windows_count_and_older_ones_do_not():
    stat = SampledStat()
    stat.record(10.0, now=100.0)
    stat.record(30.0, now=110.0)    # same window
    stat.record(2.0, now=131.0)     # second window
    assert stat.avg(now=140.0) == 14.0 and stat.max(now=140.0) == 30.0
    assert stat.rate(now=140.0) == 3 / 40.0  # three over the 40 s the samples span
    # At 161 s the first window (from 100 s) is older than 2 x 30 s.
    assert stat.avg(now=161.0) == 2.0 and stat.max(now=161.0) == 2.0
    assert stat.rate(now=161.0) == 1 / 30.0  # at least one whole window
    stat.record(4.0, now=165.0)     # a third window pushes the first out
    assert stat.avg(now=165.0) == 3.0
    assert math.isnan(stat.avg(now=300.0))
