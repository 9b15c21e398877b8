"""Kafka's default partitioning: murmur2 of the key, sticky for null keys.

Keyed records go to ``to_positive(murmur2(key)) % num_partitions``, the
placement of the Java client's ``BuiltInPartitioner.partitionForKey`` and of
librdkafka's ``murmur2_random`` partitioner, so a key produced by kcore lands
where those clients would put it. ``to_positive`` masks the sign bit
(``x & 0x7fffffff``); it is not ``abs``.

murmur2 as Kafka's ``Utils.murmur2`` computes it (MurmurHash2, 32-bit):
seed 0x9747b28c, m 0x5bd1e995, r 24; the key is read as little-endian
4-byte words, the 1-3 trailing bytes folded in before the final mix. The
result is returned as a signed int32, as Java returns it.

Null keys follow KIP-480 (sticky partitioning): one partition takes every
null-key record of a topic until the batch for it is sent, then the next
partition is chosen, so batches fill up instead of spreading one record
per partition.
"""
from __future__ import annotations

import random
import struct

__all__ = ["murmur2", "to_positive", "partition_for_key", "StickyPartitioner"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for (k,) in struct.iter_unpack("<I", memoryview(data)[:whole]):
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka ``Utils.toPositive``: clear the sign bit of an int32."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Chooses partitions: murmur2 for keys, a sticky partition for null keys.

    ``on_new_batch(topic)`` moves the sticky partition of a topic on to the
    next one (round robin from a random start), so consecutive batches of
    null-key records spread over all partitions. Not thread-safe; one event
    loop owns it.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        partition = self._sticky.get(topic)
        if partition is None or partition >= num_partitions:
            partition = self._rng.randrange(num_partitions)
            self._sticky[topic] = partition
        return partition

    def on_new_batch(self, topic: str, num_partitions: int) -> None:
        current = self._sticky.get(topic)
        if current is None or num_partitions <= 1:
            return
        self._sticky[topic] = (current + 1) % num_partitions
