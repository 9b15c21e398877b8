"""One load-generator process: a confluent-kafka producer or consumer.

Run as ``python -m kcore.bench.loadgen``, one process per client, so the
clients' Python and librdkafka threads never share a GIL with the harness
or with each other, and any interpreter with confluent-kafka can host it
(the Kafka 0.9 peer needs an older client in its own virtualenv). It
imports only the standard library, confluent_kafka, hdrh and
kcore.bench.payloads.

Line protocol (one JSON spec line on stdin first, then):

    child -> parent (stdout)          parent -> child (stdin)
    ready                             go      start measuring now
    progress <messages>               drain   producers are done: read
    result <json>                             what is left, then report
    error <text>

Producer spec: role, bootstrap, topic, partitions, config, count, rate
(0 = max), message_bytes, payload, seed, stamp, and for a transactional
producer transactional_id and transaction_messages (commit every that
many messages, and what is left at the end). Consumer spec: role,
bootstrap, topic, partitions, config, mode ("catch-up": from offset 0
until ``expected`` messages, as the producers reported them delivered;
"tail": from the log end until drained), latency. The ``wait-topic`` role
waits until every partition of a topic has a leader and reports.
"""
from __future__ import annotations

import json
import resource
import sys
import threading
import time

PROGRESS_INTERVAL_S = 0.25
# Tail mode: after "drain", stop once nothing arrived for this long.
DRAIN_IDLE_S = 1.0
DRAIN_DEADLINE_S = 15.0
CATCH_UP_TIMEOUT_S = 300.0
# Catch-up: give up when no message arrived for this long (a stuck client).
CATCH_UP_STALL_S = 30.0
# Tail mode: poll this long before saying ready, so the first fetches are
# parked at the log end when the producers start.
TAIL_WARMUP_S = 1.0
# Latency histogram range: 1 us .. 10 min at 3 significant digits.
HISTOGRAM_RANGE_US = (1, 600_000_000, 3)
# Client properties newer than the oldest librdkafka the harness runs
# (confluent-kafka 2.0.2, the Kafka 0.9 peer's client), with the version
# that added each (librdkafka's CHANGELOG): an older client refuses to
# start with a property it does not know, so it runs without them.
ADDED_IN = {"fetch.queue.backoff.ms": 0x020200FF}  # librdkafka 2.2.0


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Control:
    """Commands from the parent on stdin, read by a daemon thread.

    Concurrency contract: the reader thread only sets events; the client
    loop only waits on or tests them."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.drain = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            command = line.strip()
            if command == "go":
                self.go.set()
            elif command == "drain":
                self.drain.set()
        self.go.set()
        self.drain.set()


def known_to(config: dict, version: int) -> dict:
    """``config`` less the properties librdkafka ``version`` (as
    ``confluent_kafka.libversion()[1]`` gives it) predates."""
    return {key: value for key, value in config.items() if ADDED_IN.get(key, 0) <= version}


def _client_config(config: dict) -> dict:
    from confluent_kafka import libversion
    return known_to(config, libversion()[1])


def run_producer(spec: dict, control: Control) -> dict:
    from confluent_kafka import Producer

    from kcore.bench.payloads import STAMP, pool
    errors: list[str] = []
    config = _client_config(spec["config"])
    config["delivery.report.only.error"] = True
    config["on_delivery"] = lambda err, msg: errors.append(str(err)) if err else None
    per_transaction = spec.get("transaction_messages", 0)
    if per_transaction:
        config["transactional.id"] = spec["transactional_id"]
    producer = Producer(config)
    producer.list_topics(spec["topic"], timeout=30)
    if per_transaction:
        producer.init_transactions(30)
    values = pool(spec["payload"], spec["message_bytes"], spec["seed"])
    emit("ready")
    control.go.wait()
    cpu0, start = cpu_seconds(), time.time()
    if per_transaction:
        producer.begin_transaction()
    sent, sent_bytes = _produce_loop(producer, spec, values, STAMP if spec.get("stamp") else None)
    if per_transaction:
        producer.commit_transaction(120)
    remaining = producer.flush(120)
    end = time.time()
    partitions = spec["partitions"]
    per_partition = {p: sent // len(partitions) + (1 if j < sent % len(partitions) else 0)
                     for j, p in enumerate(partitions)}
    return {"messages": sent, "bytes": sent_bytes, "start": start, "end": end,
            "cpu_s": cpu_seconds() - cpu0, "undelivered": remaining + len(errors),
            "errors": errors[:5], "per_partition": per_partition,
            "transactions": -(-sent // per_transaction) if per_transaction else 0}


def _produce_loop(producer, spec: dict, values: list[bytes], stamp) -> tuple[int, int]:
    topic, partitions = spec["topic"], spec["partitions"]
    count, rate = spec["count"], spec["rate"]
    n_values, n_partitions = len(values), len(partitions)
    per_transaction = spec.get("transaction_messages", 0)
    sent = sent_bytes = 0
    start = time.perf_counter()
    next_progress = start + PROGRESS_INTERVAL_S
    while sent < count:
        now = time.perf_counter()
        if rate:
            due = start + sent / rate
            if due > now:
                time.sleep(min(due - now, 0.001))
                continue
        value = values[sent % n_values]
        if stamp is not None:
            value = stamp.pack(time.time()) + value[stamp.size:]
        try:
            producer.produce(topic, value, partition=partitions[sent % n_partitions])
        except BufferError:
            producer.poll(0.001)
            continue
        sent += 1
        sent_bytes += len(value)
        if per_transaction and sent % per_transaction == 0 and sent < count:
            producer.commit_transaction(120)
            producer.begin_transaction()
        if rate or sent % 1000 == 0:
            producer.poll(0)
            if now >= next_progress:
                emit(f"progress {sent}")
                next_progress = now + PROGRESS_INTERVAL_S
    return sent, sent_bytes


def run_consumer(spec: dict, control: Control) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer(_client_config(spec["config"]))
    tail = spec["mode"] == "tail"
    assignment = [TopicPartition(spec["topic"], p, OFFSET_BEGINNING) for p in spec["partitions"]]
    consumer.list_topics(spec["topic"], timeout=30)  # connected before "ready"
    _find_coordinator(consumer, assignment[:1])
    if tail:
        _assign_at_log_end(consumer, spec["topic"], spec["partitions"])
    emit("ready")
    control.go.wait()
    try:
        if tail:
            return _consume_tail(consumer, spec, control)
        # Assigned only now: librdkafka starts fetching on assign(), and
        # what it prefetched before the clock starts would not count.
        cpu0, start = cpu_seconds(), time.time()
        consumer.assign(assignment)
        return _consume_catch_up(consumer, spec, cpu0, start)
    finally:
        consumer.close()


def _find_coordinator(consumer, partitions: list) -> None:
    """Ask for committed offsets once, so that the group coordinator is
    found (and a broker creates ``__consumer_offsets``) before "ready", not
    inside the timed phase. A broker without group offsets (a peer) fails
    the call, and then the phase pays whatever it does instead."""
    from confluent_kafka import KafkaException
    try:
        consumer.committed(partitions, timeout=30)
    except KafkaException as error:
        print(f"committed offsets unavailable: {error}", file=sys.stderr)


def _assign_at_log_end(consumer, topic: str, partitions: list) -> None:
    """Assign at each partition's high watermark, asked for explicitly:
    with OFFSET_END, librdkafka resolves "latest" on its first fetch, and a
    message produced before that would be skipped."""
    from confluent_kafka import TopicPartition
    ends = [TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1])
            for p in partitions]
    consumer.assign(ends)
    warmup_end = time.monotonic() + TAIL_WARMUP_S
    while time.monotonic() < warmup_end:
        consumer.poll(0.1)


def _consume_catch_up(consumer, spec: dict, cpu0: float, start: float) -> dict:
    expected = spec["expected"]
    seen = seen_bytes = 0
    errors: list[str] = []
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    next_progress = time.monotonic() + PROGRESS_INTERVAL_S
    last_message = time.monotonic()
    while seen < expected and time.monotonic() < deadline \
            and time.monotonic() - last_message < CATCH_UP_STALL_S:
        before = seen
        # A batch call waits for all n messages or its timeout: never ask
        # for more than are left.
        for message in consumer.consume(min(10_000, expected - seen), 0.5):
            if message.error() is None:
                seen += 1
                seen_bytes += len(message.value())
            elif len(errors) < 5 and not message.error().code() == -191:  # -191: partition EOF
                errors.append(str(message.error()))
        if seen > before:
            last_message = time.monotonic()
        if time.monotonic() >= next_progress:
            emit(f"progress {seen}")
            next_progress = time.monotonic() + PROGRESS_INTERVAL_S
    end = time.time()
    return {"messages": seen, "bytes": seen_bytes, "expected": expected, "start": start, "end": end,
            "cpu_s": cpu_seconds() - cpu0, "errors": errors}


def _consume_tail(consumer, spec: dict, control: Control) -> dict:
    latency = _Latency() if spec.get("latency") else None
    cpu0, start = cpu_seconds(), time.time()
    seen = seen_bytes = 0
    errors: list[str] = []
    last_message = time.monotonic()
    drain_deadline = None
    next_progress = time.monotonic() + PROGRESS_INTERVAL_S
    while True:
        # poll(), not consume(n): a batch call returns only once n messages
        # are in or its timeout passes, which would add up to n/rate seconds.
        message = consumer.poll(0.1)
        now = time.monotonic()
        if message is not None and message.error() is None:
            value = message.value()
            if latency is not None:
                latency.record(message, value, time.time())
            seen += 1
            seen_bytes += len(value)
            last_message = now
        elif message is not None and len(errors) < 5:
            errors.append(str(message.error()))
        if now >= next_progress:
            emit(f"progress {seen}")
            next_progress = now + PROGRESS_INTERVAL_S
        if control.drain.is_set():
            drain_deadline = drain_deadline or now + DRAIN_DEADLINE_S
            if now - last_message > DRAIN_IDLE_S or now > drain_deadline:
                break
    return {"messages": seen, "bytes": seen_bytes, "start": start, "end": time.time(),
            "cpu_s": cpu_seconds() - cpu0, "errors": errors,
            **(latency.encoded() if latency is not None else {"histogram": None})}


class _Latency:
    """Receive time minus the send time stamped at the start of each value.
    Where the broker stamps its append time instead of the producer's
    (``message.timestamp.type``, or the broker's
    ``log.message.timestamp.type``, set to LogAppendTime), also the two
    halves: producer to append (linger, the request, the append) and
    append to consumer (the fetch and the client). An append time is the
    broker's clock in whole milliseconds; its middle (+0.5 ms) is taken, so
    each half is within 0.5 ms and their sum is the whole."""

    def __init__(self):
        from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
        from hdrh.histogram import HdrHistogram

        from kcore.bench.payloads import STAMP
        self._unpack, self._log_append_time = STAMP.unpack_from, TIMESTAMP_LOG_APPEND_TIME
        self.total, self.to_append, self.from_append = (HdrHistogram(*HISTOGRAM_RANGE_US)
                                                        for _ in range(3))

    def record(self, message, value: bytes, received: float) -> None:
        sent, = self._unpack(value)
        self.total.record_value(max(1, int((received - sent) * 1e6)))
        kind, appended_ms = message.timestamp()
        if kind == self._log_append_time:
            appended = appended_ms / 1000 + 0.0005
            self.to_append.record_value(max(1, int((appended - sent) * 1e6)))
            self.from_append.record_value(max(1, int((received - appended) * 1e6)))

    def encoded(self) -> dict:
        result = {"histogram": self.total.encode().decode("ascii")}
        if self.to_append.get_total_count():
            result["to_append"] = self.to_append.encode().decode("ascii")
            result["from_append"] = self.from_append.encode().decode("ascii")
        return result


def wait_for_topic(spec: dict, control: Control) -> dict:
    """Until every partition of the topic has a leader (brokers that create
    topics asynchronously, and Kafka 0.9 whose clients need an old client)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(spec["config"])
    deadline = time.monotonic() + spec.get("timeout_s", 60)
    while time.monotonic() < deadline:
        metadata = admin.list_topics(spec["topic"], timeout=10).topics.get(spec["topic"])
        if metadata is not None and metadata.error is None \
                and len(metadata.partitions) == spec["partition_count"] \
                and all(p.leader >= 0 for p in metadata.partitions.values()):
            return {"ready": True}
        time.sleep(0.2)
    raise RuntimeError(f"{spec['topic']}: partitions without a leader")


ROLES = {"producer": run_producer, "consumer": run_consumer, "wait-topic": wait_for_topic}


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    control = Control()
    try:
        result = ROLES[spec["role"]](spec, control)
        emit(f"progress {result.get('messages', 0)}")
        emit("result " + json.dumps(result))
    except Exception as error:  # reported to the parent, which fails the run
        emit(f"error {type(error).__name__}: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
