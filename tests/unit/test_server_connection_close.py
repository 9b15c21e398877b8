"""A client that goes away mid-request: the broker finishes what it started.

A coordinator's state change is an append followed by an in-memory
transition; cancelling the handler between the two left a transactional
id answering CONCURRENT_TRANSACTIONS until the broker restarted (the
fault suite's hanging transaction after a processor was SIGKILLed).
"""
import asyncio
import socket

import pytest

from kcore import protocol
from kcore.protocol.api_keys import ApiKey
from tests.support.connections import serve

METADATA = (ApiKey.METADATA, 1, {"topics": []})
# Produce starts in the read callback (server/eager.py) and goes on in a task.
PRODUCE = (ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                               "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None}]}]})
ANSWERS = {ApiKey.METADATA: {"brokers": [], "topics": []},
           ApiKey.PRODUCE: {"responses": [], "throttle_time_ms": 0}}


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


async def _send_and_vanish(port: int, sent: tuple) -> None:
    api_key, version, body = sent
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(protocol.encode_request(api_key, version, 1, "vanishing", body))
    sock.close()


def _dispatch_waiting_for(release: asyncio.Event, started: asyncio.Event, outcome: list):
    async def dispatch(context, request):
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        outcome.append("finished")
        return ANSWERS[request.api_key]
    return dispatch


@pytest.mark.parametrize("sent", [METADATA, PRODUCE], ids=["task", "eager"])
def test_a_request_whose_client_closed_runs_to_its_end(sent):
    async def scenario():
        release, started, outcome = asyncio.Event(), asyncio.Event(), []
        server, port, connections = await serve(_dispatch_waiting_for(release, started, outcome))
        await _send_and_vanish(port, sent)
        await asyncio.wait_for(started.wait(), 5)
        while not connections[0]._closed:
            await asyncio.sleep(0.01)
        release.set()
        for _ in range(100):
            if outcome:
                break
            await asyncio.sleep(0.01)
        server.close()
        return outcome
    assert run(scenario()) == ["finished"]


@pytest.mark.parametrize("sent", [METADATA, PRODUCE], ids=["task", "eager"])
def test_a_stopping_broker_cancels_what_its_connections_were_handling(sent):
    async def scenario():
        release, started, outcome = asyncio.Event(), asyncio.Event(), []
        server, port, connections = await serve(_dispatch_waiting_for(release, started, outcome))
        sock = socket.create_connection(("127.0.0.1", port))
        api_key, version, body = sent
        sock.sendall(protocol.encode_request(api_key, version, 1, "staying", body))
        await asyncio.wait_for(started.wait(), 5)
        connections[0].shutdown()
        for _ in range(100):
            if outcome:
                break
            await asyncio.sleep(0.01)
        sock.close()
        server.close()
        return outcome
    assert run(scenario()) == ["cancelled"]
