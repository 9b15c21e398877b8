"""`kcore produce` / `kcore consume` failures and interruptions: what the user
sees and what is kept."""
import os
import signal
import subprocess

from tests.support.cli import CLI_TIMEOUT_S, kcore_cli, kcore_command


def kcore(*args, bootstrap, stdin=None):
    return kcore_cli(*args, "--bootstrap-server", bootstrap, stdin=stdin, text=False)


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    return result


def create(broker, topic, partitions):
    ok(kcore("topics", "create", topic, "--partitions", str(partitions),
             bootstrap=broker.bootstrap))


def test_producing_to_an_unknown_topic_with_auto_create_off_fails(broker_factory):
    broker = broker_factory({"auto.create.topics.enable": "false"})
    produced = kcore("produce", "nowhere", bootstrap=broker.bootstrap, stdin=b"x\n")
    assert produced.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in produced.stderr.decode()
    consumed = kcore("consume", "nowhere", "--timeout-ms", "500", bootstrap=broker.bootstrap)
    assert consumed.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in consumed.stderr.decode()


def test_a_line_without_the_key_separator_stops_with_an_error(broker):
    create(broker, "strict-keys", 1)
    result = kcore("produce", "strict-keys", "--key-separator", ":",
                   bootstrap=broker.bootstrap, stdin=b"a:1\nno separator\nb:2\n")
    assert result.returncode == 1
    assert "line 2" in result.stderr.decode()
    out = ok(kcore("consume", "strict-keys", "--from-beginning", "--timeout-ms", "800",
                   "--format", "%k=%s\\n", bootstrap=broker.bootstrap)).stdout
    assert out == b"a=1\n"


def test_a_batch_over_max_message_bytes_is_reported_as_message_too_large(broker):
    ok(kcore("topics", "create", "small", "--config", "max.message.bytes=1000",
             bootstrap=broker.bootstrap))
    result = kcore("produce", "small", bootstrap=broker.bootstrap,
                   stdin=b"short\n" + b"x" * 5000 + b"\n")
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "2 records not produced" in stderr and "MESSAGE_TOO_LARGE" in stderr
    assert "Produced 0 records" in stderr


def test_an_explicit_offset_past_the_end_is_out_of_range(broker):
    create(broker, "short", 1)
    ok(kcore("produce", "short", bootstrap=broker.bootstrap, stdin=b"a\nb\n"))
    result = kcore("consume", "short", "--offset", "100", "--timeout-ms", "2000",
                   bootstrap=broker.bootstrap)
    assert result.returncode == 1
    assert "OFFSET_OUT_OF_RANGE" in result.stderr.decode()
    assert result.stdout == b""


def test_interrupting_produce_still_sends_the_lines_already_read(broker):
    create(broker, "interrupted", 1)
    read_end, write_end = os.pipe()
    producer = subprocess.Popen(
        kcore_command("produce", "interrupted", "--bootstrap-server", broker.bootstrap),
        stdin=read_end, stderr=subprocess.PIPE)
    os.close(read_end)
    try:
        os.write(write_end, b"one\ntwo\n")
        # stdin stays open, so only ^C ends this producer; once its lines
        # are readable it is surely running.
        out = ok(kcore("consume", "interrupted", "--from-beginning", "--max-messages", "2",
                       "--timeout-ms", "20000", bootstrap=broker.bootstrap)).stdout
        producer.send_signal(signal.SIGINT)
        _, stderr = producer.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        os.close(write_end)
        producer.kill()
    assert out == b"one\ntwo\n"
    assert producer.returncode == 0, stderr.decode()
    assert "Produced 2 records" in stderr.decode()


def test_interrupting_consume_ends_it_cleanly_with_the_count(broker):
    create(broker, "endless", 1)
    ok(kcore("produce", "endless", bootstrap=broker.bootstrap, stdin=b"a\nb\nc\n"))
    consumer = subprocess.Popen(
        kcore_command("consume", "endless", "--from-beginning", "--bootstrap-server", broker.bootstrap),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        printed = b"".join(consumer.stdout.readline() for _ in range(3))
        consumer.send_signal(signal.SIGINT)
        stdout, stderr = consumer.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        consumer.kill()
    assert consumer.returncode == 0, stderr.decode()
    assert printed == b"a\nb\nc\n" and stdout == b""
    assert "Processed a total of 3 messages" in stderr.decode()
    assert "Traceback" not in stderr.decode()
