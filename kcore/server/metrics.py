"""The metric families of one broker, built when /metrics is scraped.

Names are Kafka's JMX MBeans as the Prometheus JMX exporter writes them
(``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=T`` ->
``kafka_server_brokertopicmetrics_bytesin_total{topic="T"}``); consumer
lag, which Kafka's broker does not export, takes kafka_exporter's names
and comes from the broker's consumer lag service
(kcore/coordinator/group/lag.py), the one the console reads;
the table is in README.md ("Metrics"). Counters come from the numbers the
hot paths keep (kcore.metrics); gauges are read from the replica manager,
the metadata cache and the group coordinator here, so a scrape costs the
broker ~1 ms per thousand partitions and the data path nothing.

Not thread-safe: collect() runs on the broker's event loop (the http
listener calls it there), like everything it reads.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from kcore import __version__
from kcore.config import BrokerConfig
from kcore.controller.base import Controller
from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.coordinator.group.lag import ConsumerLag
from kcore.coordinator.share.service import ShareGroupService
from kcore.metrics import LOG_FLUSH_STATS, BrokerStats, Histogram
from kcore.protocol.errors import ErrorCode
from kcore.replication.alter_partition import AlterPartitionManager
from kcore.replication.replica_manager import ReplicaManager
from kcore.tables.service import TableService


class MetricsSource(Protocol):
    """The parts of the Broker that /metrics reads."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def controller(self) -> Controller: ...
    @property
    def stats(self) -> BrokerStats: ...
    @property
    def replica_manager(self) -> ReplicaManager: ...
    @property
    def group_coordinator(self) -> GroupCoordinator: ...
    @property
    def alter_partitions(self) -> AlterPartitionManager | None: ...
    @property
    def consumer_lag(self) -> ConsumerLag: ...
    @property
    def share_groups(self) -> ShareGroupService: ...
    @property
    def tables(self) -> TableService: ...

    def connection_counts(self) -> dict[str, int]: ...


def _counter(name: str, doc: str, labels: list[str], values: dict) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for label_values, value in sorted(values.items()):
        family.add_metric([str(v) for v in label_values], value)
    return family


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _histogram(name: str, doc: str, labels: list[str],
               histograms: dict[tuple, Histogram]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for label_values, histogram in sorted(histograms.items()):
        buckets = [(floatToGoString(bound), count) for bound, count in histogram.cumulative()]
        family.add_metric(list(label_values), buckets, histogram.sum)
    return family


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class BrokerCollector(Collector):
    def __init__(self, broker: MetricsSource):
        self.broker = broker

    def describe(self) -> list[Metric]:
        return []  # names vary with topics and groups: nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        yield self._info()
        yield from self._topic_metrics()
        yield from self._request_metrics()
        yield from self._replica_metrics()
        yield from self._log_metrics()
        yield from self._group_metrics()
        yield from self._share_group_metrics()
        yield from self._socket_metrics()
        yield from self._table_metrics()

    def _table_metrics(self) -> Iterator[Metric]:
        """Topics as tables (docs/tables.md): what this broker's writers did."""
        stats = self.broker.tables.stats
        if not stats:
            return
        lag = GaugeMetricFamily("kcore_table_lag_offsets", "Offsets below the last stable offset that the "
                                "topic's table lacks, per partition this broker writes.", labels=["topic", "partition"])
        for topic, table in sorted(stats.items()):
            for partition, behind in sorted(table.lag.items()):
                lag.add_metric([topic, str(partition)], behind)
        yield lag
        for name, doc, value in (
                ("commits", "Table snapshots committed.", lambda t: t.commits),
                ("commit_seconds", "Seconds spent committing (writing Parquet and the snapshot).",
                 lambda t: t.commit_seconds),
                ("commit_errors", "Failed reads or commits (the writer retries).", lambda t: t.commit_errors),
                ("records", "Records written to the table.", lambda t: t.records)):
            yield _counter(f"kcore_table_{name}", doc, ["topic"],
                           {(topic, ): value(table) for topic, table in stats.items()})

    def _info(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily("kcore_broker_info", "This broker: id, cluster id and version.",
                                   labels=["broker_id", "cluster_id", "version"])
        family.add_metric([str(self.broker.config.broker_id),
                           str(self.broker.controller.cluster_id or ""), __version__], 1)
        return family

    def _topic_metrics(self) -> Iterator[Metric]:
        topics = self.broker.stats.topics.topics
        for attribute, name, doc in (
                ("bytes_in", "bytesin", "Bytes appended by producers (BytesInPerSec)."),
                ("messages_in", "messagesin", "Messages appended by producers (MessagesInPerSec)."),
                ("bytes_out", "bytesout", "Bytes sent to consumers (BytesOutPerSec)."),
                ("replication_bytes_out", "replicationbytesout",
                 "Bytes sent to followers (ReplicationBytesOutPerSec).")):
            values = {(topic,): getattr(counters, attribute) for topic, counters in topics.items()}
            yield _counter(f"kafka_server_brokertopicmetrics_{name}", doc, ["topic"], values)

    def _request_metrics(self) -> Iterator[Metric]:
        stats = self.broker.stats.requests
        yield _counter("kafka_network_requestmetrics_requests", "Requests answered (RequestsPerSec).",
                       ["request", "version"], stats.requests)
        errors = {(name, _error_name(code)): count for (name, code), count in stats.errors.items()}
        yield _counter("kafka_network_requestmetrics_errors",
                       "Error codes other than NONE in the answers (ErrorsPerSec).",
                       ["request", "error"], errors)
        yield _histogram("kafka_network_requestmetrics_totaltimems",
                         "Milliseconds from a decoded request to its answer (TotalTimeMs).",
                         ["request"], {(name,): h for name, h in stats.total_time_ms.items()})

    def _replica_metrics(self) -> Iterator[Metric]:
        broker = self.broker
        partitions = list(broker.replica_manager.partitions.values())
        leaders = [p for p in partitions if p.is_leader]
        yield _gauge("kafka_server_replicamanager_partitioncount", "Replicas on this broker.",
                     len(partitions))
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads.",
                     len(leaders))
        yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                     "Led partitions whose ISR is smaller than their replica set.",
                     sum(len(p.isr) < len(p.replicas) for p in leaders))
        yield _gauge("kafka_server_replicamanager_underminisrpartitioncount",
                     "Led partitions whose ISR is smaller than min.insync.replicas.",
                     sum(len(p.isr) < p.configs["min.insync.replicas"] for p in leaders))
        changes = broker.alter_partitions
        yield _counter("kafka_server_replicamanager_isrshrinks", "ISR shrinks (IsrShrinksPerSec).", [],
                       {(): changes.isr_shrinks if changes else 0})
        yield _counter("kafka_server_replicamanager_isrexpands", "ISR expansions (IsrExpandsPerSec).", [],
                       {(): changes.isr_expands if changes else 0})
        for side, quota in (("leader", broker.replica_manager.leader_quota),
                            ("follower", broker.replica_manager.follower_quota)):
            yield _counter(f"kafka_server_{side}replication_bytes",
                           f"Bytes of throttled partitions counted against the {side} replication "
                           f"throttle ({side.capitalize()}Replication byte-rate).", [],
                           {(): quota.total_bytes})
        cache = broker.replica_manager.metadata_cache
        yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                     "Partitions without a live leader, as this broker's metadata says.",
                     sum(cache.leader_of(topic, index) is None for topic in cache.topic_names()
                         for index in cache.partitions(topic)))
        purgatory = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize",
                                      "Requests waiting: acks=all produces for the ISR, fetches for data, "
                                      "DeleteRecords for the replicas' log start offsets.",
                                      labels=["delayedOperation"])
        purgatory.add_metric(["Produce"], broker.stats.delayed_produce.size)
        purgatory.add_metric(["Fetch"], broker.stats.delayed_fetch.size)
        purgatory.add_metric(["DeleteRecords"], broker.stats.delayed_delete_records.size)
        yield purgatory
        yield from self._partition_offsets(partitions)

    def _partition_offsets(self, partitions: list) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset of each replica.", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset of each replica.",
                                  labels=labels)
        high = GaugeMetricFamily("kafka_topic_partition_current_offset",
                                 "High watermark of each led partition (what consumers can read).",
                                 labels=labels)
        for partition in sorted(partitions, key=lambda p: p.topic_partition):
            key = [partition.topic, str(partition.index)]
            end.add_metric(key, partition.log_end_offset)
            start.add_metric(key, partition.log_start_offset)
            if partition.is_leader:
                high.add_metric(key, partition.high_watermark)
        yield from (end, start, high)

    def _log_metrics(self) -> Iterator[Metric]:
        yield _histogram("kafka_log_logflushstats_logflushrateandtimems",
                         "Milliseconds per log fsync and per group-commit round (LogFlushRateAndTimeMs).",
                         [], {(): LOG_FLUSH_STATS.flush_time_ms})
        yield _histogram("kcore_log_groupcommit_roundsize",
                         "Appends made durable by one group-commit fdatasync round.",
                         [], {(): LOG_FLUSH_STATS.round_size})
        write_behind = self.broker.replica_manager.log_manager.write_behind
        yield _counter("kcore_log_writeback_started_bytes",
                       "Appended bytes whose writeback the broker started itself "
                       "(log.writeback.interval.bytes; 0 while it is off).", [],
                       {(): write_behind.started_bytes if write_behind is not None else 0})

    def _group_metrics(self) -> Iterator[Metric]:
        labels = ["consumergroup", "topic", "partition"]
        committed = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                      "Committed offset of each group coordinated here.", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus committed offset, where the high watermark is "
                                "known here (led here, or last given by its leader).", labels=labels)
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of each group coordinated here.",
                                    labels=["consumergroup"])
        lag_service = self.broker.consumer_lag
        for group_id, group in sorted(self.broker.group_coordinator.groups.items()):
            members.add_metric([group_id], len(group.members))
            for (topic, index), value in sorted(group.offsets.items()):
                key = [group_id, topic, str(index)]
                committed.add_metric(key, value.offset)
                end = lag_service.end_offset((topic, index))
                if end is not None:
                    lag.add_metric(key, max(end - value.offset, 0))
        yield from (committed, lag, members)

    def _share_group_metrics(self) -> Iterator[Metric]:
        """Share groups (KIP-932): the share-partitions led here, and the
        members of the share groups coordinated here."""
        labels = ["sharegroup", "topic", "partition"]
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
            "start_offset": GaugeMetricFamily("kafka_sharegroup_start_offset",
                                              "Share-partition start offset.", labels=labels),
            "lag": GaugeMetricFamily("kafka_sharegroup_lag",
                                     "Records past the share-partition start offset not yet acknowledged "
                                     "or archived (KIP-1226's share-partition lag).", labels=labels),
            "in_flight": GaugeMetricFamily("kafka_sharegroup_records_in_flight",
                                           "Records acquired, or released and waiting to be acquired again.",
                                           labels=labels),
            "acquired": GaugeMetricFamily("kafka_sharegroup_records_acquired",
                                          "Records locked by a member now.", labels=labels),
            "deliveries": CounterMetricFamily("kafka_sharegroup_deliveries",
                                              "Deliveries (acquisitions) since the share-partition was "
                                              "loaded here.", labels=labels),
            "archived_by_limit": CounterMetricFamily(
                "kafka_sharegroup_archived_by_delivery_limit",
                "Records archived on reaching the delivery count limit since the share-partition "
                "was loaded here.", labels=labels),
        }
        for row in sorted(self.broker.share_groups.partitions.snapshot(),
                          key=lambda row: (row["group"], row["topic"], row["partition"])):
            key = [row["group"], row["topic"], str(row["partition"])]
            for name, family in families.items():
                family.add_metric(key, row[name])
        members = GaugeMetricFamily("kafka_sharegroup_members", "Members of each share group coordinated here.",
                                    labels=["sharegroup"])
        for group_id, group in sorted(self.broker.share_groups.coordinator.groups.items()):
            members.add_metric([group_id], len(group.members))
        yield from families.values()
        yield members

    def _socket_metrics(self) -> Iterator[Metric]:
        count = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count",
                                  "Open client connections per listener.", labels=["listener"])
        for listener, value in sorted(self.broker.connection_counts().items()):
            count.add_metric([listener], value)
        yield count
        yield _counter("kafka_server_socket_server_metrics_connection_creation",
                       "Connections accepted per listener.", ["listener"],
                       {(listener,): value for listener, value in
                        self.broker.stats.connections_created.items()})
        yield from self._reauthentication_metrics()
        yield _counter("kcore_network_requests_with_trailing_bytes",
                       "Requests answered although bytes followed their last field (ignored, as "
                       "Kafka ignores them), per listener and api key.", ["listener", "api_key"],
                       self.broker.stats.socket_server.requests_with_trailing_bytes)
        yield _counter("kcore_network_cold_fetch_bytes",
                       "Bytes of fetch answers that were not in the page cache, read by a worker "
                       "thread instead of sent by sendfile from the event loop.", [],
                       {(): self.broker.stats.socket_server.cold_bytes})

    def _reauthentication_metrics(self) -> Iterator[Metric]:
        """KIP-368's socket-server-metrics (kcore.metrics.socket_server)."""
        stats = self.broker.stats.socket_server
        prefix = "kafka_server_socket_server_metrics"
        yield _counter(f"{prefix}_successful_reauthentication",
                       "Re-authentications that succeeded, per listener.", ["listener"],
                       {(listener,): v for listener, v in stats.successful_reauthentication.items()})
        yield _counter(f"{prefix}_failed_reauthentication",
                       "Re-authentications that failed (the connection was closed), per listener.",
                       ["listener"],
                       {(listener,): v for listener, v in stats.failed_reauthentication.items()})
        # Kafka's name ends in -count, not -total: a gauge keeps it as it is
        # (a counter family would add _total).
        killed = GaugeMetricFamily(f"{prefix}_expired_connections_killed_count",
                                   "Connections closed because their SASL session expired without "
                                   "re-authentication (cumulative), per listener.",
                                   labels=["listener"])
        for listener, value in sorted(stats.expired_connections_killed.items()):
            killed.add_metric([listener], value)
        yield killed
        sampled = {name: GaugeMetricFamily(f"{prefix}_{name}", doc, labels=["listener"])
                   for name, doc in (
                       ("successful_reauthentication_rate",
                        "Successful re-authentications a second over the last 30-60 s."),
                       ("reauthentication_latency_avg",
                        "Mean ms from SaslHandshake to a successful re-authentication, last 30-60 s."),
                       ("reauthentication_latency_max",
                        "Longest such re-authentication in ms, last 30-60 s."))}
        for listener, latency in sorted(stats.reauthentication_latency_ms.items()):
            sampled["successful_reauthentication_rate"].add_metric([listener], latency.rate())
            sampled["reauthentication_latency_avg"].add_metric([listener], latency.avg())
            sampled["reauthentication_latency_max"].add_metric([listener], latency.max())
        yield from sampled.values()
