"""Exactly once through crashes: a read-process-write processor
(tests/support/txn_processor.py, confluent-kafka, its own process) turns
each numbered record of topic A into one record of topic B inside
transactions that also commit its consumer offsets, aborting some of them
on purpose. The test SIGKILLs the processor several times (each new
instance, with the same transactional id, fences the last) and the broker
once, restarted on the same data dir. At the end a read_committed
consumer of B sees every input's output exactly once, in order per
partition, while read_uncommitted also sees the aborted attempts."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support.compat import Message, start_broker
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client, produce
from tests.support.transactions import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ProcessorProcess,
    read_to_end,
)

PARTITIONS = 4
INPUTS = 4000
# (progress: the share of inputs committed, fault), in order. "zombie"
# starts a second instance while the first still runs: the first must be
# fenced (exit 3) and its transaction aborted.
FAULTS = [(0.12, "kill processor"), (0.25, "zombie"), (0.38, "kill broker"), (0.5, "kill processor"),
          (0.62, "kill broker"), (0.75, "kill processor")]
RUN_TIMEOUT_S = 120.0
ZOMBIE_FENCED_WITHIN_S = 20.0
SETTINGS = {"num.partitions": str(PARTITIONS), "transaction.state.log.num.partitions": "4",
            "offsets.topic.num.partitions": "4"}
# Page-cache writes (Kafka's default) and flush.messages=1 (markers and
# transaction state acknowledged once fsynced, through group commit).
MODES = {"page-cache": {}, "fsync": {"log.flush.interval.messages": "1"}}


def fill_input(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    messages = [Message(i % PARTITIONS, f"k{i}".encode(), f"in-{i:05d}".encode(), (), 1_700_000_000_000 + i)
                for i in range(INPUTS)]
    produce(bootstrap, topic, messages, **{"enable.idempotence": True})
    expected: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for message in messages:
        expected[message.partition].append(b"out:" + message.value)
    return expected


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def run_with_faults(broker, processor: ProcessorProcess) -> list[str]:
    """Drive the processor to the end of its input through FAULTS;
    returns what happened, in order."""
    events: list[str] = []
    faults = list(FAULTS)
    zombie = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    processor.start()
    while True:
        assert time.monotonic() < deadline, f"not done in {RUN_TIMEOUT_S:g}s after {events}"
        progress = processor.committed() / INPUTS
        if zombie is not None and zombie[0].poll() is not None:
            events.append(f"zombie exited {zombie[0].returncode} after {time.monotonic() - zombie[1]:.1f}s")
            zombie = None
        elif zombie is not None:
            assert time.monotonic() - zombie[1] < ZOMBIE_FENCED_WITHIN_S, f"the zombie runs on: {events}"
        code = processor.exit_code()
        if code == 0 and zombie is None:
            return events
        if code not in (None, 0):
            events.append(f"processor exited {code} at {progress:.2f}")
            assert processor.runs < 12, f"the processor keeps exiting: {events}"
            processor.start()
        elif faults and progress >= faults[0][0]:
            _, fault = faults.pop(0)
            events.append(f"{fault} at {progress:.2f}")
            if fault == "kill processor":
                processor.kill()
                processor.start()
            elif fault == "zombie":
                zombie = (processor.process, time.monotonic())
                processor.start()
            else:
                broker.kill()
                broker.start()
        time.sleep(0.02)


@pytest.mark.parametrize("mode", MODES)
def test_read_process_write_is_exactly_once_through_processor_and_broker_kills(tmp_path, mode):
    broker = start_broker(tmp_path / "data", {**SETTINGS, **MODES[mode]})
    source, sink, group = "eos-in", "eos-out", f"eos-{uuid.uuid4().hex[:6]}"
    processor = ProcessorProcess(tmp_path / "processor.log", broker.bootstrap, source, sink, group,
                                 "eos-processor", seed=17, max_seconds=RUN_TIMEOUT_S)
    try:
        admin = admin_client(broker.bootstrap)
        for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (source, sink)]).values():
            future.result(ADMIN_TIMEOUT_S)
        expected = fill_input(broker.bootstrap, source)

        events = run_with_faults(broker, processor)
        print(events)
        assert [e.rsplit(" at ", 1)[0] for e in events if " at " in e and "exited" not in e] == \
            [fault for _, fault in FAULTS], events
        assert any(e.startswith("zombie exited 3") for e in events), events

        committed = read_to_end(broker.bootstrap, sink, PARTITIONS, READ_COMMITTED)
        for partition in range(PARTITIONS):
            got = [r.value for r in committed if r.partition == partition]
            duplicates = len(got) - len(set(got))
            missing = len(set(expected[partition]) - set(got))
            assert got == expected[partition], (
                f"partition {partition}: {len(got)} outputs for {len(expected[partition])} inputs, "
                f"{duplicates} duplicated, {missing} missing; events {events}")
        assert committed_offsets(broker.bootstrap, group, source) == {
            p: len(expected[p]) for p in range(PARTITIONS)}

        # The aborted attempts (chosen ones, and those of killed instances) are in the log.
        assert processor.aborts() > 0
        everything = read_to_end(broker.bootstrap, sink, PARTITIONS, READ_UNCOMMITTED)
        assert len(everything) > len(committed)
        assert {r.value for r in everything} == {r.value for r in committed}
    except BaseException:
        processor.dump_stacks()
        print(f"--- processor\n{processor.log()[-6000:]}\n--- broker\n{broker.log()}")
        raise
    finally:
        processor.kill_all()
        broker.kill()
