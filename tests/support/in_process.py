"""A broker's replica manager and handlers in this process, reached through
the real protocol codecs: each request is encoded, decoded, handled, and
its answer encoded (records read from the segment files) and decoded, as
over a socket. A ``BrokerConnection`` stand-in for the follower fetcher."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from kcore import protocol
from kcore.clock import SYSTEM_CLOCK, Clock
from kcore.config import BrokerConfig
from kcore.handlers import HANDLERS
from kcore.log.file_slice import FileSlice
from kcore.log.manager import LogManager
from kcore.metadata import BrokerInfo, PartitionState
from kcore.metrics import BrokerStats
from kcore.replication.replica_manager import ReplicaManager
from kcore.security.quotas import ClientQuotas
from kcore.server.connection import ConnectionContext

TOPIC_DEFAULTS = BrokerConfig().topic_defaults()


class InProcessBroker:
    """Broker ``broker_id`` with its log dir under ``root``."""

    def __init__(self, root: Path, broker_id: int, session_slots: int = 1000,
                 lag_ms: int = 30_000, clock: Clock = SYSTEM_CLOCK):
        self.info = BrokerInfo(broker_id, "127.0.0.1", 9000 + broker_id, None)
        self.logs = LogManager([root / f"broker-{broker_id}"], TOPIC_DEFAULTS)
        self.replica_manager = ReplicaManager(broker_id, self.logs, TOPIC_DEFAULTS, 86_400_000,
                                              replica_lag_time_max_ms=lag_ms,
                                              fetch_session_cache_slots=session_slots, clock=clock)
        self.facade = SimpleNamespace(replica_manager=self.replica_manager, stats=BrokerStats(),
                                      authorizer=None, quotas=ClientQuotas())
        self.requests: list = []  # every decoded request, for tests to look at
        self.closed = False
        # What a BrokerConnection learnt from ApiVersions (the fetcher reads it).
        self.broker_versions = {int(key): span for key, span in protocol.SUPPORTED_VERSIONS.items()}

    def lead(self, topic: str, partitions: int, replicas: tuple[int, ...] = (),
             leader_epoch: int = 1) -> None:
        """LeaderAndIsr: this broker leads ``partitions`` of ``topic``."""
        replicas = replicas or (self.info.broker_id,)
        states = [PartitionState(topic, index, replicas[0], leader_epoch, replicas, replicas, 1, 1)
                  for index in range(partitions)]
        self.replica_manager.on_update_metadata(1, 1, [self.info], states)
        self.replica_manager.on_leader_and_isr(1, 1, states, [self.info])

    async def request(self, api_key: int, body: dict, version: int, timeout_s: float = 30.0):
        """What a BrokerConnection.request returns, through the codecs."""
        frame = protocol.encode_request(api_key, version, len(self.requests), "test", body)
        decoded = protocol.decode_request(memoryview(frame)[4:])
        self.requests.append(decoded)
        answer = await HANDLERS[api_key](self.facade, ConnectionContext(None, "PLAINTEXT", 0), decoded)
        chunks = protocol.encode_response(decoded.header, answer)
        data = b"".join(os.pread(c.fd, c.size, c.position) if isinstance(c, FileSlice) else bytes(c)
                        for c in chunks)
        return protocol.decode_response(api_key, version, memoryview(data)[4:])[1]

    def close(self) -> None:
        self.closed = True
        self.replica_manager.shutdown()
        self.logs.shutdown()
