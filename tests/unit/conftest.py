"""Shared fixtures for the unit tests of native kernels and the log."""
from __future__ import annotations

import asyncio

import hypothesis
import pytest
import uvloop

from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.batches import make_batch
from tests.support.log import read_slices


@pytest.fixture(autouse=True)
def uvloop_policy():
    """Every loop a unit test makes (asyncio.run, new_event_loop) is uvloop,
    as in the broker; the default policy comes back after the test."""
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    yield
    asyncio.set_event_loop_policy(previous)


# Bounded property tests: the machine is shared, each file stays under ~30 s.
hypothesis.settings.register_profile("kcore", max_examples=200, deadline=None)
hypothesis.settings.load_profile("kcore")





@pytest.fixture
def batch():
    return make_batch


@pytest.fixture
def read_back():
    return read_slices


@pytest.fixture
def open_log(tmp_path):
    """open_log(name='topic-0', clean_shutdown=False, **config) -> Log,
    closed at teardown."""
    opened: list[Log] = []

    def factory(name: str = "topic-0", *, recovery_point: int = 0, log_start_offset: int = 0,
                clean_shutdown: bool = False, **config) -> Log:
        log = Log.open(tmp_path / name, LogConfig(**config), recovery_point=recovery_point,
                       log_start_offset=log_start_offset, clean_shutdown=clean_shutdown)
        opened.append(log)
        return log

    yield factory
    for log in opened:
        if log.active_segment.fd >= 0:
            log.close()
