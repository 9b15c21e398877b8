"""Producer id allocation for idempotent producers (InitProducerId).

Ids are handed out from blocks of BLOCK_SIZE; only the end of the current
block is persisted (`__producer_id_block` in the data dir, fsynced before
any id of the block is used), so a restart never reuses an id and an
allocation costs no disk write except once per block.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import os
from pathlib import Path

# Kafka's controller hands out blocks of 1000 ids to each broker.
BLOCK_SIZE = 1000
BLOCK_FILE = "__producer_id_block"


class ProducerIdManager:
    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / BLOCK_FILE
        self._next = self._read_block_end()
        self._block_end = self._next

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + BLOCK_SIZE
            self._write_block_end(self._block_end)
        producer_id = self._next
        self._next += 1
        return producer_id

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
