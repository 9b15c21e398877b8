"""Offset ranges: what each Spark task reads, and the stream's offsets.

Pure functions over numbers, no client: the driver resolves the options'
bounds against each partition's [earliest, latest) (``resolve``), checks
them for data loss (``check_start``), cuts the ranges into at least
``minPartitions`` tasks (``split``) and, in a stream, caps a micro-batch at
``maxOffsetsPerTrigger`` (``rate_limit``). The stream offset is Spark's
Kafka offset JSON, ``{"topic": {"0": 42}}``: the next offset to read per
partition, so a query restarted from its checkpoint neither skips nor
repeats.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from kcore.spark.options import EARLIEST, LATEST, OffsetLimit, TopicPartition

log = logging.getLogger(__name__)

Watermarks = Mapping[TopicPartition, tuple[int, int]]  # (earliest, latest = high watermark)


class DataLossError(RuntimeError):
    """Offsets the query must read are gone (or never were): failOnDataLoss."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [from_offset, until_offset) of one topic partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(self.until_offset - self.from_offset, 0)


def resolve(limit: OffsetLimit, watermarks: Watermarks,
            by_time: Mapping[TopicPartition, int | None] | None = None) -> dict[TopicPartition, int]:
    """The offset ``limit`` means for each partition. A partition that
    per-partition offsets do not name gets the end the JSON would default
    to (earliest for a start, as Spark does for new partitions); a
    timestamp with no record at or after it means the latest offset."""
    result: dict[TopicPartition, int] = {}
    for key, (earliest, latest) in watermarks.items():
        if limit.kind == "earliest":
            result[key] = earliest
        elif limit.kind == "latest":
            result[key] = latest
        elif limit.kind == "offsets":
            wanted = limit.offsets.get(key, EARLIEST)
            result[key] = earliest if wanted == EARLIEST else latest if wanted == LATEST else wanted
        else:
            found = (by_time or {}).get(key)
            result[key] = latest if found is None or found < 0 else found
    return result


def check_start(key: TopicPartition, start: int, watermarks: Watermarks, fail_on_data_loss: bool) -> int:
    """``start`` when the partition still holds it, else the error Spark
    raises with failOnDataLoss=true, or (false) the earliest offset, logged."""
    earliest, latest = watermarks[key]
    if earliest <= start <= latest:
        return start
    message = (f"offset {start} of {key[0]}-{key[1]} is out of range: the partition holds offsets "
               f"[{earliest}, {latest})")
    if fail_on_data_loss:
        raise DataLossError(message + "; some data may have been lost (deleted by retention, or the "
                            "topic was recreated). Set the source option failOnDataLoss to false to "
                            "go on from the earliest offset.")
    log.warning("%s; reading from %d (failOnDataLoss=false)", message, earliest if start < earliest else latest)
    return earliest if start < earliest else latest


def check_lost(lost: list[TopicPartition], fail_on_data_loss: bool) -> None:
    """Partitions the query read before that the cluster no longer has."""
    if not lost:
        return
    names = ", ".join(f"{topic}-{index}" for topic, index in lost)
    if fail_on_data_loss:
        raise DataLossError(f"partitions {names} have been lost (their topic was deleted?); set the "
                            "source option failOnDataLoss to false to go on without them.")
    log.warning("partitions %s have been lost; going on without them (failOnDataLoss=false)", names)


def ranges(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """One range per partition with something to read, in partition order."""
    return [OffsetRange(topic, index, starts[(topic, index)], ends[(topic, index)])
            for topic, index in sorted(starts) if (topic, index) in ends
            and ends[(topic, index)] > starts[(topic, index)]]


def split(offset_ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """At least ``min_partitions`` ranges when there are that many offsets:
    each range is cut into parts in proportion to its size (Spark's
    KafkaOffsetRangeCalculator does the same), never below one offset."""
    total = sum(r.size for r in offset_ranges)
    if not min_partitions or len(offset_ranges) >= min_partitions or total == 0:
        return offset_ranges
    result = []
    for rng in offset_ranges:
        parts = max(1, min(rng.size, math.ceil(rng.size / total * min_partitions)))
        step = rng.size / parts
        bounds = [rng.from_offset + round(step * i) for i in range(parts)] + [rng.until_offset]
        result += [OffsetRange(rng.topic, rng.partition, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
    return result


def rate_limit(starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               max_offsets: int) -> dict[TopicPartition, int]:
    """Ends that read at most ``max_offsets`` in all, shared in proportion to
    what each partition has waiting (maxOffsetsPerTrigger, as Spark shares
    it); a partition with anything waiting moves by at least one offset."""
    waiting = {key: max(latest[key] - starts.get(key, latest[key]), 0) for key in latest}
    total = sum(waiting.values())
    if total <= max_offsets:
        return dict(latest)
    ends = {}
    for key, size in waiting.items():
        share = max_offsets * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        ends[key] = min(starts.get(key, latest[key]) + step, latest[key])
    return ends


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = {}
    for (topic, index), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(index)] = offset
    return result


def from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {(topic, int(index)): int(offset) for topic, partitions in offsets.items()
            for index, offset in partitions.items()}
