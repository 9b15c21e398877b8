"""kcore.metadata_store.zk_client against real ZooKeeper servers, on uvloop.

Nothing is mocked: each test gets its own standalone server or 3-server
ensemble (tests/cluster/conftest.py). Every scenario runs under a deadline,
and every wait for a callback is bounded.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from kazoo.client import KazooClient

from kcore.metadata_store.zk_client import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionEvent,
    SetOp,
    Stat,
    ZkClient,
    ZkUnreachableError,
)
from tests.support import free_port
from tests.support.scenario import run
from tests.support.tcp_relay import TcpRelay

SESSION_TIMEOUT_S = 4.0
CALLBACK_TIMEOUT_S = 5.0


def client(connect: str, **kwargs) -> ZkClient:
    return ZkClient(connect, session_timeout_s=kwargs.pop("session_timeout_s", SESSION_TIMEOUT_S),
                    **kwargs)


class Recorder:
    """A callback that queues its arguments with the thread it ran on;
    next() checks that thread was the loop's. Create it on the loop."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.calls: asyncio.Queue = asyncio.Queue()

    def __call__(self, *args) -> None:
        self.calls.put_nowait((threading.get_ident(), args))

    async def next(self):
        thread, args = await asyncio.wait_for(self.calls.get(), CALLBACK_TIMEOUT_S)
        assert thread == self.loop_thread, "callback ran off the event loop thread"
        return args[0] if len(args) == 1 else args

    async def until(self, expected):
        """Skip calls until one equals `expected` (bounded)."""
        seen = []
        while (value := await self.next()) != expected:
            seen.append(value)
            assert len(seen) < 20, seen
        return seen


def test_create_get_set_check_versions(zookeeper):
    async def scenario():
        async with client(zookeeper.connect_string) as zk:
            path = await zk.create("/brokers/ids/1", b'{"port":9092}', makepath=True)
            assert path == "/brokers/ids/1"
            data, stat = await zk.get(path)
            assert data == b'{"port":9092}'
            assert (stat.version, stat.ephemeral_owner, stat.num_children) == (0, 0, 0)
            with pytest.raises(NodeExistsError):
                await zk.create(path)
            with pytest.raises(NoNodeError):
                await zk.create("/missing/parent/node")

            updated = await zk.set(path, b"v1", version=0)
            assert (updated.version, updated.czxid) == (1, stat.czxid)
            with pytest.raises(BadVersionError) as stale:
                await zk.set(path, b"stale", version=0)
            assert stale.value.path == path
            assert await zk.get(path) == (b"v1", updated)
            assert (await zk.set(path, b"any version")).version == 2

            first = await zk.create("/seq/n-", sequential=True, makepath=True)
            second = await zk.create("/seq/n-", sequential=True)
            assert first.startswith("/seq/n-") and second > first
            assert sorted(await zk.get_children("/seq")) == [first[5:], second[5:]]
            later = await zk.exists(second)
            assert later.czxid > stat.czxid  # creation order: Kafka's broker epoch
            assert await zk.exists("/nope") is None
            with pytest.raises(NoNodeError):
                await zk.get("/nope")
    run(scenario)


def test_delete_checks_version_and_children_and_removes_trees(zookeeper):
    async def scenario():
        async with client(zookeeper.connect_string) as zk:
            await zk.create("/t/a/b/c", b"x", makepath=True)
            await zk.create("/t/d", b"x")
            with pytest.raises(NotEmptyError):
                await zk.delete("/t")
            with pytest.raises(BadVersionError):
                await zk.delete("/t/d", version=3)
            await zk.delete("/t/d", version=0)
            with pytest.raises(NoNodeError):
                await zk.delete("/t/d")
            await zk.delete("/t", recursive=True)
            assert await zk.exists("/t") is None
            with pytest.raises(NoNodeError):
                await zk.delete("/t", recursive=True)
    run(scenario)


def kazoo_threads() -> list[threading.Thread]:
    """kazoo's connection and worker threads (named after their targets)."""
    return [t for t in threading.enumerate()
            if t.name.endswith(("(zk_loop)", "(_thread_worker)"))]


def test_ephemeral_node_vanishes_when_its_session_closes(zookeeper):
    async def scenario():
        async with client(zookeeper.connect_string) as observer:
            broker = client(zookeeper.connect_string)
            await broker.start()
            await broker.create("/brokers/ids/1", b"{}", ephemeral=True, makepath=True)
            stat = await observer.exists("/brokers/ids/1")
            assert stat.ephemeral_owner == broker.session_id != observer.session_id
            await broker.close()
            assert await observer.exists("/brokers/ids/1") is None
            assert await observer.exists("/brokers/ids") is not None
        assert kazoo_threads() == []
    run(scenario)


def test_watches_call_back_on_the_loop_thread(zookeeper):
    async def scenario():
        async with client(zookeeper.connect_string) as zk, \
                client(zookeeper.connect_string) as other:
            await zk.create("/brokers/ids", makepath=True)
            children, data = Recorder(), Recorder()
            children_watch = await zk.watch_children("/brokers/ids", children)
            await zk.watch_data("/controller", data)
            assert await children.next() == []
            assert await data.next() == (None, None)

            await other.create("/brokers/ids/1", ephemeral=True)
            assert await children.next() == ["1"]
            await other.create("/controller", b'{"brokerid":1}', ephemeral=True)
            value, stat = await data.next()
            assert value == b'{"brokerid":1}' and isinstance(stat, Stat)
            assert stat.ephemeral_owner == other.session_id
            await other.set("/controller", b'{"brokerid":2}')
            assert (await data.next())[0] == b'{"brokerid":2}'
            await other.delete("/controller")
            assert await data.next() == (None, None)

            children_watch.cancel()
            await other.create("/brokers/ids/2", ephemeral=True)
            await other.create("/controller", b"sync")  # kazoo calls back in order
            assert (await data.next())[0] == b"sync"
            assert children.calls.empty()

            with pytest.raises(NoNodeError):
                await zk.watch_children("/no/such/node", Recorder())
    run(scenario)


def test_multi_is_all_or_nothing(zookeeper):
    async def scenario():
        async with client(zookeeper.connect_string) as zk:
            await zk.create("/state", b"leader=1")
            await zk.create("/old")
            with pytest.raises(BadVersionError) as failed:
                await zk.multi([CreateOp("/new", b"n"), SetOp("/state", b"leader=2"),
                                DeleteOp("/old"), CheckOp("/state", 7)])
            assert failed.value.op_index == 3 and failed.value.path == "/state"
            assert await zk.exists("/new") is None
            assert await zk.get("/state") == (b"leader=1", await zk.exists("/state"))
            assert (await zk.exists("/state")).version == 0
            assert await zk.exists("/old") is not None
            with pytest.raises(NodeExistsError) as exists:
                await zk.multi([CreateOp("/new"), CreateOp("/old")])
            assert exists.value.op_index == 1 and await zk.exists("/new") is None

            results = await zk.multi([CheckOp("/state", 0), CreateOp("/new", b"n"),
                                      SetOp("/state", b"leader=2", 0), DeleteOp("/old")])
            assert results[0] is None and results[1] == "/new" and results[3] is None
            assert results[2].version == 1
            assert (await zk.get("/state"))[0] == b"leader=2"
            assert await zk.exists("/old") is None
    run(scenario)


def test_chroot_is_created_and_isolates(zookeeper):
    async def scenario():
        root = zookeeper.connect_string
        async with client(root + "/kcore/a") as a, client(root + "/kcore/b") as b, \
                client(root) as whole:
            assert sorted(await whole.get_children("/kcore")) == ["a", "b"]
            assert await a.create("/brokers/ids/1", b"a", makepath=True) == "/brokers/ids/1"
            assert (await whole.get("/kcore/a/brokers/ids/1"))[0] == b"a"
            assert await b.get_children("/") == []
            assert await b.exists("/brokers/ids/1") is None
            assert await b.multi([CreateOp("/x", b"b")]) == ["/x"]
            assert await whole.exists("/kcore/b/x") is not None
            assert await whole.exists("/x") is None
            names = Recorder()
            await a.watch_children("/brokers/ids", names)
            assert await names.next() == ["1"]
    run(scenario)


def test_unreachable_ensemble_fails_within_the_connection_timeout(zookeeper):
    """The connection timeout (1 s) ends start(), not the session timeout
    (20 s) nor kazoo's endless reconnecting: the failure comes no sooner
    than the first and well before the second, which a loaded machine
    cannot blur (a wall-clock bound near 1 s could)."""
    connection_timeout_s, session_timeout_s = 1.0, 20.0

    async def connect(connect_string: str) -> float:
        started = time.monotonic()
        with pytest.raises(ZkUnreachableError, match="no ZooKeeper server"):
            await client(connect_string, connection_timeout_s=connection_timeout_s,
                         session_timeout_s=session_timeout_s).start()
        return time.monotonic() - started

    async def scenario():
        nobody = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
        assert connection_timeout_s * 0.9 < await connect(nobody) < session_timeout_s / 2
        zookeeper.pause()  # accepts TCP connections, never answers
        try:
            waited = await connect(zookeeper.connect_string + "/kcore")
            assert connection_timeout_s * 0.9 < waited < session_timeout_s / 2
        finally:
            zookeeper.resume()
    run(scenario)


def test_session_expiry_is_reported_then_a_new_session(zookeeper):
    """A second client takes over the session (same id and password) and
    closes it: ZooKeeper's own recipe for expiring a session on purpose."""
    async def expire(zk: ZkClient) -> None:
        def take_over_and_close():
            thief = KazooClient(zookeeper.connect_string, client_id=zk._kazoo.client_id)
            thief.start(timeout=CALLBACK_TIMEOUT_S)
            thief.stop()
            thief.close()
        await asyncio.to_thread(take_over_and_close)

    async def scenario():
        zk, events, broker_ids = client(zookeeper.connect_string), Recorder(), Recorder()
        zk.add_session_listener(events)
        await zk.start()
        try:
            assert await events.next() == SessionEvent.CONNECTED
            await zk.create("/brokers/ids/1", ephemeral=True, makepath=True)
            old_session, old_epoch = zk.session_id, (await zk.exists("/brokers/ids/1")).czxid
            await zk.watch_children("/brokers/ids", broker_ids)
            assert await broker_ids.next() == ["1"]

            await expire(zk)
            assert [await events.next() for _ in range(3)] == [
                SessionEvent.SUSPENDED, SessionEvent.EXPIRED, SessionEvent.NEW_SESSION]
            assert zk.session_id not in (None, old_session)
            assert await zk.exists("/brokers/ids/1") is None
            await broker_ids.until([])  # the watch carried on into the new session

            await zk.create("/brokers/ids/1", ephemeral=True)  # re-registration
            stat = await zk.exists("/brokers/ids/1")
            assert stat.czxid > old_epoch and stat.ephemeral_owner == zk.session_id
            await broker_ids.until(["1"])
        finally:
            await zk.close()
    run(scenario)


def test_ensemble_losing_its_leader_keeps_serving(zookeeper_ensemble):
    async def scenario():
        zk, events = client(zookeeper_ensemble.connect_string, session_timeout_s=8.0), Recorder()
        zk.add_session_listener(events)
        async with zk:
            await zk.create("/brokers/ids/1", ephemeral=True, makepath=True)
            await zk.create("/kept", b"before")
            session = zk.session_id
            leader = zookeeper_ensemble.leader()
            zookeeper_ensemble.stop_server(leader)
            # Sent before our server notices its leader is gone, the write
            # may be in flight when that server drops us: the client sends it
            # again once it reconnects, and it waits for the new quorum.
            await zk.set("/kept", b"after")
            assert (await zk.get("/kept"))[0] == b"after"
            await zk.create("/written-without-the-old-leader")
            assert (await zk.exists("/brokers/ids/1")).ephemeral_owner == session
            assert zookeeper_ensemble.leader() not in (None, leader)

            zookeeper_ensemble.start_server(leader)
            assert zookeeper_ensemble.servers[leader].mode() in ("follower", "leader")
            assert sorted(await zk.get_children("/")) == [
                "brokers", "kept", "written-without-the-old-leader", "zookeeper"]
        # Followers that lose their leader drop their clients too: every
        # client is suspended, then back in the same session.
        seen = []
        while not events.calls.empty():
            seen.append(await events.next())
        assert seen == [SessionEvent.CONNECTED, SessionEvent.SUSPENDED, SessionEvent.RECONNECTED]
    run(scenario)


# --- a request whose answer is lost --------------------------------------


class LostAnswers:
    """A client that talks to ZooKeeper through a TcpRelay, and a second
    one that does not: the relay drops answers (the request is served),
    then closes the connection, as a server dropping its clients does."""

    def __init__(self, zookeeper) -> None:
        self.relay = TcpRelay(zookeeper.client_port).start()
        self.zk = client(f"127.0.0.1:{self.relay.port}", session_timeout_s=8.0)
        self.direct = client(zookeeper.connect_string)

    async def __aenter__(self) -> LostAnswers:
        await self.zk.start()
        await self.direct.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.zk.close()
        await self.direct.close()
        self.relay.close()

    async def answer_lost(self, request, served) -> object:
        """Start `request` with its answer dropped, wait until `served()`
        (through the direct client) says ZooKeeper applied it, then drop
        the connection; what the request returns or raises."""
        self.relay.cut(answers_only=True)
        pending = asyncio.ensure_future(request)
        deadline = time.monotonic() + CALLBACK_TIMEOUT_S
        while not await served():
            assert time.monotonic() < deadline, "ZooKeeper never applied the request"
            await asyncio.sleep(0.02)
        assert not pending.done()
        self.relay.heal()  # closes the link that lost the answer
        return await pending


def test_a_write_whose_answer_is_lost_is_sent_again_and_counts_as_done(zookeeper):
    """As Kafka's ZooKeeperClient, a request in flight when the connection
    drops is sent again. Each write here was applied the first time, so the
    re-send fails (node exists, bad version, no node) and the client checks
    the znode: the write's own effect, so it returns as if answered."""
    async def scenario():
        async with LostAnswers(zookeeper) as lost:
            zk, direct = lost.zk, lost.direct

            async def exists(path):
                return await direct.exists(path) is not None

            assert await lost.answer_lost(zk.create("/made", b"m"), lambda: exists("/made")) == "/made"
            owner = zk.session_id
            assert await lost.answer_lost(zk.create("/mine", b"e", ephemeral=True),
                                          lambda: exists("/mine")) == "/mine"
            assert (await direct.exists("/mine")).ephemeral_owner == owner == zk.session_id

            async def set_to_1():
                return (await direct.exists("/made")).version == 1
            stat = await lost.answer_lost(zk.set("/made", b"m2", version=0), set_to_1)
            assert stat.version == 1 and (await direct.get("/made"))[0] == b"m2"

            async def gone():
                return not await exists("/mine")
            assert await lost.answer_lost(zk.delete("/mine"), gone) is None

            async def moved():
                return await exists("/moved")
            results = await lost.answer_lost(
                zk.multi([CheckOp("/made", 1), CreateOp("/moved", b"v"), SetOp("/made", b"m3", 1)]), moved)
            assert results[0] is None and results[1] == "/moved" and results[2].version == 2
    run(scenario)


def test_a_resent_write_that_another_client_beat_still_fails(zookeeper):
    """A request that never reached ZooKeeper (both directions cut) is sent
    again on the new connection; if another client wrote the znode in
    between, the re-send's error is the caller's, not hidden as done."""
    async def scenario():
        async with LostAnswers(zookeeper) as lost:
            zk, direct = lost.zk, lost.direct
            await direct.create("/shared", b"first")
            lost.relay.cut()
            create = asyncio.ensure_future(zk.create("/taken", b"mine"))
            update = asyncio.ensure_future(zk.set("/shared", b"mine", version=0))
            await asyncio.sleep(0.3)
            await direct.create("/taken", b"theirs")
            await direct.set("/shared", b"theirs", version=0)
            lost.relay.heal()
            with pytest.raises(NodeExistsError) as exists:
                await create
            with pytest.raises(BadVersionError) as moved:
                await update
            assert exists.value.resent and moved.value.resent
            assert (await zk.get("/taken"))[0] == (await zk.get("/shared"))[0] == b"theirs"
    run(scenario)
