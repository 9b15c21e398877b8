"""The CLI against real clients on a real broker: kafka-python reads what
`kcore produce` wrote, `kcore consume` reads what librdkafka wrote, keys land
where librdkafka's murmur2_random puts them, and kcat prints the same
template the same way."""
import shutil
import subprocess

import pytest
from confluent_kafka import Producer as ConfluentProducer
from kafka import KafkaConsumer, TopicPartition

from tests.support.cli import CLI_TIMEOUT_S, kcore_cli

FIELDS = "%p|%o|%k|%s|%h\\n"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def kcore(*args, bootstrap, stdin=None):
    return kcore_cli(*args, "--bootstrap-server", bootstrap, stdin=stdin, text=False)


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    return result


def create(broker, topic, partitions):
    ok(kcore("topics", "create", topic, "--partitions", str(partitions),
             bootstrap=broker.bootstrap))


def kcore_rows(broker, topic, count):
    out = ok(kcore("consume", topic, "--from-beginning", "--max-messages", str(count),
                   "--timeout-ms", "10000", "--format", FIELDS,
                   bootstrap=broker.bootstrap)).stdout
    return [tuple(line.split("|")) for line in out.decode().splitlines()]


def kafka_python_read(broker, topic, partitions, count):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10000, request_timeout_ms=15000)
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        read = []
        for message in consumer:
            read.append((message.partition, message.offset, message.key, message.value,
                         message.headers))
            if len(read) == count:
                break
        return read
    finally:
        consumer.close()


def test_kafka_python_reads_back_what_kcore_produce_wrote_with_every_codec(broker):
    lines = [f"k{i}=value {i} {'x' * (i % 50)}" for i in range(400)]
    for codec in CODECS:
        topic = f"shared-{codec}"
        create(broker, topic, 2)
        ok(kcore("produce", topic, "--key-separator", "=", "--header", "h=1",
                 "--compression", codec, "--acks", "all", bootstrap=broker.bootstrap,
                 stdin="\n".join(lines).encode()))
        read = kafka_python_read(broker, topic, 2, len(lines))
        assert sorted((k.decode(), v.decode()) for _p, _o, k, v, _h in read) == sorted(
            tuple(line.split("=", 1)) for line in lines), codec
        assert all(headers == [("h", b"1")] for *_rest, headers in read), codec
        by_kcore = kcore_rows(broker, topic, len(lines))
        assert sorted(read) == sorted((int(p), int(o), k.encode(), v.encode(), [("h", b"1")])
                                      for p, o, k, v, _h in by_kcore), codec


def test_keys_land_on_the_partitions_librdkafka_murmur2_random_chooses(broker):
    keys = [f"customer-{i}" for i in range(60)]
    create(broker, "by-librdkafka", 5)
    create(broker, "by-kcore", 5)
    producer = ConfluentProducer({"bootstrap.servers": broker.bootstrap,
                                  "partitioner": "murmur2_random"})
    placed = {}

    def delivered(error, message):
        assert error is None, error
        placed[message.key().decode()] = message.partition()
    for key in keys:
        producer.produce("by-librdkafka", key=key, value=b"v", on_delivery=delivered)
    assert producer.flush(15) == 0
    ok(kcore("produce", "by-kcore", "--key-separator", ":", bootstrap=broker.bootstrap,
             stdin="".join(f"{key}:v\n" for key in keys).encode()))
    rows = kcore_rows(broker, "by-kcore", len(keys))
    assert {key: int(partition) for partition, _o, key, _v, _h in rows} == placed


def test_kcore_consume_prints_what_librdkafka_produced(broker):
    create(broker, "from-librdkafka", 3)
    producer = ConfluentProducer({"bootstrap.servers": broker.bootstrap,
                                  "compression.type": "zstd", "linger.ms": 5})
    sent = []
    for i in range(300):
        key, value = f"key{i % 11}".encode(), f"payload {i}".encode()
        producer.produce("from-librdkafka", key=key, value=value, timestamp=1_600_000_000_000 + i,
                         headers=[("seq", str(i).encode())])
        sent.append((key.decode(), value.decode(), f"seq={i}", str(1_600_000_000_000 + i)))
    assert producer.flush(15) == 0
    out = ok(kcore("consume", "from-librdkafka", "--from-beginning", "--max-messages", "300",
                   "--timeout-ms", "10000", "--format", "%k|%s|%h|%T\\n",
                   bootstrap=broker.bootstrap)).stdout
    got = [tuple(line.split("|")) for line in out.decode().splitlines()]
    assert sorted(got) == sorted(sent)
    for key in {row[0] for row in sent}:  # per key (so per partition) order is kept
        assert [row for row in got if row[0] == key] == [row for row in sent if row[0] == key]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="Debian's kcat package is not installed")
def test_kcat_prints_the_same_template_the_same_way(broker):
    create(broker, "templated", 2)
    ok(kcore("produce", "templated", "--key-separator", ":", "--header", "a=1",
             "--header", "b=two", bootstrap=broker.bootstrap,
             stdin=b"x:1\ny:2\nz:3\nw:\n"))
    template = "%t/%p/%o %k=%s (%K,%S) [%h]\\n"
    by_kcore = ok(kcore("consume", "templated", "--from-beginning", "--max-messages", "4",
                        "--timeout-ms", "5000", "--format", template,
                        bootstrap=broker.bootstrap)).stdout
    by_kcat = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", "templated", "-o", "beginning", "-e",
         "-q", "-f", template.replace("\\n", "\n")],
        capture_output=True, timeout=CLI_TIMEOUT_S)
    assert by_kcat.returncode == 0, by_kcat.stderr.decode()
    assert sorted(by_kcore.splitlines()) == sorted(by_kcat.stdout.splitlines())
    assert len(by_kcore.splitlines()) == 4
