"""`kcore share-groups` against a broker with a real ShareConsumer's group:
list, describe (start offset and lag), set-config, reset-offsets (dry run,
then executed; refused while the group has members), delete."""
from __future__ import annotations

from tests.support.cli import kcore_cli
from tests.support.share import create_topic, produce, share_consumer, unique


def _share_groups(broker, *args: str):
    return kcore_cli("share-groups", *args, "--bootstrap-server", broker.bootstrap)


def _row(output: str, topic: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if f" {topic} " in f" {line} ")


def test_list_describe_reset_and_delete_a_share_group(broker):
    topic, group = unique("cli-share"), unique("g")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, 10)
    configured = _share_groups(broker, "set-config", group, "share.auto.offset.reset=earliest")
    assert configured.returncode == 0, configured.stderr
    consumer = share_consumer(broker.bootstrap, group, topic, **{"max.poll.records": "4"})
    got: list[int] = []
    for _ in range(40):
        got += [m.offset() for m in consumer.poll(0.5) if not m.error()]
        if got:
            break
    consumer.commit_sync()
    assert _share_groups(broker, "reset-offsets", group, "--topic", topic, "--to-earliest",
                         "--execute").returncode == 1, "refused while the group has members"
    consumer.close()
    assert group in _share_groups(broker, "list").stdout.split()
    described = _share_groups(broker, "describe", group)
    assert described.returncode == 0, described.stderr
    assert _row(described.stdout, topic)[2:] == ["0", str(len(got)), str(10 - len(got))]
    dry = _share_groups(broker, "reset-offsets", group, "--topic", topic, "--to-offset", "2")
    assert dry.returncode == 0 and "Dry run" in dry.stdout
    assert _row(_share_groups(broker, "describe", group).stdout, topic)[3] == str(len(got))
    done = _share_groups(broker, "reset-offsets", group, "--topic", topic, "--to-offset", "2", "--execute")
    assert done.returncode == 0, done.stderr
    assert _row(_share_groups(broker, "describe", group).stdout, topic)[2:] == ["0", "2", "8"]
    deleted = _share_groups(broker, "delete", group)
    assert deleted.returncode == 0, deleted.stderr
    assert group not in _share_groups(broker, "list").stdout.split()
