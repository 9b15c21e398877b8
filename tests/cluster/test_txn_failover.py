"""Exactly once across a transaction coordinator's failure: three brokers
and a real ZooKeeper, __transaction_state and every topic with three
replicas (min.insync.replicas 2). The read-process-write processor of
tests/faults/test_txn_eos.py runs while the broker coordinating its
transactional id is SIGKILLed (a follower of __transaction_state takes the
id over from the replicated log and finishes what the dead one had
prepared) and later restarted, and while the processor itself is
SIGKILLed once. A read_committed consumer then sees each input's output
exactly once."""
from __future__ import annotations

import time
import uuid

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.compat import Message
from tests.support.confluent import produce
from tests.support.transactions import READ_COMMITTED, READ_UNCOMMITTED, ProcessorProcess, read_to_end
from tests.support.wire import WireClient

PARTITIONS = 3
INPUTS = 2400
TRANSACTIONAL_ID = "failover-processor"
SETTINGS = {"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2", "offsets.topic.replication.factor": "3",
            "offsets.topic.num.partitions": "3", "num.partitions": str(PARTITIONS),
            "default.replication.factor": "3", "min.insync.replicas": "2"}
# Alone it finishes in about 20 s; a loaded 2-core machine took over 60.
RUN_TIMEOUT_S = 120.0


def coordinator_of(cluster, transactional_id: str) -> int:
    """The broker FindCoordinator names, asked of any live broker."""
    for broker in cluster.brokers.values():
        if not broker.running:
            continue
        client = WireClient(broker.port)
        try:
            found = client.request(ApiKey.FIND_COORDINATOR, 2, {"key": transactional_id, "key_type": 1})
            if found.error_code == E.NONE:
                return found.node_id
        except OSError:
            continue
        finally:
            client.close()
    return -1


def test_exactly_once_through_the_transaction_coordinators_failure(cluster_factory, tmp_path):
    cluster = cluster_factory(3, SETTINGS)
    for topic in ("failover-in", "failover-out"):
        cluster.create_topic(topic, PARTITIONS, 3)
    messages = [Message(i % PARTITIONS, None, f"in-{i:05d}".encode(), (), 1_700_000_000_000 + i)
                for i in range(INPUTS)]
    produce(cluster.bootstrap, "failover-in", messages, **{"enable.idempotence": True, "acks": "all"})
    group = f"failover-{uuid.uuid4().hex[:6]}"
    processor = ProcessorProcess(tmp_path / "processor.log", cluster.bootstrap, "failover-in", "failover-out",
                                 group, TRANSACTIONAL_ID, seed=23, max_seconds=RUN_TIMEOUT_S)
    events: list[str] = []
    try:
        processor.start()
        deadline = time.monotonic() + RUN_TIMEOUT_S
        killed = None
        steps = ["kill coordinator", "kill processor", "restart broker"]
        at = {"kill coordinator": 0.25, "kill processor": 0.5, "restart broker": 0.7}
        while processor.exit_code() != 0:
            assert time.monotonic() < deadline, f"not done in {RUN_TIMEOUT_S:g}s after {events}"
            progress = processor.committed() / INPUTS
            code = processor.exit_code()
            if code is not None:
                events.append(f"processor exited {code} at {progress:.2f}")
                assert processor.runs < 8, events
                processor.start()
            elif steps and progress >= at[steps[0]]:
                step = steps.pop(0)
                if step == "kill coordinator":
                    killed = coordinator_of(cluster, TRANSACTIONAL_ID)
                    assert killed in cluster.brokers, killed
                    cluster.brokers[killed].kill()
                elif step == "kill processor":
                    processor.kill()
                    processor.start()
                else:
                    cluster.brokers[killed].start()
                events.append(f"{step} at {progress:.2f}")
            time.sleep(0.05)
        print(events)
        assert [e.rsplit(" at ", 1)[0] for e in events if "exited" not in e] == [
            "kill coordinator", "kill processor", "restart broker"], events

        committed = read_to_end(cluster.bootstrap, "failover-out", PARTITIONS, READ_COMMITTED)
        for partition in range(PARTITIONS):
            got = [r.value for r in committed if r.partition == partition]
            expected = [b"out:" + m.value for m in messages if m.partition == partition]
            assert got == expected, (f"partition {partition}: {len(got)} outputs for {len(expected)} inputs, "
                                     f"{len(got) - len(set(got))} duplicated, "
                                     f"{len(set(expected) - set(got))} missing; {events}")
        everything = read_to_end(cluster.bootstrap, "failover-out", PARTITIONS, READ_UNCOMMITTED)
        assert len(everything) >= len(committed)
        assert {r.value for r in everything} == {r.value for r in committed}
    except BaseException:
        processor.dump_stacks()
        print(f"events {events}\n--- processor\n{processor.log()[-5000:]}")
        for broker_id, broker in cluster.brokers.items():
            print(f"--- broker {broker_id}\n{broker.log()[-3000:]}")
        raise
    finally:
        processor.kill_all()
