"""Cost per call of the protocol hot paths: Produce decode and Fetch encode.

Runs under pytest-benchmark (disabled by default in pyproject):

    .venv/bin/python -m pytest bench/bench_protocol.py --benchmark-enable

or standalone, printing microseconds per call (best of 5 rounds):

    .venv/bin/python -m bench.bench_protocol

Workloads: a Produce v7 request for 16 partitions of one topic, 16 KiB of
record bytes each (decoded without copying them), and a Fetch v11 response
for 16 partitions whose records are file slices (encoded as chunks, the
slices passed through untouched), built from data objects and from dicts;
the same dicts as a Fetch v12 response (the flexible encoding: compact
lengths and a tagged-field section per struct, what librdkafka and
kafka-python fetch with since kcore serves v12).
kafka-python's JSON-driven codec on the same messages is the baseline.

The refusal of unknown dict keys (kcore/protocol/encoder.py) is priced on
the dict-built Fetch response: its body encoded with and without the
check, interleaved, and the ratio printed (``key check``).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka.protocol.consumer import FetchResponse as KafkaPythonFetchResponse
from kafka.protocol.producer import ProduceRequest as KafkaPythonProduceRequest

from kcore.protocol import RequestHeader, decode_request, encode_request, encode_response
from kcore.protocol.encoder import struct_encoder
from kcore.protocol.messages.fetch import RESPONSE as FETCH_RESPONSE
from kcore.protocol.messages.fetch import FetchResponse

PARTITIONS = 16
RECORDS_PER_PARTITION = 16 * 1024
FETCH_SLICE_SIZE = 1 << 20


class FileSlice:
    """Same shape as kcore.log.file_slice.FileSlice: bytes left in the segment file."""

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd, self.position, self.size = fd, position, size


def produce_v7_frame() -> memoryview:
    records = bytes(range(256)) * (RECORDS_PER_PARTITION // 256)
    body = {"acks": -1, "timeout_ms": 30_000, "topic_data": [{"name": "bench-topic", "partition_data": [
        {"index": index, "records": records} for index in range(PARTITIONS)]}]}
    return memoryview(encode_request(0, 7, 1, "rdkafka", body))[4:]


def fetch_v11_objects() -> FetchResponse:
    partitions = [FetchResponse.PartitionData(
        partition_index=index, high_watermark=1_000_000, last_stable_offset=1_000_000, log_start_offset=0,
        aborted_transactions=None, records=FileSlice(7, index * FETCH_SLICE_SIZE, FETCH_SLICE_SIZE))
        for index in range(PARTITIONS)]
    return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="bench-topic",
                                                                          partitions=partitions)])


def fetch_v11_dicts() -> dict:
    return {"responses": [{"topic": "bench-topic", "partitions": [
        {"partition_index": index, "high_watermark": 1_000_000, "last_stable_offset": 1_000_000,
         "log_start_offset": 0, "aborted_transactions": None,
         "records": FileSlice(7, index * FETCH_SLICE_SIZE, FETCH_SLICE_SIZE)}
        for index in range(PARTITIONS)]}]}


FETCH_HEADER = RequestHeader(1, 11, 1, "rdkafka")
FETCH_V12_HEADER = RequestHeader(1, 12, 1, "rdkafka")


def kafka_python_produce_decode() -> Callable[[], object]:
    body = bytes(produce_v7_frame()[2 + 2 + 4 + 2 + len("rdkafka"):])
    return lambda: KafkaPythonProduceRequest.decode(body, version=7)


def kafka_python_fetch_encode() -> Callable[[], object]:
    cls = KafkaPythonFetchResponse
    topic, partition = cls.FetchableTopicResponse, cls.FetchableTopicResponse.PartitionData
    records = bytes(4096)  # kafka-python cannot pass file slices through; in-memory stand-in
    message = cls[11](throttle_time_ms=0, error_code=0, session_id=0, responses=[topic(
        topic="bench-topic", partitions=[partition(
            partition_index=index, error_code=0, high_watermark=1_000_000, last_stable_offset=1_000_000,
            log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1, records=records)
            for index in range(PARTITIONS)])])
    return lambda: message.encode(header=False)


def workloads() -> dict[str, Callable[[], object]]:
    frame, objects, dicts = produce_v7_frame(), fetch_v11_objects(), fetch_v11_dicts()
    return {
        "kcore decode Produce v7 request, 16 partitions": lambda: decode_request(frame),
        "kcore encode Fetch v11 response, 16 partitions (data objects)":
            lambda: encode_response(FETCH_HEADER, objects),
        "kcore encode Fetch v11 response, 16 partitions (dicts)": lambda: encode_response(FETCH_HEADER, dicts),
        "kcore encode Fetch v12 response, 16 partitions (dicts)":
            lambda: encode_response(FETCH_V12_HEADER, dicts),
        "kafka-python decode Produce v7 request, 16 partitions": kafka_python_produce_decode(),
        "kafka-python encode Fetch v11 response, 16 partitions (4 KiB in memory)": kafka_python_fetch_encode(),
    }


def key_check_workloads() -> tuple[Callable[[], object], Callable[[], object]]:
    """The dict-built Fetch v11 body encoded with and without the
    unknown-key check (header and framing left out: they are the same)."""
    body = fetch_v11_dicts()
    checked = struct_encoder(FETCH_RESPONSE, 11, False, check_keys=True)
    unchecked = struct_encoder(FETCH_RESPONSE, 11, False, check_keys=False)
    return (lambda: checked(body, bytearray(), []), lambda: unchecked(body, bytearray(), []))


def time_calls(work: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - started) / calls


@pytest.mark.parametrize("name", list(workloads()))
def test_protocol_hot_path(benchmark, name):
    work = workloads()[name]
    benchmark(work)


def test_key_check_cost(benchmark, measure, report):
    checked, unchecked = key_check_workloads()
    benchmark(checked)
    with_check, without = measure.interleaved(lambda: time_calls(checked, 2000),
                                              lambda: time_calls(unchecked, 2000),
                                              rounds=15, self_timed=True)
    report("Fetch v11 dict encode, unknown-key check", us_with=with_check * 1e6,
           us_without=without * 1e6, ratio=with_check / without)


def main() -> None:
    calls = 20_000
    for name, work in workloads().items():
        work()
        best = float("inf")
        for _ in range(5):
            best = min(best, time_calls(work, calls))
        print(f"{best * 1e6:8.2f} us  {name}")
    from bench.conftest import interleaved  # under pytest the fixture ``measure`` has it
    checked, unchecked = key_check_workloads()
    with_check, without = interleaved(lambda: time_calls(checked, calls // 10),
                                      lambda: time_calls(unchecked, calls // 10), rounds=15, self_timed=True)
    print(f"{with_check * 1e6:8.2f} us  kcore encode Fetch v11 body, 16 partitions (dicts, key check)")
    print(f"{without * 1e6:8.2f} us  the same without the key check: ratio {with_check / without:.3f}")


if __name__ == "__main__":
    main()
