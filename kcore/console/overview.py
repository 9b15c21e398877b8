"""The overview page and the live throughput chart."""
from __future__ import annotations

import time

from kcore import __version__
from kcore.console.base import ApiRequest, ConsoleSource


def overview(broker: ConsoleSource, request: ApiRequest) -> dict:
    cache = broker.replica_manager.metadata_cache
    states = [s for topic in cache.topic_names() for s in cache.partitions(topic).values()]
    local = list(broker.replica_manager.partitions.values())
    return {
        "broker_id": broker.config.broker_id,
        "cluster_id": broker.controller.cluster_id,
        "controller_id": cache.controller_id,
        "version": __version__,
        "uptime_s": round(time.time() - broker.started_at, 1),
        "brokers": [{"id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id)],
        "topics": len(cache.topic_names()),
        "partitions": len(states),
        "under_replicated": sum(len(s.isr) < len(s.replicas) for s in states),
        "offline": sum(s.leader < 0 or s.leader not in cache.brokers for s in states),
        "replicas_here": len(local),
        "leaders_here": sum(p.is_leader for p in local),
        "size_bytes": sum(p.log.size_in_bytes for p in local),
        "groups": len(broker.group_coordinator.groups),
        "rates": broker.history.current_rates(),
    }


def throughput(broker: ConsoleSource, request: ApiRequest) -> dict:
    return {"interval_s": 1.0, "points": broker.history.throughput()}
