"""Broker metrics cheap enough for the hot paths: plain integer counters and
bucket histograms that handlers, the replication layer and the log bump,
turned into Prometheus metric families only when /metrics is scraped
(kcore/server/metrics.py).

Layer: beside ``kcore.config``, below every package that counts; imports
nothing of kcore but the protocol's api keys and error codes (for labels).
"""
from kcore.metrics.socket_server import SampledStat, SocketServerStats
from kcore.metrics.stats import (
    LOG_FLUSH_STATS,
    BrokerStats,
    BrokerTopicStats,
    DelayedOperations,
    Histogram,
    LogFlushStats,
    RequestStats,
    TopicCounters,
)

__all__ = ["LOG_FLUSH_STATS", "BrokerStats", "BrokerTopicStats", "DelayedOperations", "Histogram",
           "LogFlushStats", "RequestStats", "SampledStat", "SocketServerStats", "TopicCounters"]
