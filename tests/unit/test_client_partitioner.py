"""murmur2 and key placement against Kafka's own vectors and kafka-python."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kcore.client.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (signed int32 results).
KAFKA_UTILS_TEST_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_kafka_utils_test_vectors():
    for key, expected in KAFKA_UTILS_TEST_VECTORS.items():
        assert murmur2(key) == expected, key


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python_for_any_bytes(key):
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=32), st.integers(min_value=1, max_value=1000))
def test_partition_for_key_is_the_positive_hash_modulo_partitions(key, partitions):
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    assert partition_for_key(key, partitions) == expected


def test_to_positive_masks_the_sign_bit_instead_of_taking_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-2147483648) == 0
    assert to_positive(-790332482) == 1357151166


def test_foobar_lands_where_the_java_client_puts_it():
    assert partition_for_key(b"foobar", 10) == 1357151166 % 10 == 6


def test_sticky_partitioner_keeps_null_keys_on_one_partition_until_a_new_batch():
    partitioner = StickyPartitioner(random.Random(7))
    first = {partitioner.partition("t", None, 4) for _ in range(50)}
    assert len(first) == 1
    partitioner.on_new_batch("t", 4)
    second = partitioner.partition("t", None, 4)
    assert second == (first.pop() + 1) % 4


def test_sticky_partitioner_cycles_through_every_partition():
    partitioner = StickyPartitioner(random.Random(1))
    seen = set()
    for _ in range(5):
        seen.add(partitioner.partition("t", None, 5))
        partitioner.on_new_batch("t", 5)
    assert seen == set(range(5))


def test_sticky_partitioner_hashes_keyed_records():
    partitioner = StickyPartitioner(random.Random(3))
    assert partitioner.partition("t", b"foobar", 10) == 6
