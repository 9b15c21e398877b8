"""`kcore broker`: run one broker until SIGTERM or SIGINT.

With no arguments it listens on 127.0.0.1:9092 with data under ./data and
no ZooKeeper. `--config` reads a server.properties file; each
`--override key=value` wins over the file."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def add_parser(commands) -> None:
    parser = commands.add_parser("broker", help="run a broker")
    parser.add_argument("--config", help="server.properties file (Kafka's key names)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="set a config key, e.g. --override log.dirs=/tmp/data")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kcore.config import BrokerConfig, ConfigError
    from kcore.config_def import process_count
    from kcore.server.supervisor import SUPERVISOR_PID_ENV, Supervisor
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as exc:
        print(f"kcore broker: {exc}", file=sys.stderr)
        return 2
    managed = SUPERVISOR_PID_ENV in os.environ
    # A node's processes share its output: each line names the broker.
    where = f"[broker {config.broker_id}] " if managed else ""
    logging.basicConfig(level=args.log_level.upper(),
                        format=f"%(asctime)s %(levelname)s {where}%(name)s: %(message)s")
    try:
        import uvloop
        runner: Callable[..., Any] = uvloop.run
    except ImportError:
        runner = asyncio.run
    count = process_count(config["num.processes"])
    try:
        if count > 1 and not managed:
            return runner(Supervisor(config, count, args.config).run())
        return runner(_serve(config))
    except KeyboardInterrupt:
        return 0


async def _serve(config) -> int:
    from kcore.config import ConfigError
    from kcore.controller.zk_controller import ClusterIdMismatch
    from kcore.metadata_store.zk_client import ZkError
    from kcore.server.broker import Broker
    try:
        broker = Broker(config)
        await broker.start()
    except (ConfigError, OSError, ZkError, ClusterIdMismatch) as exc:
        print(f"kcore broker: cannot start: {exc}", file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    await broker.serve_until_stopped()
    await broker.shutdown()
    return 0
