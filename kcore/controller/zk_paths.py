"""Kafka's ZooKeeper layout and the JSON of each znode, so operators (and
Kafka's own tools) recognise a kcore cluster's data. Paths are relative to
the chroot of ``zookeeper.connect``.

| path | content |
|---|---|
| /cluster/id | ``{"version":"1","id":"<cluster id>"}`` |
| /controller | ephemeral ``{"version":1,"brokerid":N,"timestamp":"ms"}`` |
| /controller_epoch | the controller epoch, decimal text; its znode version fences writes |
| /brokers/ids/N | ephemeral ``{"version":5,"host","port","endpoints":["NAME://h:p"],"listener_security_protocol_map","rack","jmx_port":-1,"timestamp"}``; its czxid is the broker epoch |
| /brokers/topics/T | ``{"version":3,"partitions":{"0":[1,2]},"topic_id":"<base64 uuid>","adding_replicas":{},"removing_replicas":{}}`` |
| /brokers/topics/T/partitions/P/state | ``{"version":1,"controller_epoch","leader","leader_epoch","isr"}``; its znode version is the partition epoch |
| /config/topics/T | ``{"version":1,"config":{key: value}}`` |
| /config/changes/config_change_NNNNNNNNNN | sequential ``{"version":2,"entity_path":"topics/T"}`` |
| /admin/delete_topics/T | empty: T is to be deleted |
| /log_dir_event_notification/log_dir_event_NNNNNNNNNN | sequential ``{"version":1,"broker":N,"event":1}``: a log dir of broker N failed |

Source: Kafka's ``kafka.zk.ZkData`` (the layout up to Kafka 3.x).
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from kcore.metadata import NO_TOPIC_ID, BrokerInfo, topic_id_from_string, topic_id_to_string

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
LOG_DIR_EVENTS = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1  # Kafka's LogDirEventNotificationHandler.LogDirFailureEvent
# Persistent paths every broker makes sure of at start (Kafka's PersistentZkPaths).
PERSISTENT_PATHS = ("/cluster", BROKER_IDS, TOPICS, CONFIG_TOPICS, CONFIG_CHANGES,
                    DELETE_TOPICS, LOG_DIR_EVENTS)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(data: bytes) -> Any:
    try:
        return json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"znode data is not JSON: {exc}") from None


def _now() -> str:
    return str(int(time.time() * 1000))


# -- cluster id and controller ---------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_load(data)["id"])


def encode_controller(broker_id: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": _now()})


def decode_controller(data: bytes) -> int:
    return int(_load(data)["brokerid"])


# -- brokers -------------------------------------------------------------------------------------
def encode_broker(broker: BrokerInfo) -> bytes:
    listener = broker.listener
    others = [e for e in broker.endpoints if e[0] != listener]
    return _dump({
        "version": 5, "host": broker.host, "port": broker.port, "jmx_port": -1,
        # The inter-broker listener first: readers take it as the broker's address.
        "endpoints": [f"{listener}://{broker.host}:{broker.port}",
                      *(f"{name}://{host}:{port}" for name, host, port in others)],
        "listener_security_protocol_map": {
            name: dict(broker.security_protocols).get(name, "PLAINTEXT")
            for name in [listener, *(e[0] for e in others)]},
        "rack": broker.rack, "features": {}, "timestamp": _now()})


def decode_broker(broker_id: int, data: bytes, broker_epoch: int) -> BrokerInfo:
    value = _load(data)
    listener, host, port = "PLAINTEXT", value.get("host"), value.get("port")
    parsed = []
    for endpoint in value.get("endpoints") or []:
        name, _, address = endpoint.partition("://")
        host_part, _, port_part = address.rpartition(":")
        parsed.append((name, host_part.strip("[]"), int(port_part)))
    if parsed:
        listener, host, port = parsed[0]
    # One endpoint is host/port itself; endpoints lists them only when there are more.
    return BrokerInfo(broker_id, host, int(port), value.get("rack"), broker_epoch, listener,
                      tuple(parsed) if len(parsed) > 1 else ())


# -- topics ----------------------------------------------------------------------------------------
def encode_assignment(assignment: dict[int, list[int]], topic_id: uuid.UUID,
                      adding: dict[int, list[int]] | None = None,
                      removing: dict[int, list[int]] | None = None) -> bytes:
    """``adding``/``removing``: replicas a reassignment adds or removes,
    only for partitions that have some (Kafka writes no empty lists)."""
    def nonempty(replicas: dict[int, list[int]] | None) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted((replicas or {}).items()) if r}
    value: dict[str, Any] = {"version": 3}
    if topic_id != NO_TOPIC_ID:  # a topic of a pre-2.8 writer, until the controller gives it one
        value["topic_id"] = topic_id_to_string(topic_id)
    return _dump({**value, "partitions": {str(p): list(r) for p, r in sorted(assignment.items())},
                  "adding_replicas": nonempty(adding), "removing_replicas": nonempty(removing)})


def decode_assignment(data: bytes) -> tuple[dict[int, list[int]], uuid.UUID]:
    """(partition -> replicas, topic id); a znode written before topic ids
    (Kafka before 2.8, version 1 or 2) has none: ``NO_TOPIC_ID``, until the
    controller gives the topic one (active.py)."""
    value = _load(data)
    assignment = {int(p): [int(r) for r in replicas]
                  for p, replicas in value.get("partitions", {}).items()}
    topic_id = value.get("topic_id")
    if not topic_id:
        return assignment, NO_TOPIC_ID
    try:
        return assignment, topic_id_from_string(str(topic_id))
    except ValueError as exc:
        raise ValueError(f"znode data has a bad topic_id: {exc}") from None


def decode_reassignments(data: bytes) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(adding_replicas, removing_replicas) per partition of an assignment znode."""
    value = _load(data)
    def lists(key: str) -> dict[int, list[int]]:
        return {int(p): [int(r) for r in replicas]
                for p, replicas in (value.get(key) or {}).items() if replicas}
    return lists("adding_replicas"), lists("removing_replicas")


def encode_partition_state(controller_epoch: int, leader: int, leader_epoch: int,
                           isr: list[int] | tuple[int, ...]) -> bytes:
    return _dump({"version": 1, "controller_epoch": controller_epoch, "leader": leader,
                  "leader_epoch": leader_epoch, "isr": list(isr)})


def decode_partition_state(data: bytes) -> tuple[int, int, int, list[int]]:
    """(controller_epoch, leader, leader_epoch, isr)."""
    value = _load(data)
    return (int(value["controller_epoch"]), int(value["leader"]), int(value["leader_epoch"]),
            [int(r) for r in value["isr"]])


def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(configs)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    if not data:
        return {}
    return {str(k): str(v) for k, v in _load(data).get("config", {}).items()}


def encode_config_change(topic: str) -> bytes:
    return _dump({"version": 2, "entity_path": f"topics/{topic}"})


def decode_config_change(data: bytes) -> str | None:
    """The topic a change notification names, or None for other entities."""
    entity = str(_load(data).get("entity_path", ""))
    kind, _, name = entity.partition("/")
    return name if kind == "topics" and name else None


# -- log dir events ------------------------------------------------------------------------------
def encode_log_dir_event(broker_id: int) -> bytes:
    return _dump({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes) -> int:
    """The broker id a log dir event names."""
    return int(_load(data)["broker"])
