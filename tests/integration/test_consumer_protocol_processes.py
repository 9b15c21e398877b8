"""Consumer-protocol groups (KIP-848) on a node of two broker processes
(num.processes=2): the group's coordinator is the process that leads its
__consumer_offsets partition, the members find it with FindCoordinator and
consume every partition, whichever process leads it. Real processes,
confluent-kafka members in their own processes."""
from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import BrokerProcess
from tests.support.compat import make_messages, wait_until
from tests.support.confluent import produce
from tests.support.group_members import start_member

WAIT_S = 60.0


def test_consumer_protocol_group_on_a_node_of_two_processes(tmp_path):
    node = BrokerProcess(tmp_path / "node", {"num.processes": "2", "group.initial.rebalance.delay.ms": "0",
                                             "group.consumer.heartbeat.interval.ms": "500"}).start()
    members = []
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        admin.create_topics([NewTopic("spread", 4, 1)])["spread"].result(30)
        members = [start_member(name, tmp_path, node.bootstrap, "gp", "spread") for name in "ab"]
        wait_until(lambda: sorted(len(m.assignment()) for m in members) == [2, 2], WAIT_S,
                   "two members owning two partitions each")
        produce(node.bootstrap, "spread", make_messages(80, "p", 4))
        wait_until(lambda: len({k for m in members for k in m.consumed()}) == 80, WAIT_S, "every message read")
        consumed = {k for m in members for k in m.consumed()}
        assert consumed == {(p, o) for p in range(4) for o in range(20)}
        described = admin.describe_consumer_groups(["gp"])["gp"].result(30)
        assert described.type.name == "CONSUMER" and described.state.name == "STABLE"
    finally:
        for member in members:
            member.stop()
        node.stop()
