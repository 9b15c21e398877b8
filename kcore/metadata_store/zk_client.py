"""ZooKeeper for the event loop: an asyncio facade over kazoo.

Threading model: kazoo runs a connection thread (socket I/O, pings,
session state), a completion thread (results of *_async calls) and a
callback thread (watch events and recipes) per client. No blocking kazoo
call runs on the event loop and no caller code on kazoo's threads:
results, watch notifications and session events cross over only by
`loop.call_soon_threadsafe`, in kazoo's order.

Requests use kazoo's *_async methods, so the loop thread only queues them:
an executor around the blocking methods costs as many thread hops but caps
the requests in flight at its pool size, while ZooKeeper pipelines any
number on one connection. On loopback (standalone ZooKeeper 3.8.0 on the
same 2-core machine, uvloop, load average ~2, medians of 5 rounds): one
get at a time 360-400 us vs 410-440 us through a 6-thread executor; 1000
concurrent creates 280-400 ms vs 580-670 ms. What kazoo offers only
blocking (session start, a watch recipe's first read) runs on this
client's own executor.

Concurrency contract: a ZkClient belongs to the loop that ran `start()`
and is called from that loop's thread only. Requests may be awaited
concurrently; ZooKeeper applies one session's requests in order sent.

Errors (ZkError subclasses; `path` names the znode): kazoo's NodeExists,
NoNode, BadVersion and NotEmpty map to the same names, SessionExpired to
SessionExpiredError; a closed client or no answer within
connection_timeout_s to ZkConnectionError (a write's outcome unknown);
start() finding no server in time to ZkUnreachableError; others to ZkError.
A metadata change marked ``needs_zookeeper`` turns ZkConnectionError into
kcore.metadata's MetadataUnavailableError, which handlers answer as a
per-resource error naming ZooKeeper.

A request in flight when the connection drops is sent again once the
client reconnects, as Kafka's ZooKeeperClient does on CONNECTIONLOSS, all
within connection_timeout_s. The first send may have been applied, so an
error answering the re-send is checked against what the request wanted:
a create whose znode now holds its data (and, if ephemeral, is this
session's), a versioned set whose znode is at the next version with its
data, a delete whose znode is gone, and a multi whose every effect shows
count as done. A sequential create cannot be told apart: its re-send may
make a second znode, as Kafka's does.

Session expiry, as a caller sees it: the connection drops and listeners
get SUSPENDED; requests issued meanwhile wait for a connection (up to
connection_timeout_s). The client learns of the expiry only when a server
answers again: listeners get EXPIRED (the session's ephemeral znodes are
already gone; waiting requests fail with SessionExpiredError), then kazoo
opens a new session at once and listeners get NEW_SESSION: re-create
ephemeral znodes then (a broker's `/brokers/ids/<id>`: its new czxid is its
new broker epoch). Watches re-read their znode under the new session and
call back if it changed. A client cut off from every server stays
SUSPENDED; past the session timeout, assume the session is gone.
"""
from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from kazoo import exceptions as kazoo_errors
from kazoo.client import KazooClient, KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from kcore.metadata import MetadataUnavailableError

# Kafka's zookeeper.session.timeout.ms default; the connection timeout
# defaults to it, as zookeeper.connection.timeout.ms does.
DEFAULT_SESSION_TIMEOUT_S = 18.0
# kazoo's default reconnect backoff doubles up to an hour, so a broker
# would come back about as late as its outage was long; the Java client
# waits at most about a second between servers.
RECONNECT_MAX_DELAY_S = 1.0
# Between re-sends of a request whose connection dropped (module
# docstring): kazoo holds one made while it reconnects, so this only
# spaces re-sends kazoo fails at once.
RESEND_PAUSE_S = 0.05


class ZkError(Exception):
    """A ZooKeeper request failed; `path` is the znode it named."""
    op_index: int | None = None  # multi(): the position of the failing op
    resent = False  # the answer to a re-send: the first send may have been applied

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class NodeExistsError(ZkError):
    """create: the znode exists."""


class NoNodeError(ZkError):
    """The znode (for create: its parent) does not exist."""


class BadVersionError(ZkError):
    """The znode's version is not the expected one."""


class NotEmptyError(ZkError):
    """delete: the znode has children."""


class ZkConnectionError(ZkError):
    """No answer: connection lost, timed out or client closed."""


class SessionExpiredError(ZkConnectionError):
    """The session expired first: its ephemeral znodes are gone."""


class ZkUnreachableError(ZkConnectionError):
    """start(): no server of the ensemble answered within the timeout."""


_MAPPED_ERRORS: tuple[tuple[type[Exception], type[ZkError]], ...] = (
    (kazoo_errors.NodeExistsError, NodeExistsError),
    (kazoo_errors.NoNodeError, NoNodeError),
    (kazoo_errors.BadVersionError, BadVersionError),
    (kazoo_errors.NotEmptyError, NotEmptyError),
    # ConnectionClosedError subclasses kazoo's SessionExpiredError: first.
    (kazoo_errors.ConnectionClosedError, ZkConnectionError),
    (kazoo_errors.SessionExpiredError, SessionExpiredError),
    (kazoo_errors.ConnectionLoss, ZkConnectionError),
    (kazoo_errors.OperationTimeoutError, ZkConnectionError),
)


P = ParamSpec("P")
R = TypeVar("R")


def needs_zookeeper(call: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``call``, with ZooKeeper not answering (a lost connection past the
    connection timeout, an expired session) raised as
    MetadataUnavailableError: a clear, per-resource error for the client
    rather than a handler failure that closes its connection."""
    @functools.wraps(call)
    async def needing(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await call(*args, **kwargs)
        except ZkConnectionError as exc:
            raise MetadataUnavailableError(
                f"ZooKeeper did not answer ({exc}); the cluster metadata cannot change until "
                "it does") from None
    return needing


def _translate(exc: BaseException, path: str | None) -> ZkError:
    ours = next((o for kazoo_type, o in _MAPPED_ERRORS if isinstance(exc, kazoo_type)), ZkError)
    return ours(f"{type(exc).__name__} on {path}", path)


class SessionEvent(enum.Enum):
    CONNECTED = "connected"      # start(): the first session is up
    SUSPENDED = "suspended"      # connection lost; the session may live on
    RECONNECTED = "reconnected"  # the same session back: ephemerals intact
    EXPIRED = "expired"          # session gone, its ephemeral znodes deleted
    NEW_SESSION = "new_session"  # connected under a new session id


@dataclass(frozen=True, slots=True)
class Stat:
    version: int          # data version: the zkVersion of conditional writes
    czxid: int            # creating transaction id (Kafka's broker epoch)
    ephemeral_owner: int  # owning session id; 0 for a persistent znode
    num_children: int


def _stat(kazoo_stat: Any) -> Stat | None:
    if kazoo_stat is None:
        return None
    return _existing_stat(kazoo_stat)


def _existing_stat(kazoo_stat: Any) -> Stat:
    """The Stat of a znode a request just read or wrote (never None)."""
    return Stat(kazoo_stat.version, kazoo_stat.czxid, kazoo_stat.ephemeralOwner,
                kazoo_stat.numChildren)


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


Op = CheckOp | CreateOp | SetOp | DeleteOp


def _deliver(loop: asyncio.AbstractEventLoop, callback: Callable, *args) -> bool:
    """From a kazoo thread: `callback(*args)` on the loop; False if it closed."""
    try:
        loop.call_soon_threadsafe(callback, *args)
        return True
    except RuntimeError:
        return False


class Watch:
    """A data or children watch. cancel() stops its callbacks at once;
    kazoo drops the recipe at the znode's next change."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable) -> None:
        self._loop = loop
        self._callback = callback
        self.cancelled = False
        self.armed = False  # set on kazoo's thread by the recipe's first read

    def cancel(self) -> None:
        self.cancelled = True

    def _from_kazoo(self, *args) -> bool | None:
        """The recipe's function, on a kazoo thread; False stops the recipe."""
        self.armed = True
        if self.cancelled or not _deliver(self._loop, self._on_loop, *args):
            return False
        return None

    def _on_loop(self, *args) -> None:
        if not self.cancelled:
            self._callback(*args)


class ZkClient:
    """One ZooKeeper session: `await start()`, requests, `await close()`
    (or `async with`). Threading, errors and expiry: module docstring."""

    def __init__(self, connect: str, *, session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
                 connection_timeout_s: float | None = None) -> None:
        # Kafka's zookeeper.connect: "host:port,host:port[/chroot]".
        self.hosts, slash, chroot = connect.partition("/")
        self.chroot = (slash + chroot).rstrip("/")
        self.session_timeout_s = session_timeout_s
        self.connection_timeout_s = connection_timeout_s or session_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        # Session start and watch arming; arming while disconnected holds
        # a thread until the connection is back or the client closes.
        self._executor = ThreadPoolExecutor(4, thread_name_prefix="zk-blocking")
        self._kazoo = self._new_kazoo(self.hosts + self.chroot)
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._closed = False
        self._connected_before = self._expired = False  # kazoo's connection thread

    def _new_kazoo(self, hosts: str) -> KazooClient:
        retry = dict(max_tries=-1, delay=0.05, max_delay=RECONNECT_MAX_DELAY_S)
        return KazooClient(hosts=hosts, timeout=self.session_timeout_s,
                           connection_retry=KazooRetry(**retry), command_retry=KazooRetry(**retry))

    @property
    def session_id(self) -> int | None:
        """The session's id (an ephemeral znode's owner); None while disconnected."""
        client_id = self._kazoo.client_id
        return client_id[0] if client_id else None

    def add_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        """`listener(event)` runs on the loop for each SessionEvent."""
        self._listeners.append(listener)

    def remove_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        self._listeners.remove(listener)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop start() ran on, which every callback is delivered to."""
        if self._loop is None:
            raise ZkConnectionError("the ZooKeeper client is not started")
        return self._loop

    async def start(self) -> None:
        """Connect, creating the chroot first when it is missing (as Kafka
        does); ZkUnreachableError when no server answers in time."""
        self._loop = asyncio.get_running_loop()
        try:
            if self.chroot:
                await self._blocking(self._ensure_chroot)
            self._kazoo.add_listener(self._on_kazoo_state)
            await self._blocking(self._start_kazoo, self._kazoo)
        except BaseException:
            self._closed = True
            self._executor.shutdown(wait=False)
            raise

    def _start_kazoo(self, kazoo: KazooClient) -> None:
        if not kazoo.start_async().wait(self.connection_timeout_s):
            # Stopping waits out a connect attempt in flight (up to the
            # session timeout against a server that accepts and never
            # answers): not the caller's time.
            self._executor.submit(_stop, kazoo)
            raise ZkUnreachableError(f"no ZooKeeper server of {self.hosts} answered within "
                                     f"{self.connection_timeout_s:g} s")

    def _ensure_chroot(self) -> None:
        bootstrap = self._new_kazoo(self.hosts)
        self._start_kazoo(bootstrap)
        try:
            bootstrap.ensure_path(self.chroot)
        finally:
            _stop(bootstrap)

    async def close(self) -> None:
        """End the session (the server deletes its ephemeral znodes at once)
        and stop kazoo's threads."""
        if self._closed:
            return
        self._closed = True
        # Not on our executor: watches being armed may hold all of it.
        await asyncio.to_thread(_stop, self._kazoo)
        self._executor.shutdown(wait=False)

    async def __aenter__(self) -> ZkClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    def _on_kazoo_state(self, state: str) -> None:
        """kazoo's connection thread: never blocks."""
        if self._closed:
            return
        if state == KazooState.CONNECTED:  # kazoo changes sessions only after LOST
            event = (SessionEvent.NEW_SESSION if self._expired else SessionEvent.RECONNECTED
                     if self._connected_before else SessionEvent.CONNECTED)
            self._connected_before, self._expired = True, False
        elif state == KazooState.SUSPENDED:
            event = SessionEvent.SUSPENDED
        else:
            event, self._expired = SessionEvent.EXPIRED, True
        _deliver(self.loop, self._notify, event)

    def _notify(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # a failing listener must not starve the others
                self.loop.call_exception_handler(
                    {"message": f"ZooKeeper session listener failed on {event}", "exception": exc})

    async def _blocking(self, call: Callable, *args) -> Any:
        return await self.loop.run_in_executor(self._executor, call, *args)

    async def _request(self, path: str | None, send: Callable, *args, **kwargs) -> Any:
        """`send(*args, **kwargs)` (a kazoo *_async method); its result, on the loop.
        Sent again after a connection loss (module docstring); an error
        answering a re-send has `resent` set."""
        value, _resent = await self._exchange(path, send, *args, **kwargs)
        return value

    async def _exchange(self, path: str | None, send: Callable, *args, **kwargs) -> tuple[Any, bool]:
        """_request's result, and whether it answers a re-send."""
        resent = False
        try:
            async with asyncio.timeout(self.connection_timeout_s):
                while True:
                    try:
                        return await self._send(send, *args, **kwargs), resent
                    except kazoo_errors.ConnectionLoss:
                        if self._closed:
                            raise
                    resent = True
                    await asyncio.sleep(RESEND_PAUSE_S)
        except TimeoutError:
            raise ZkConnectionError(f"no answer within {self.connection_timeout_s:g} s on {path}",
                                    path) from None
        except (kazoo_errors.KazooException, kazoo_errors.ZookeeperError) as exc:
            error = _translate(exc, path)
            error.resent = resent
            raise error from exc

    async def _send(self, send: Callable, *args, **kwargs) -> Any:
        future = self.loop.create_future()

        def completed(async_result) -> None:  # kazoo's completion thread
            _deliver(self.loop, _settle, future, async_result)

        send(*args, **kwargs).rawlink(completed)
        return await future

    async def get(self, path: str) -> tuple[bytes, Stat]:
        data, stat = await self._request(path, self._kazoo.get_async, path)
        return data, _existing_stat(stat)

    async def get_children(self, path: str) -> list[str]:
        return await self._request(path, self._kazoo.get_children_async, path)

    async def exists(self, path: str) -> Stat | None:
        return _stat(await self._request(path, self._kazoo.exists_async, path))

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
                     sequential: bool = False, makepath: bool = False) -> str:
        """The created znode's path (with its sequence number if sequential)."""
        try:
            return await self._request(path, self._kazoo.create_async, path, data,
                                       ephemeral=ephemeral, sequence=sequential, makepath=makepath)
        except NodeExistsError as exc:
            if exc.resent and not sequential and await self._created(CreateOp(path, data, ephemeral)):
                return path
            raise

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Write if the znode's version is `version` (-1: any)."""
        try:
            return _existing_stat(await self._request(path, self._kazoo.set_async, path, data, version))
        except BadVersionError as exc:
            if exc.resent and (stat := await self._was_set(SetOp(path, data, version))):
                return stat
            raise

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete if the znode's version is `version` (-1: any). `recursive`
        deletes the descendants first (not atomically; a descendant that
        vanishes meanwhile is skipped)."""
        if recursive:
            children = await self.get_children(path)
            await asyncio.gather(*[self._delete_tree(f"{path.rstrip('/')}/{child}")
                                   for child in children])
        try:
            await self._request(path, self._kazoo.delete_async, path, version)
        except NoNodeError as exc:
            if not exc.resent:  # else the first send deleted it
                raise

    async def _delete_tree(self, path: str) -> None:
        with contextlib.suppress(NoNodeError):
            await self.delete(path, recursive=True)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        """All of `ops` or none, atomically. Results in order: the created
        path for a CreateOp, the new Stat for a SetOp, None for the others.
        A failure raises the first failing op's error with `op_index`."""
        results, resent = await self._exchange(None, self._commit, ops)
        failed = next(((index, result) for index, result in enumerate(results)
                       if isinstance(result, Exception)
                       and not isinstance(result, kazoo_errors.RolledBackError)), None)
        if failed is None:
            return [_stat(r) if isinstance(op, SetOp) else r if isinstance(op, CreateOp) else None
                    for op, r in zip(ops, results)]
        if resent and (done := await self._applied(ops)) is not None:
            return done
        index, result = failed
        error = _translate(result, ops[index].path)
        error.op_index, error.resent = index, resent
        raise error

    def _commit(self, ops: Sequence[Op]) -> Any:
        """A kazoo transaction of `ops`, committed (a new one for each send:
        kazoo commits a transaction once)."""
        transaction = self._kazoo.transaction()
        for op in ops:
            match op:
                case CheckOp():
                    transaction.check(op.path, op.version)
                case CreateOp():
                    transaction.create(op.path, op.data, ephemeral=op.ephemeral,
                                       sequence=op.sequential)
                case SetOp():
                    transaction.set_data(op.path, op.data, op.version)
                case DeleteOp():
                    transaction.delete(op.path, op.version)
        return transaction.commit_async()

    # --- whether a re-sent write's first send was applied -----------------

    async def _created(self, op: CreateOp) -> bool:
        try:
            data, stat = await self.get(op.path)
        except NoNodeError:
            return False
        return data == op.data and (not op.ephemeral or stat.ephemeral_owner == self.session_id)

    async def _was_set(self, op: SetOp) -> Stat | None:
        """The znode's Stat if it holds `op`'s data at the version `op` made."""
        try:
            data, stat = await self.get(op.path)
        except NoNodeError:
            return None
        moved = op.version == -1 or stat.version == op.version + 1
        return stat if data == op.data and moved else None

    async def _applied(self, ops: Sequence[Op]) -> list[str | Stat | None] | None:
        """multi()'s results if every effect of `ops` shows, else None. A
        check cannot be re-checked after the fact; a sequential create's
        name is unknown."""
        results: list[str | Stat | None] = []
        for op in ops:
            match op:
                case CreateOp(sequential=True):
                    return None
                case CreateOp():
                    if not await self._created(op):
                        return None
                    results.append(op.path)
                case SetOp():
                    if (stat := await self._was_set(op)) is None:
                        return None
                    results.append(stat)
                case DeleteOp():
                    if await self.exists(op.path) is not None:
                        return None
                    results.append(None)
                case CheckOp():
                    results.append(None)
        return results

    async def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> Watch:
        """`callback(children)` on the loop now and after each change, until
        cancelled or the znode is deleted (then silently, as kazoo's
        ChildrenWatch does). NoNodeError if the znode does not exist."""
        watch = Watch(self.loop, callback)
        await self._arm(ChildrenWatch, path, watch)
        if not watch.armed:
            raise NoNodeError(f"NoNodeError on {path}", path)
        return watch

    async def watch_data(self, path: str,
                         callback: Callable[[bytes | None, Stat | None], None]) -> Watch:
        """`callback(data, stat)` on the loop now and after each change,
        (None, None) while the znode does not exist; until cancelled."""
        watch = Watch(self.loop, lambda data, stat, _event: callback(data, _stat(stat)))
        await self._arm(DataWatch, path, watch)
        return watch

    async def _arm(self, recipe: type, path: str, watch: Watch) -> None:
        # The recipe's constructor reads the znode (blocking, retried while
        # disconnected) and makes the first call before it returns.
        try:
            async with asyncio.timeout(self.connection_timeout_s):
                await self._blocking(recipe, self._kazoo, path, watch._from_kazoo)
        except TimeoutError:
            watch.cancel()
            raise ZkConnectionError(f"watch on {path} not set within "
                                    f"{self.connection_timeout_s:g} s", path) from None


def _settle(future: asyncio.Future, async_result) -> None:
    if future.done():  # the request timed out meanwhile
        return
    if async_result.successful():
        future.set_result(async_result.value)
    else:
        future.set_exception(async_result.exception)


def _stop(kazoo: KazooClient) -> None:
    kazoo.stop()
    kazoo.close()
