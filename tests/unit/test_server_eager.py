"""Produce and Fetch handlers start in the callback that read them.

server/eager.py runs a coroutine to its first wait and hands the rest to a
task; these tests pin what a task would have done: the result or the
error, the wait, the cancellation thrown into the handler, and on a
connection the order of the answers (test_server_connection_close.py: a
started Produce left to finish when its client goes away).
"""
import asyncio
import struct

from kcore import protocol
from kcore.protocol.api_keys import ApiKey
from kcore.server import eager
from kcore.server.connection import REQUEST_TASK, KafkaConnection
from tests.support.connections import serve


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_a_handler_that_does_not_wait_is_answered_before_the_loop_turns():
    async def handler():
        return "answer"

    async def scenario():
        future = eager.start(asyncio.get_running_loop(), handler(), REQUEST_TASK)
        return future.done(), future.result()
    assert run(scenario()) == (True, "answer")


def test_a_handler_that_fails_at_once_gives_its_error_to_the_answer():
    async def handler():
        raise ValueError("bad request")

    async def scenario():
        future = eager.start(asyncio.get_running_loop(), handler(), REQUEST_TASK)
        return future.done(), repr(future.exception())
    assert run(scenario()) == (True, "ValueError('bad request')")


def test_a_handler_that_waits_goes_on_in_a_request_task():
    async def handler(release: asyncio.Event, steps: list):
        steps.append("started")
        await release.wait()
        await asyncio.sleep(0)  # a bare yield, which the task reschedules
        steps.append("released")
        return len(steps)

    async def scenario():
        release, steps = asyncio.Event(), []
        future = eager.start(asyncio.get_running_loop(), handler(release, steps), REQUEST_TASK)
        started = (list(steps), future.done(), future.get_name())
        release.set()
        return started, await future
    assert run(scenario()) == ((["started"], False, REQUEST_TASK), 2)


def test_an_error_set_on_what_the_handler_waits_for_reaches_the_handler():
    async def handler(waited: asyncio.Future):
        try:
            await waited
        except KeyError as exc:
            return f"caught {exc}"
        return "not caught"

    async def scenario():
        waited = asyncio.get_running_loop().create_future()
        future = eager.start(asyncio.get_running_loop(), handler(waited), REQUEST_TASK)
        waited.set_exception(KeyError("gone"))
        return await future
    assert run(scenario()) == "caught 'gone'"


def test_a_first_step_outside_any_task_may_wait_with_a_timeout():
    """A fetch session's wait (asyncio.wait_for) in the first step, started
    from a callback as the read callback starts it: Python 3.12's wait_for
    needs a current task, which only its eager task start provides."""
    async def handler():
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.get_running_loop().create_future()), 0.01)
        except TimeoutError:
            return "timed out"
        return "woken"

    async def scenario():
        loop = asyncio.get_running_loop()
        started: list[asyncio.Future] = []
        loop.call_soon(lambda: started.append(eager.start(loop, handler(), REQUEST_TASK)))
        while not started:
            await asyncio.sleep(0)
        return await started[0]
    assert run(scenario()) == "timed out"


def test_cancelling_the_task_cancels_the_handler_where_it_waits():
    async def handler(outcome: list):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    async def scenario():
        outcome: list = []
        future = eager.start(asyncio.get_running_loop(), handler(outcome), REQUEST_TASK)
        await asyncio.sleep(0)
        future.cancel()
        try:
            await future
        except asyncio.CancelledError:
            outcome.append("task cancelled")
        return outcome
    assert run(scenario()) == ["cancelled", "task cancelled"]


# -- on a connection -----------------------------------------------------------

def _produce(correlation_id: int) -> bytes:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None}]}]}
    return protocol.encode_request(ApiKey.PRODUCE, 9, correlation_id, "eager", body)


def _metadata(correlation_id: int) -> bytes:
    return protocol.encode_request(ApiKey.METADATA, 1, correlation_id, "eager", {"topics": []})


def _answer(request) -> dict:
    if request.api_key == ApiKey.PRODUCE:
        return {"responses": [], "throttle_time_ms": 0}
    return {"brokers": [], "topics": []}


async def _correlation_ids(reader: asyncio.StreamReader, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        size, = struct.unpack(">i", await reader.readexactly(4))
        ids.append(struct.unpack_from(">i", await reader.readexactly(size))[0])
    return ids


def test_produce_runs_in_the_read_callback_and_metadata_in_a_task():
    seen: list = []

    async def dispatch(context, request):
        seen.append((ApiKey(request.api_key).name, Watched.reading))
        return _answer(request)

    class Watched(KafkaConnection):
        """Notes whether the read callback is running."""
        reading = False

        def buffer_updated(self, nbytes: int) -> None:
            Watched.reading = True
            try:
                super().buffer_updated(nbytes)
            finally:
                Watched.reading = False

    async def scenario():
        server, port, _ = await serve(dispatch, Watched)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_metadata(1) + _produce(2) + _metadata(3) + _produce(4))
        ids = await _correlation_ids(reader, 4)
        writer.close()
        server.close()
        return ids
    assert run(scenario()) == [1, 2, 3, 4]
    assert sorted(seen) == [("METADATA", False), ("METADATA", False), ("PRODUCE", True), ("PRODUCE", True)]


def test_answers_leave_in_request_order_when_the_first_waits():
    release = None

    async def dispatch(context, request):
        if request.header.correlation_id == 1:
            await release.wait()
        return _answer(request)

    async def scenario():
        nonlocal release
        release = asyncio.Event()
        server, port, connections = await serve(dispatch)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_produce(1) + _produce(2))
        while len(connections[0]._pending) < 2:
            await asyncio.sleep(0.01)
        second_ready = connections[0]._pending[1].done()
        release.set()
        ids = await _correlation_ids(reader, 2)
        writer.close()
        server.close()
        return second_ready, ids
    assert run(scenario()) == (True, [1, 2])


class _Writes:
    """A transport that counts the connection's writes and passes them on."""

    def __init__(self, transport):
        self._transport = transport
        self.writes = 0

    def writelines(self, chunks):
        self.writes += 1
        self._transport.writelines(chunks)

    def __getattr__(self, name):
        return getattr(self._transport, name)


class _Counted(KafkaConnection):
    """Notes, after each read callback, whether answers were left queued."""

    left_queued: list[int] = []

    def connection_made(self, transport):
        super().connection_made(_Writes(transport))

    def buffer_updated(self, nbytes: int) -> None:
        super().buffer_updated(nbytes)
        _Counted.left_queued.append(len(self._pending))


def test_answers_ready_in_the_read_callback_leave_in_it_in_one_write():
    """Produce answers that no handler waited for go out before the read
    callback returns (no wake-up of the sender), several in one writev."""
    async def dispatch(context, request):
        return _answer(request)

    async def scenario():
        _Counted.left_queued = []
        server, port, connections = await serve(dispatch, _Counted)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.05)  # the sender starts and waits for work
        writer.write(_produce(1) + _produce(2) + _produce(3))
        ids = await _correlation_ids(reader, 3)
        writes = connections[0]._transport.writes
        writer.close()
        server.close()
        return ids, writes, _Counted.left_queued
    ids, writes, left_queued = run(scenario())
    assert ids == [1, 2, 3] and writes == 1
    assert left_queued and all(count == 0 for count in left_queued)


def test_an_answer_behind_one_that_waits_leaves_after_it():
    """A ready answer behind a waiting one stays queued for the sender."""
    release = None

    async def dispatch(context, request):
        if request.api_key == ApiKey.METADATA:
            await release.wait()
        return _answer(request)

    async def scenario():
        nonlocal release
        release = asyncio.Event()
        _Counted.left_queued = []
        server, port, connections = await serve(dispatch, _Counted)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.05)
        writer.write(_metadata(1) + _produce(2))
        while not _Counted.left_queued:
            await asyncio.sleep(0.01)
        queued = _Counted.left_queued[0]
        release.set()
        ids = await _correlation_ids(reader, 2)
        writer.close()
        server.close()
        return queued, ids
    assert run(scenario()) == (2, [1, 2])
