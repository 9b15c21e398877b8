"""The fdatasync backends that group commit (durability.py) runs its rounds
on: two ways to get a file's data onto the disk without blocking the event
loop, each behind the same small interface (``SyncBackend``).

* ``IoUringBackend`` (PyPI ``liburing``): an ``IORING_OP_FSYNC`` SQE with
  ``IORING_FSYNC_DATASYNC`` per file, or for a journal round an
  ``IORING_OP_WRITE`` linked (``IOSQE_IO_LINK``) to that fsync;
  completions signal an eventfd registered with the ring and watched by
  the event loop (``loop.add_reader``), so no thread of ours waits.
* ``ThreadBackend``: ``os.pwrite`` / ``os.fdatasync`` in a thread pool,
  results posted back with ``call_soon_threadsafe``. Used where io_uring
  is unavailable (import failure, kernel or seccomp refusal of
  ``io_uring_setup``, failed self test) or when ``KCORE_SYNCER=thread``.

A backend knows nothing of logs, offsets or rounds: it takes a file
descriptor (and for a journal round a buffer and a position) and calls
back with 0 or an errno on the event loop. The caller owns the
descriptors: it passes a ``dup`` and closes it in the callback.

Concurrency contract: not thread-safe; every method runs on the event loop
given to the constructor, and callbacks run there too.
"""
from __future__ import annotations

import asyncio
import errno
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

# Up to this many fsyncs in flight per ring: one per segment file of a round
# (usually one per partition). Ops beyond it wait in a queue until
# completions free slots, so the completion queue (2x entries) never
# overflows.
RING_ENTRIES = 256
# fdatasync threads for the fallback: one per concurrently syncing partition
# up to 16 (the benchmark's partition count); a virtio disk with a
# write-back cache completes parallel flushes about as fast as one.
THREAD_WORKERS = 16

Callback = Callable[[int], None]  # receives 0 or an errno


class SyncBackend(Protocol):
    """What group commit needs of a backend."""

    name: str

    @property
    def in_flight(self) -> int:
        """Operations submitted and not yet called back."""

    def submit(self, fd: int, datasync: bool, callback: Callback) -> None:
        """fdatasync (``datasync``) or fsync ``fd``; may wait for ``flush``."""

    def submit_write_sync(self, fd: int, buffer: memoryview, position: int,
                          callback: Callback) -> None:
        """Write ``buffer`` at ``position``, then fdatasync ``fd``; the sync
        runs only if the whole write succeeded."""

    def flush(self) -> None:
        """Start what was submitted since the last call."""

    def close(self) -> None:
        """Wait (blocking) for what is in flight and release the backend."""


class IoUringBackend:
    """fdatasync through io_uring; see the module docstring."""

    name = "io_uring"

    def __init__(self, loop: asyncio.AbstractEventLoop, entries: int = RING_ENTRIES):
        import liburing  # ImportError -> the caller falls back

        self._uring = liburing
        self._loop = loop
        self._entries = entries
        self._ring = liburing.Ring()
        liburing.io_uring_queue_init(entries, self._ring, 0)
        self._eventfd = -1
        try:
            self._eventfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            liburing.io_uring_register_eventfd(self._ring, self._eventfd)
            self._cqe = liburing.Cqe()
            self._callbacks: dict[int, Callback] = {}
            self._expected: dict[int, int] = {}  # write token -> bytes it must write
            self._next_token = 1
            self._queued: deque[tuple[int, bool, memoryview | None, int, Callback]] = deque()
            self._self_test()
            loop.add_reader(self._eventfd, self._reap)
        except BaseException:
            self._release()
            raise
        self.version = getattr(liburing, "__version__", "?")

    def _self_test(self) -> None:
        """One blocking fdatasync of a memory file: proves the kernel runs
        IORING_OP_FSYNC for us before the broker relies on it."""
        fd = os.memfd_create("kcore-uring-probe", os.MFD_CLOEXEC)
        try:
            os.write(fd, b"probe")
            sqe = self._uring.io_uring_get_sqe(self._ring)
            self._uring.io_uring_prep_fsync(sqe, fd, self._uring.IORING_FSYNC_DATASYNC)
            sqe.user_data = 0
            self._uring.io_uring_submit(self._ring)
            self._uring.io_uring_wait_cqe(self._ring, self._cqe)
            try:
                _ = self._cqe[0].res  # reading it raises OSError for a negative result
            finally:
                self._uring.io_uring_cq_advance(self._ring, 1)
                os.eventfd_read(self._eventfd)
        finally:
            os.close(fd)

    @property
    def in_flight(self) -> int:
        return len(self._callbacks)

    def submit(self, fd: int, datasync: bool, callback: Callback) -> None:
        """Queue one fsync; ``flush`` hands the queue to the kernel."""
        self._queued.append((fd, datasync, None, 0, callback))

    def submit_write_sync(self, fd: int, buffer: memoryview, position: int,
                          callback: Callback) -> None:
        """Queue a write of ``buffer`` at ``position`` linked to an
        fdatasync of ``fd`` (IOSQE_IO_LINK: the sync starts only after the
        whole write succeeded, and is cancelled otherwise). ``buffer`` must
        stay unchanged until ``callback`` runs; it may be page-aligned
        memory for an O_DIRECT ``fd`` (it is written in place, not copied)."""
        self._queued.append((fd, True, buffer, position, callback))

    def flush(self) -> None:
        uring, ring = self._uring, self._ring
        submitted = 0
        while self._queued and len(self._callbacks) + 2 <= self._entries:
            if uring.io_uring_sq_space_left(ring) < 2:
                break
            fd, datasync, buffer, position, callback = self._queued.popleft()
            if buffer is not None:
                callback = self._prep_write(fd, buffer, position, callback)
            sqe = uring.io_uring_get_sqe(ring)
            uring.io_uring_prep_fsync(sqe, fd, uring.IORING_FSYNC_DATASYNC if datasync else 0)
            sqe.user_data = self._token(callback)
            submitted += 1
        if submitted:
            uring.io_uring_submit(ring)

    def _token(self, callback: Callback) -> int:
        token = self._next_token
        self._next_token += 1
        self._callbacks[token] = callback
        return token

    def _prep_write(self, fd: int, buffer: memoryview, position: int, callback: Callback) -> Callback:
        """The write half of a linked pair; returns the callback for the
        fsync half. The write posts a completion only when it fails
        (IOSQE_CQE_SKIP_SUCCESS): one completion, one wake-up of the loop
        per round instead of two. A failed or short write cancels the
        linked fsync, whose completion then carries an error too."""
        uring = self._uring
        # The bindings take memory by reference only through an Iovec, which
        # must live until the write completes.
        iovec = uring.Iovec([buffer])
        write_error = [0]

        def write_failed(error: int) -> None:
            write_error[0] = error or errno.EIO

        sqe = uring.io_uring_get_sqe(self._ring)
        uring.io_uring_prep_writev(sqe, fd, iovec, position)
        sqe.flags |= uring.IOSQE_IO_LINK | uring.IOSQE_CQE_SKIP_SUCCESS
        write_token = self._token(write_failed)
        self._expected[write_token] = buffer.nbytes
        sqe.user_data = write_token

        def synced(error: int) -> None:
            # The write's completion, if any, came first (same ring, in order).
            self._callbacks.pop(write_token, None)
            self._expected.pop(write_token, None)
            callback(write_error[0] or error)

        synced.iovec = iovec  # type: ignore[attr-defined]  # alive until the round ends
        return synced

    def _reap(self) -> None:
        try:
            os.eventfd_read(self._eventfd)
        except BlockingIOError:
            pass
        uring, ring, cqe = self._uring, self._ring, self._cqe
        done: list[tuple[Callback, int]] = []
        # One completion at a time: the bindings' Cqe indexes past the first
        # entry without wrapping around the ring.
        while uring.io_uring_cq_ready(ring):
            uring.io_uring_peek_cqe(ring, cqe)
            entry = cqe[0]
            token = entry.user_data
            try:
                result = entry.res
                error = 0 if result >= 0 else errno.EIO
            except OSError as exc:  # the bindings raise a negative res as OSError
                result, error = -1, exc.errno or errno.EIO
            expected = self._expected.pop(token, None)
            if expected is not None and not error and result != expected:
                error = errno.EIO  # a short write leaves the entry torn
            uring.io_uring_cq_advance(ring, 1)
            callback = self._callbacks.pop(token, None)
            if callback is not None:
                done.append((callback, error))
        for callback, error in done:
            callback(error)
        if self._queued:
            self.flush()

    def close(self) -> None:
        """Wait (blocking) for in-flight fsyncs, then free the ring."""
        while self._callbacks:
            self._uring.io_uring_wait_cqe(self._ring, self._cqe)
            self._reap()
        self._release()

    def _release(self) -> None:
        if self._eventfd >= 0:
            try:
                self._loop.remove_reader(self._eventfd)
            except Exception:  # the loop may be closed already
                pass
            os.close(self._eventfd)
            self._eventfd = -1
        if self._ring is not None:
            self._uring.io_uring_queue_exit(self._ring)
            self._ring = None


def _fsync(fd: int, datasync: bool) -> int:
    try:
        (os.fdatasync if datasync else os.fsync)(fd)
    except OSError as exc:
        return exc.errno or errno.EIO
    return 0


def _write_sync(fd: int, buffer: memoryview, position: int) -> int:
    view = memoryview(buffer)
    try:
        done = 0
        while done < len(view):
            written = os.pwrite(fd, view[done:], position + done)
            if written == 0:
                return errno.EIO  # no progress: never loop forever
            done += written
        os.fdatasync(fd)
    except OSError as exc:
        return exc.errno or errno.EIO
    finally:
        view.release()
    return 0


class ThreadBackend:
    """fdatasync on a thread pool: the fallback (see the module docstring)."""

    name = "thread"

    def __init__(self, loop: asyncio.AbstractEventLoop, workers: int = THREAD_WORKERS):
        self._loop = loop
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kcore-fsync")
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def submit(self, fd: int, datasync: bool, callback: Callback) -> None:
        self._in_flight += 1
        future = self._pool.submit(_fsync, fd, datasync)
        future.add_done_callback(lambda done: self._post(callback, done.result()))

    def submit_write_sync(self, fd: int, buffer: memoryview, position: int,
                          callback: Callback) -> None:
        self._in_flight += 1
        future = self._pool.submit(_write_sync, fd, buffer, position)
        future.add_done_callback(lambda done: self._post(callback, done.result()))

    def _post(self, callback: Callback, error: int) -> None:
        try:
            self._loop.call_soon_threadsafe(self._complete, callback, error)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def _complete(self, callback: Callback, error: int) -> None:
        self._in_flight -= 1
        callback(error)

    def flush(self) -> None:
        """Ops start as they are submitted."""

    def close(self) -> None:
        self._pool.shutdown(wait=True)
