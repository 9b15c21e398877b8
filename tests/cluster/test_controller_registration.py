"""Winning the controller's office in ZooKeeper: ``/controller`` and the
incremented ``/controller_epoch`` in one transaction (Kafka's
registerControllerAndIncrementControllerEpoch), against a real ZooKeeper."""
from __future__ import annotations

import pytest

from kcore.controller import zk_paths as paths
from kcore.controller.zk_state import ControllerEpoch, ControllerMovedError, register_controller
from kcore.metadata_store.zk_client import NodeExistsError, ZkClient
from tests.support.scenario import run


def test_the_office_and_its_epoch_are_written_together(zookeeper):
    async def scenario():
        connect = zookeeper.connect_string + "/registration"
        async with ZkClient(connect, session_timeout_s=4) as first, \
                ZkClient(connect, session_timeout_s=4) as second:
            assert await register_controller(first, paths.encode_controller(1)) == ControllerEpoch(1, 1)
            with pytest.raises(NodeExistsError):  # the office is taken: the epoch stays
                await register_controller(second, paths.encode_controller(2))
            assert (await second.get(paths.CONTROLLER_EPOCH))[0] == b"1"
            await first.delete(paths.CONTROLLER)  # as its session's end would
            stale = (1, 1)
            won = await register_controller(second, paths.encode_controller(2), read=stale)
            assert won == ControllerEpoch(2, 2)
            assert paths.decode_controller((await first.get(paths.CONTROLLER))[0]) == 2
            assert (await first.get(paths.CONTROLLER_EPOCH))[0] == b"2"
            await second.delete(paths.CONTROLLER)
            # A broker that read the epoch before another bumped it writes
            # nothing: no /controller naming it beside an epoch not its own.
            with pytest.raises(ControllerMovedError):
                await register_controller(first, paths.encode_controller(1), read=stale)
            assert await first.exists(paths.CONTROLLER) is None
            assert (await first.get(paths.CONTROLLER_EPOCH))[0] == b"2"
    run(scenario)
