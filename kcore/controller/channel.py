"""The active controller's connections to every live broker (itself too).

One sender per broker keeps a queue and sends one request at a time,
waiting for its answer before the next, so a broker applies the
controller's requests in the order they were decided. A request that cannot
be delivered (connection refused or lost) is retried, on a new connection,
after ``RETRY_BACKOFF_S``, until it is or the broker leaves the live set
(Kafka's ControllerChannelManager and RequestSendThread).

Not thread-safe: tasks on the controller's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from kcore.client.connection import BrokerConnection
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.inter_broker import inter_broker_security
from kcore.metadata import BrokerInfo

log = logging.getLogger(__name__)

# Between delivery attempts to a broker that does not answer: short, because
# a broker that just registered is listening already (it listens first).
RETRY_BACKOFF_S = 0.1
REQUEST_TIMEOUT_S = 30.0

ResponseCallback = Callable[[Any], None]


class BrokerSender:
    """Requests to one broker, in order (see module doc)."""

    def __init__(self, broker: BrokerInfo, controller_id: int):
        self.broker = broker
        self._client_id = f"kcore-controller-{controller_id}"
        self._queue: asyncio.Queue[tuple[int, int, dict, ResponseCallback | None]] = asyncio.Queue()
        self._connection: BrokerConnection | None = None
        self._unanswered = 0
        self._task = asyncio.get_running_loop().create_task(self._run())

    def enqueue(self, api_key: int, version: int, body: dict,
                on_response: ResponseCallback | None = None) -> None:
        self._queue.put_nowait((api_key, version, body, on_response))
        self._unanswered += 1

    @property
    def pending(self) -> int:
        """Requests enqueued and not answered yet (the one in flight too)."""
        return self._unanswered

    async def drained(self) -> None:
        """Every request enqueued so far is answered."""
        await self._queue.join()

    async def _run(self) -> None:
        while True:
            api_key, version, body, on_response = await self._queue.get()
            try:
                response = await self._deliver(api_key, version, body)
                if on_response is not None:
                    on_response(response)
            except Exception:
                log.exception("handling broker %d's answer failed", self.broker.broker_id)
            finally:
                self._unanswered -= 1
                self._queue.task_done()

    async def _deliver(self, api_key: int, version: int, body: dict) -> Any:
        while True:
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = await BrokerConnection.open(
                        self.broker.host, self.broker.port, client_id=self._client_id,
                        request_timeout_s=REQUEST_TIMEOUT_S, connect_timeout_s=REQUEST_TIMEOUT_S,
                        security=inter_broker_security())
                return await self._connection.request(api_key, body, version=version)
            except (BrokerConnectionError, KafkaError, OSError) as exc:
                log.debug("controller request %d to broker %d failed: %s; retrying", api_key,
                          self.broker.broker_id, exc)
                self._close()
                await asyncio.sleep(RETRY_BACKOFF_S)

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def stop(self) -> None:
        self._task.cancel()
        self._close()


class ControllerChannel:
    """A sender per live broker, added and removed as brokers come and go."""

    def __init__(self, controller_id: int):
        self.controller_id = controller_id
        self.senders: dict[int, BrokerSender] = {}

    def add_broker(self, broker: BrokerInfo) -> None:
        current = self.senders.get(broker.broker_id)
        if current is not None and current.broker == broker:
            return
        if current is not None:
            current.stop()
        self.senders[broker.broker_id] = BrokerSender(broker, self.controller_id)

    def remove_broker(self, broker_id: int) -> None:
        sender = self.senders.pop(broker_id, None)
        if sender is not None:
            sender.stop()

    async def drained(self, broker_ids: Iterable[int] | None = None) -> None:
        """Every live broker (of ``broker_ids``, else all) answered what was
        sent to it so far."""
        senders = list(self.senders.values()) if broker_ids is None else \
            [self.senders[b] for b in broker_ids if b in self.senders]
        await asyncio.gather(*(sender.drained() for sender in senders))

    def send(self, broker_id: int, api_key: int, version: int, body: dict,
             on_response: ResponseCallback | None = None) -> None:
        sender = self.senders.get(broker_id)
        if sender is None:
            log.debug("no sender for broker %d; request %d dropped", broker_id, api_key)
            return
        sender.enqueue(api_key, version, body, on_response)

    def close(self) -> None:
        for sender in self.senders.values():
            sender.stop()
        self.senders.clear()
