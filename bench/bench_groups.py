"""Group coordinator figures: rebalance latency and offset commit rate.

Against a broker subprocess (group.initial.rebalance.delay.ms=0,
group.min.session.timeout.ms=100), with raw protocol members (kcore.testing.wire)
so that client-side delays do not hide the coordinator's:

1. join -> stable: a Stable group of 3 rebalances; time from the last
   member's JoinGroup to the last SyncGroup answer (the group is Stable).
2. death -> stable: one of 3 members stops heartbeating (session timeout
   500 ms, survivors heartbeat every 50 ms); time from its last heartbeat to
   the survivors' group being Stable again, and the part of it beyond the
   session timeout.
3. offset commits per second: OffsetCommit v7 of one partition, one
   connection sequential and 4 connections in parallel; and in process
   (GroupCoordinator.commit_offsets on real logs, no network).
4. end to end with confluent-kafka: 3 member processes (session 2000 ms,
   heartbeat 300 ms), one SIGKILLed; seconds until the survivors hold all
   12 partitions.

    .venv/bin/python -m bench.bench_groups [--rounds 20] [--commits 5000]

Under pytest-benchmark (`pytest bench/bench_groups.py --benchmark-enable`)
a shorter run stores the same figures in extra_info.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import struct
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.testing import BrokerProcess
from kcore.testing.wire import WireClient

BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "100"}
SUBSCRIPTION = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)
DEATH_SESSION_MS = 500
HEARTBEAT_EVERY_S = 0.05


class RawMember:
    """One group member speaking the protocol itself on its own connection."""

    def __init__(self, port: int, group: str, session_ms: int = 10_000):
        self.client = WireClient(port, timeout=30)
        self.group = group
        self.session_ms = session_ms
        self.member_id = ""
        self.generation = -1
        self.members: list = []

    def join(self) -> None:
        while True:
            response = self.client.request(ApiKey.JOIN_GROUP, 5, {
                "group_id": self.group, "session_timeout_ms": self.session_ms,
                "rebalance_timeout_ms": 10_000, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]})
            self.member_id = response.member_id
            if response.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                break
        assert response.error_code == ErrorCode.NONE, response
        self.generation = response.generation_id
        self.members = [m.member_id for m in response.members]

    def sync(self) -> int:
        assignments = [{"member_id": m, "assignment": m.encode()} for m in self.members]
        return self.client.request(ApiKey.SYNC_GROUP, 3, {
            "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": None, "assignments": assignments}).error_code

    def heartbeat(self) -> int:
        return self.client.request(ApiKey.HEARTBEAT, 3, {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": None}).error_code

    def join_and_sync(self) -> None:
        """Join until a SyncGroup succeeds (another member joining meanwhile
        answers REBALANCE_IN_PROGRESS, as clients see it)."""
        while True:
            self.join()
            error = self.sync()
            if error == ErrorCode.NONE:
                return
            assert error == ErrorCode.REBALANCE_IN_PROGRESS, error

    def close(self) -> None:
        self.client.close()


def form_group(port: int, count: int = 3, session_ms: int = 10_000) -> list[RawMember]:
    """`count` members in one Stable generation. Members heartbeat and rejoin
    on REBALANCE_IN_PROGRESS, as clients do, until they all hold it."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    members = [RawMember(port, group, session_ms) for _ in range(count)]
    formed = threading.Event()

    def live(member: RawMember) -> None:
        member.join_and_sync()
        while not formed.is_set():
            if member.heartbeat() != ErrorCode.NONE:
                member.join_and_sync()
            time.sleep(0.01)

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(live, member) for member in members]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            leaders = [m for m in members if m.members]
            if (len({m.generation for m in members}) == 1 and len(leaders) == 1
                    and len(leaders[0].members) == count):
                break
            time.sleep(0.01)
        formed.set()
        for future in futures:
            future.result(timeout=30)
    assert len({m.generation for m in members}) == 1, "the group did not form"
    return members


def join_to_stable_ms(port: int, rounds: int) -> list[float]:
    """Rebalance a Stable group of 3: the leader rejoins (the rebalance
    starts), then a second member (parked); the timer runs from the third
    member's JoinGroup to the last SyncGroup answer."""
    members = form_group(port)
    times = []
    with ThreadPoolExecutor(3) as pool:
        for _ in range(rounds):
            leader = next(m for m in members if m.members)
            others = [m for m in members if m is not leader]
            parked = [pool.submit(leader.join_and_sync)]
            time.sleep(0.02)
            parked.append(pool.submit(others[0].join_and_sync))
            time.sleep(0.02)
            started = time.perf_counter()
            others[1].join_and_sync()
            for future in parked:
                future.result(timeout=30)
            times.append((time.perf_counter() - started) * 1000)
            assert len({m.generation for m in members}) == 1
    for member in members:
        member.close()
    return times


def death_to_stable_ms(port: int, rounds: int) -> list[float]:
    """One of 3 members goes silent; survivors heartbeat every 50 ms and
    rejoin on REBALANCE_IN_PROGRESS. Returns ms from the silent member's
    last heartbeat to the survivors' Stable group."""
    results = []
    for _ in range(rounds):
        members = form_group(port, session_ms=DEATH_SESSION_MS)
        victim, survivors = members[0], members[1:]
        victim.heartbeat()
        silent_since = time.perf_counter()

        def survive(member: RawMember) -> float:
            while member.heartbeat() == ErrorCode.NONE:
                time.sleep(HEARTBEAT_EVERY_S)
            member.join_and_sync()
            return time.perf_counter()

        with ThreadPoolExecutor(len(survivors)) as pool:
            stable_at = max(pool.map(survive, survivors, timeout=30))
        assert len({m.generation for m in survivors}) == 1
        results.append((stable_at - silent_since) * 1000)
        for member in members:
            member.close()
    return results


def commits_per_second(port: int, commits: int, connections: int) -> float:
    group = f"bench-commits-{uuid.uuid4().hex[:8]}"

    def run(index: int) -> None:
        client = WireClient(port)
        body = {"group_id": f"{group}-{index}", "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                         "committed_leader_epoch": -1,
                                                         "committed_metadata": ""}]}]}
        partition = body["topics"][0]["partitions"][0]
        for offset in range(commits // connections):
            partition["committed_offset"] = offset
            response = client.request(ApiKey.OFFSET_COMMIT, 7, body)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
        client.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(run, range(connections)))
    return commits / (time.perf_counter() - started)


def in_process_commits_per_second(commits: int) -> float:
    """GroupCoordinator.commit_offsets on real logs: coordinator + append cost."""
    from kcore.config import BrokerConfig, parse_topic_configs
    from kcore.controller.local import LocalController
    from kcore.coordinator.group import GroupConfig, GroupCoordinator, GroupMetadataManager
    from kcore.coordinator.group.records import OffsetValue
    from kcore.log.manager import LogManager
    from kcore.replication.replica_manager import ReplicaManager

    async def run(directory: Path) -> float:
        config = BrokerConfig({"log.dirs": str(directory)})
        log_manager = LogManager([directory], config.topic_defaults())
        replicas = ReplicaManager(0, log_manager, config.topic_defaults(), 86_400_000,
                                  topic_overrides=lambda topic: parse_topic_configs(
                                      controller.topic(topic).configs))
        controller = LocalController(directory, 0, replicas)
        coordinator = GroupCoordinator(GroupConfig.from_broker_config(config),
                                       GroupMetadataManager(controller, replicas, 50))
        replicas.leadership_listeners.append(coordinator.on_leadership_change)
        coordinator.start()
        await controller.start()
        await coordinator.manager.ensure_topic()
        started = time.perf_counter()
        for offset in range(commits):
            errors = coordinator.commit_offsets("bench", "", None, -1,
                                                {("t", 0): OffsetValue(offset, -1, "", 0)})
            assert errors[("t", 0)] == ErrorCode.NONE
        rate = commits / (time.perf_counter() - started)
        coordinator.shutdown()
        replicas.shutdown()
        log_manager.shutdown()
        return rate

    with tempfile.TemporaryDirectory() as directory:
        return asyncio.run(run(Path(directory)))


def confluent_takeover_s(broker: BrokerProcess, directory: Path) -> float:
    from kcore.bench.groups import scenario_member_killed
    return scenario_member_killed(broker, directory, "confluent")


def measure(rounds: int, commits: int, with_clients: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        broker = BrokerProcess(Path(directory) / "data", BROKER_SETTINGS).start()
        try:
            client = WireClient(broker.port)
            client.request(ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1,
                            "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
            client.request(ApiKey.FIND_COORDINATOR, 2, {"key": "warm-up", "key_type": 0})
            client.close()
            join = join_to_stable_ms(broker.port, rounds)
            death = death_to_stable_ms(broker.port, max(3, rounds // 4))
            figures = {
                "join_to_stable_ms_p50": statistics.median(join),
                "join_to_stable_ms_max": max(join),
                "death_to_stable_ms_p50": statistics.median(death),
                "beyond_session_timeout_ms_p50": statistics.median(death) - DEATH_SESSION_MS,
                "commits_per_s_1_connection": commits_per_second(broker.port, commits, 1),
                "commits_per_s_4_connections": commits_per_second(broker.port, commits, 4),
                "commits_per_s_in_process": in_process_commits_per_second(commits),
            }
            if with_clients:
                figures["confluent_kill_to_takeover_s"] = confluent_takeover_s(
                    broker, Path(directory))
            return figures
        finally:
            broker.kill()


def test_group_coordinator_figures(benchmark, report):
    figures = benchmark.pedantic(measure, args=(5, 2000, False), rounds=1, iterations=1)
    report("groups", **figures)
    assert figures["join_to_stable_ms_p50"] < 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--no-clients", action="store_true", help="skip the confluent-kafka run")
    args = parser.parse_args()
    figures = measure(args.rounds, args.commits, not args.no_clients)
    for name, value in figures.items():
        print(f"{name:32s} {value:12.1f}")
    print(json.dumps({"bench": "groups", **{k: round(v, 2) for k, v in figures.items()}}))


if __name__ == "__main__":
    main()
