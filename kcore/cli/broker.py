"""`kcore broker`: run one broker until SIGTERM or SIGINT.

With no arguments it listens on 127.0.0.1:9092 with data under ./data and
no ZooKeeper. `--config` reads a server.properties file; each
`--override key=value` wins over the file."""
from __future__ import annotations

import asyncio
import logging
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
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from kcore.config import BrokerConfig, ConfigError
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as exc:
        print(f"kcore broker: {exc}", file=sys.stderr)
        return 2
    try:
        import uvloop
        runner: Callable[..., Any] = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        return runner(_serve(config))
    except KeyboardInterrupt:
        return 0


async def _serve(config) -> int:
    from kcore.config import ConfigError
    from kcore.controller.zk_client import ZkError
    from kcore.controller.zk_controller import ClusterIdMismatch
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
