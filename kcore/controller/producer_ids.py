"""Producer id allocation for idempotent producers (InitProducerId).

Ids are handed out from blocks of BLOCK_SIZE, so an allocation costs no
write except once per block, and no id is ever handed out twice:

- a node persists only the end of the last block claimed
  (``__producer_id_block`` in its first log dir, fsynced before any id of
  the block is used, claimed under a flock so the broker processes of a
  multi-process node share it safely), so a restart skips the rest of the
  block;
- in a cluster every broker claims its blocks from ZooKeeper's
  ``/latest_producer_id_block`` (Kafka's layout:
  ``{"version":1,"broker":N,"block_start":"S","block_end":"E"}``, end
  inclusive), with a write conditional on the version it read, so two
  brokers never claim the same block. Without it two brokers would give two
  producers the same id, and each partition leader would take one for the
  other's retries.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import os
from pathlib import Path

from kcore.controller.zk_client import BadVersionError, NodeExistsError, NoNodeError, ZkClient

# Kafka's controller hands out blocks of 1000 ids to each broker.
BLOCK_SIZE = 1000
BLOCK_FILE = "__producer_id_block"
BLOCK_LOCK_FILE = "__producer_id_block.lock"
ZK_BLOCK_PATH = "/latest_producer_id_block"


class ProducerIdManager:
    """A node's ids (see module doc): blocks claimed from the block file
    under an exclusive flock, so the broker processes of one node (which
    share the file in the node's first log dir) never claim the same."""

    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / BLOCK_FILE
        self._lock_path = Path(data_dir) / BLOCK_LOCK_FILE
        self._next = 0
        self._block_end = 0  # exclusive

    async def next_id(self) -> int:
        if self._next >= self._block_end:
            self._next, self._block_end = self._claim_block()
        producer_id = self._next
        self._next += 1
        return producer_id

    def _claim_block(self) -> tuple[int, int]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = self._read_block_end()
            self._write_block_end(start + BLOCK_SIZE)
            return start, start + BLOCK_SIZE
        finally:
            os.close(fd)

    def _read_block_end(self) -> int:
        try:
            return int(self._path.read_text().strip())
        except FileNotFoundError:
            return 0

    def _write_block_end(self, value: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            handle.write(f"{value}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._path)


class ZkProducerIdManager:
    """A cluster broker's ids, from blocks claimed in ZooKeeper."""

    def __init__(self, zk: ZkClient, broker_id: int):
        self._zk = zk
        self._broker_id = broker_id
        self._next = 0
        self._block_end = 0  # exclusive
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next >= self._block_end:
                self._next, self._block_end = await self._claim_block()
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _claim_block(self) -> tuple[int, int]:
        while True:
            try:
                data, stat = await self._zk.get(ZK_BLOCK_PATH)
                start = int(json.loads(data)["block_end"]) + 1 if data else 0
                version = stat.version
            except NoNodeError:
                start, version = 0, None
            value = json.dumps({"version": 1, "broker": self._broker_id, "block_start": str(start),
                                "block_end": str(start + BLOCK_SIZE - 1)}).encode()
            try:
                if version is None:
                    await self._zk.create(ZK_BLOCK_PATH, value)
                else:
                    await self._zk.set(ZK_BLOCK_PATH, value, version=version)
                return start, start + BLOCK_SIZE
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed a block meanwhile: claim the next
