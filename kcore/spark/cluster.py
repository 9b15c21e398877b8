"""The driver's view of the cluster: partitions and their offsets.

One librdkafka consumer (confluent-kafka) that never subscribes: topic
metadata (all topics, so no topic is auto-created by asking), earliest
and latest offsets per partition (ListOffsets), offsets for timestamps.
Every call waits at most ``kafka.default.api.timeout.ms``; an unreachable
cluster, a missing topic or partition become a ``ClusterError`` whose
sentence names what was asked, which Spark shows as the query's error.

Not thread-safe: one driver thread uses it.
"""
from __future__ import annotations

import re
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kcore.spark.options import ClientOptions, Strategy, TopicPartition


class ClusterError(RuntimeError):
    """The cluster cannot answer what the query needs."""


class ClusterView:
    def __init__(self, client: ClientOptions):
        self.client = client
        self.timeout_s = client.api_timeout_s
        settings = {**client.kafka_params, "bootstrap.servers": client.bootstrap_servers,
                    "group.id": client.kafka_params.get("group.id") or f"spark-kafka-driver-{uuid.uuid4()}",
                    "enable.auto.commit": False}
        try:
            self._consumer = Consumer(settings)
        except (KafkaException, ValueError) as exc:
            raise ClusterError(f"bad kafka.* option for librdkafka: {exc}") from None

    def close(self) -> None:
        self._consumer.close()

    def _unreachable(self, exc: KafkaException, what: str) -> ClusterError:
        error = exc.args[0] if exc.args else exc
        return ClusterError(f"cannot {what} from kafka.bootstrap.servers={self.client.bootstrap_servers} "
                            f"within {self.timeout_s:g} s (kafka.default.api.timeout.ms): {error}")

    def partitions(self, strategy: Strategy) -> list[TopicPartition]:
        """The partitions the strategy names, sorted; a subscribed or
        assigned topic (or partition) that does not exist is an error, a
        pattern that matches nothing is not (it may match later)."""
        try:
            metadata = self._consumer.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise self._unreachable(exc, "read the topic list") from None
        existing = {name: sorted(topic.partitions) for name, topic in metadata.topics.items()
                    if topic.error is None}
        if strategy.kind == "subscribepattern":
            pattern = re.compile(strategy.pattern)
            return sorted((name, index) for name, indexes in existing.items()
                          if pattern.fullmatch(name) for index in indexes)
        wanted = strategy.topics or tuple(sorted({topic for topic, _ in strategy.assigned}))
        missing = [topic for topic in wanted if topic not in existing]
        if missing:
            raise ClusterError(f"topic(s) {', '.join(missing)} do not exist on the cluster at "
                               f"{self.client.bootstrap_servers}")
        if strategy.kind == "subscribe":
            return sorted((name, index) for name in wanted for index in existing[name])
        absent = [f"{t}-{p}" for t, p in strategy.assigned if p not in existing[t]]
        if absent:
            raise ClusterError(f"assigned partition(s) {', '.join(absent)} do not exist")
        return list(strategy.assigned)

    def watermarks(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """(earliest, latest) offsets of each partition; latest is the high
        watermark, the end of what consumers can read."""
        result = {}
        for topic, index in partitions:
            try:
                low, high = self._consumer.get_watermark_offsets(
                    KafkaTopicPartition(topic, index), timeout=self.timeout_s, cached=False)
            except KafkaException as exc:
                raise self._unreachable(exc, f"read the offsets of {topic}-{index}") from None
            result[(topic, index)] = (low, high)
        return result

    def offsets_for_times(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp; None where no record is."""
        if not timestamps:
            return {}
        asked = [KafkaTopicPartition(topic, index, ts) for (topic, index), ts in timestamps.items()]
        try:
            found = self._consumer.offsets_for_times(asked, timeout=self.timeout_s)
        except KafkaException as exc:
            raise self._unreachable(exc, "look up offsets by timestamp") from None
        result: dict[TopicPartition, int | None] = {}
        for item in found:
            if item.error is not None and item.error.code() != KafkaError.NO_ERROR:
                raise ClusterError(f"offset for a timestamp of {item.topic}-{item.partition}: {item.error}")
            result[(item.topic, item.partition)] = item.offset if item.offset >= 0 else None
        return result
