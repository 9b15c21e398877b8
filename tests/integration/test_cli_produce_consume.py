"""`kcore produce` / `kcore consume` against a real broker subprocess."""
import subprocess
import time

from kcore.client.partitioner import partition_for_key
from tests.support.cli import kcore_cli, kcore_command

FIELDS = "%p|%o|%k|%s|%h\\n"


def kcore(*args, bootstrap, stdin=None):
    return kcore_cli(*args, "--bootstrap-server", bootstrap, stdin=stdin, text=False)


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    return result


def create(broker, topic, partitions):
    ok(kcore("topics", "create", topic, "--partitions", str(partitions),
             bootstrap=broker.bootstrap))


def consume_fields(broker, topic, count, *extra):
    """(partition, offset, key, value, headers) of ``count`` records from the beginning."""
    out = ok(kcore("consume", topic, "--from-beginning", "--max-messages", str(count),
                   "--timeout-ms", "10000", "--format", FIELDS, *extra,
                   bootstrap=broker.bootstrap)).stdout
    rows = []
    for line in out.decode().splitlines():
        partition, offset, key, value, headers = line.split("|")
        rows.append((int(partition), int(offset), key, value, headers))
    return rows


def test_keyed_lines_with_headers_come_back_in_order_on_the_keys_partitions(broker):
    create(broker, "events", 3)
    lines = [f"user{i % 7}:event {i}" for i in range(300)]
    result = ok(kcore("produce", "events", "--key-separator", ":", "--header", "source=cli",
                      "--header", "kind=test", bootstrap=broker.bootstrap,
                      stdin="\n".join(lines).encode() + b"\n"))
    assert "Produced 300 records" in result.stderr.decode()

    rows = consume_fields(broker, "events", 300)
    assert len(rows) == 300
    for partition, _offset, key, _value, headers in rows:
        assert partition == partition_for_key(key.encode(), 3)
        assert headers == "source=cli,kind=test"
    for partition in range(3):
        mine = [row for row in rows if row[0] == partition]
        assert [row[1] for row in mine] == list(range(len(mine)))
        expected = [line.split(":", 1) for line in lines
                    if partition_for_key(line.split(":")[0].encode(), 3) == partition]
        assert [[row[2], row[3]] for row in mine] == expected


def test_consume_from_timestamp_starts_at_the_first_later_record(broker):
    create(broker, "timed", 1)
    ok(kcore("produce", "timed", bootstrap=broker.bootstrap, stdin=b"old-1\nold-2\n"))
    time.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)
    ok(kcore("produce", "timed", bootstrap=broker.bootstrap, stdin=b"new-1\nnew-2\n"))
    out = ok(kcore("consume", "timed", "--from-timestamp", str(boundary_ms), "--timeout-ms",
                   "1500", "--format", "%o %s %T\\n", bootstrap=broker.bootstrap)).stdout
    rows = [line.split() for line in out.decode().splitlines()]
    assert [(offset, value) for offset, value, _ts in rows] == [("2", "new-1"), ("3", "new-2")]
    assert all(int(ts) >= boundary_ms for _o, _v, ts in rows)


def test_consume_from_a_future_timestamp_waits_at_the_end(broker):
    create(broker, "future", 1)
    ok(kcore("produce", "future", bootstrap=broker.bootstrap, stdin=b"a\nb\n"))
    result = ok(kcore("consume", "future", "--from-timestamp", str(int(time.time() * 1000) + 10**7),
                      "--timeout-ms", "800", bootstrap=broker.bootstrap))
    assert result.stdout == b""


def test_consume_offsets_and_one_partition(broker):
    create(broker, "ranged", 2)
    ok(kcore("produce", "ranged", "--partition", "1", bootstrap=broker.bootstrap,
             stdin="".join(f"m{i}\n" for i in range(10)).encode()))
    common = ("--partition", "1", "--timeout-ms", "1000")
    from_offset = ok(kcore("consume", "ranged", "--offset", "7", *common,
                           bootstrap=broker.bootstrap)).stdout
    assert from_offset == b"m7\nm8\nm9\n"
    from_end = ok(kcore("consume", "ranged", "--offset", "-2", *common,
                        bootstrap=broker.bootstrap)).stdout
    assert from_end == b"m8\nm9\n"
    other = ok(kcore("consume", "ranged", "--partition", "0", "--from-beginning",
                     "--timeout-ms", "800", bootstrap=broker.bootstrap))
    assert other.stdout == b""
    assert "Processed a total of 0 messages" in other.stderr.decode()


def test_consume_by_default_prints_only_new_records(broker):
    create(broker, "live", 1)
    ok(kcore("produce", "live", bootstrap=broker.bootstrap, stdin=b"before\n"))
    command = kcore_command("consume", "live", "--max-messages", "1",
                            "--timeout-ms", "30000", "--bootstrap-server", broker.bootstrap)
    consumer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Produce until the consumer, once it has found the end, picks one up.
        for _ in range(40):
            ok(kcore("produce", "live", bootstrap=broker.bootstrap, stdin=b"after\n"))
            try:
                stdout, stderr = consumer.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        consumer.kill()
    assert consumer.returncode == 0, stderr.decode()
    assert stdout == b"after\n"


def test_every_acks_level_delivers_every_line(broker):
    lines = [f"line {i}" for i in range(2000)]
    for acks in ("0", "1", "all"):
        topic = f"acked-{acks}"
        create(broker, topic, 4)
        result = ok(kcore("produce", topic, "--acks", acks, bootstrap=broker.bootstrap,
                          stdin="\n".join(lines).encode()))
        assert "Produced 2000 records" in result.stderr.decode()
        rows = consume_fields(broker, topic, len(lines))
        assert sorted(value for _p, _o, _k, value, _h in rows) == sorted(lines), acks


def test_null_key_lines_fill_partitions_a_batch_at_a_time(broker):
    create(broker, "sticky", 4)
    lines = b"".join(b"row %d\n" % i for i in range(5000))
    ok(kcore("produce", "sticky", bootstrap=broker.bootstrap, stdin=lines))
    rows = consume_fields(broker, "sticky", 5000)
    assert len(rows) == 5000
    # Contiguous runs per partition: a batch's records stay together.
    runs = 1 + sum(1 for a, b in zip(rows, rows[1:]) if a[0] != b[0])
    assert runs < 5000 // 100


def test_producing_to_an_unknown_topic_creates_it_when_auto_create_is_on(broker):
    ok(kcore("produce", "fresh", bootstrap=broker.bootstrap, stdin=b"first\n"))
    out = ok(kcore("consume", "fresh", "--from-beginning", "--max-messages", "1",
                   "--timeout-ms", "5000", bootstrap=broker.bootstrap)).stdout
    assert out == b"first\n"
