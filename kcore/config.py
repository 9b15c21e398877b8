"""Broker and topic configuration with Kafka's names, types and defaults.

A broker reads a `server.properties` file (Java properties syntax) plus
`--override key=value` pairs. Every key has a documented default; an unknown
key or a value of the wrong type is a ConfigError naming the key, raised at
start-up before anything touches the data dir.

Topic-level keys (`retention.ms`, `segment.bytes`, ...) default to their
broker-level synonym (`log.retention.ms`, `log.segment.bytes`, ...), as in
Kafka's LogConfig; DescribeConfigs reports where each value came from.

Layer: below every package that reads it (handlers for DescribeConfigs and
topic validation, coordinator for group settings, server for start-up) and
beside protocol: the schema is data and parsing only, imports nothing of
kcore but its siblings config_def.py (Kafka's value types) and
topic_config.py (every topic key), and does no I/O but reading the
properties file it is given.
"""
from __future__ import annotations

import functools
import re
import socket
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcore.config_def import ConfigError
from kcore.listener_config import (
    CALLBACK_HANDLER_KEY,
    DEFAULT_PROTOCOL_MAP,
    JWT_VALIDATOR_CLASSES,
    OAUTHBEARER_KEYS,
    REAUTH_KEY,
    SASL_MECHANISMS,
    UNSECURED_VALIDATOR_CLASS,
    Listener,
    jaas_key,
    mechanism_key,
    parse_protocol_map,
    split_prefixed,
)
from kcore.protocol.constants import INT32_MAX, INT64_MAX
from kcore.topic_config import TOPIC_KEYS, check_combination, topic_defaults
from kcore.topic_config import parse_topic_configs as parse_topic_configs

__all__ = ["BROKER_KEYS", "SENSITIVE_KEYS", "TOPIC_KEYS", "BrokerConfig", "ConfigError", "ConfigKey",
           "check_combination", "parse_properties", "parse_topic_configs"]


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _principals(text: str) -> list[str]:
    """super.users: principals separated by ';' (a principal name may hold
    a comma), each Type:name."""
    principals = [item.strip() for item in text.split(";") if item.strip()]
    for principal in principals:
        kind, sep, name = principal.partition(":")
        if not (kind and sep and name):
            raise ValueError(f"{principal!r} is not a principal of the form User:name")
    return principals


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


# Kafka's assignor class names and the short names its 4.x configs accept.
_ASSIGNOR_CLASSES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def _assignors(text: str) -> list[str]:
    names = [_ASSIGNOR_CLASSES.get(item, item) for item in _list(text)]
    unknown = [name for name in names if name not in ("uniform", "range")]
    if unknown or not names:
        raise ValueError(f"unknown assignors {unknown}: expected uniform or range")
    return names


def _rebalance_protocols(text: str) -> list[str]:
    protocols = [item.lower() for item in _list(text)]
    if "classic" not in protocols or any(p not in ("classic", "consumer") for p in protocols):
        raise ValueError("expected classic, optionally with consumer")
    return protocols


def _cleanup_policy(text: str) -> str:
    parts = sorted(set(_list(text)))
    if not parts or any(p not in ("compact", "delete") for p in parts):
        raise ValueError("expected compact, delete or compact,delete")
    return ",".join(parts)


def _journal_bytes(value: Any) -> int:
    size = int(value)
    if size != 0 and size < (2 << 20):
        raise ValueError("must be 0 (no journal) or at least 2097152")
    return size


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if value < minimum:
            raise ValueError(f"must be >= {minimum}")
        return value
    return parse


def _jwks_url(text: str) -> str:
    """Kafka's check of sasl.oauthbearer.jwks.endpoint.url: a URL of the
    http, https or file protocol (the file itself is read at start)."""
    value = text.strip()
    parts = urllib.parse.urlsplit(value)
    if parts.scheme.lower() not in ("http", "https", "file"):
        raise ValueError(f"contains a URL ({value}) that contains an invalid protocol ({parts.scheme}); "
                         'only "http", "https", and "file" protocol are supported')
    if parts.scheme.lower() != "file" and not parts.hostname:
        raise ValueError(f"contains a URL ({value}) without a host")
    if parts.scheme.lower() == "file" and not parts.path:
        raise ValueError(f"contains a URL ({value}) without a path")
    return value


def _claim_name(text: str) -> str:
    if not text.strip():
        raise ValueError("must be non-null, non-empty, and non-whitespace")
    return text.strip()


def _store_type(text: str) -> str:
    value = text.strip().upper()
    if value == "JKS":
        raise ValueError("JKS is Java's own format; convert the store with keytool -importkeystore "
                         "-srckeystore S.jks -destkeystore S.p12 -deststoretype PKCS12 and set PKCS12")
    if value not in ("PEM", "PKCS12"):
        raise ValueError(f"must be PEM or PKCS12, not {text.strip()!r}")
    return value


def _buffer_bytes(text: str) -> int:
    """A socket buffer size: -1 (the OS default) or a positive byte count."""
    value = int(text.strip())
    if value != -1 and value < 1:
        raise ValueError("must be -1 (the OS default) or >= 1")
    return value


def _processes(text: str) -> int | str:
    value = text.strip()
    if value == "auto":
        return value
    count = int(value)
    if not 1 <= count <= 256:
        raise ValueError("must be auto or between 1 and 256")
    return count


def _http_listeners(text: str) -> list[str]:
    items = _list(text)
    for item in items:
        split_http_listener(item)
    return items


def _protocol_map(text: str) -> str:
    return ",".join(f"{name}:{protocol}" for name, protocol in parse_protocol_map(text).items())


def _upper(text: str) -> str:
    return text.strip().upper()


def _ratio(text: str) -> float:
    value = float(text.strip())
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")
    return value


def _like(topic_key: str) -> Callable[[str], Any]:
    """A broker synonym parses and validates as its topic key does."""
    return TOPIC_KEYS[topic_key].parse_value


CODECS = ("producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd")
# replica.selector.class (KIP-392): Kafka's class names and kcore's own for
# the two selectors kcore/replication/replica_selector.py implements.
RACK_AWARE_SELECTOR_CLASSES = ("org.apache.kafka.common.replica.RackAwareReplicaSelector",
                               "kcore.replication.replica_selector.RackAwareReplicaSelector")
LEADER_SELECTOR_CLASSES = ("org.apache.kafka.common.replica.LeaderSelector",
                           "kcore.replication.replica_selector.LeaderSelector")


@dataclass(frozen=True)
class ConfigKey:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str


_key = ConfigKey


_DAY_MS = 24 * 3600 * 1000

# Broker keys. Values are parsed from text; None means "unset" (Kafka's null).
BROKER_KEYS: dict[str, ConfigKey] = {k.name: k for k in [
    _key("broker.id", int, 0, "Id of this broker in the cluster."),
    _key("node.id", int, None, "Synonym of broker.id."),
    _key("listeners", _list, ["PLAINTEXT://127.0.0.1:9092"],
         "Addresses to listen on: NAME://host:port, comma separated."),
    _key("advertised.listeners", _list, None, "Addresses given to clients in Metadata; defaults to listeners."),
    _key("listener.security.protocol.map", _protocol_map, DEFAULT_PROTOCOL_MAP,
         "Security protocol of each listener name: NAME:PROTOCOL, comma separated."),
    _key("inter.broker.listener.name", _upper, None,
         "Listener brokers use to reach each other; defaults to the first listener."),
    _key("sasl.enabled.mechanisms", _list, ["GSSAPI"],
         "SASL mechanisms a SASL listener offers; kcore serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "
         "and OAUTHBEARER (Kafka's default GSSAPI needs Kerberos, so a SASL listener must set this)."),
    _key(CALLBACK_HANDLER_KEY, str, None,
         "How OAUTHBEARER tokens are validated, by Kafka's class name: unset or "
         "...internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler for unsecured tokens "
         "(development only), org.apache.kafka.common.security.oauthbearer."
         "OAuthBearerValidatorCallbackHandler for signed JWTs checked against "
         "sasl.oauthbearer.jwks.endpoint.url. Usually set per listener: "
         "listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class."),
    _key("sasl.oauthbearer.jwks.endpoint.url", _jwks_url, None,
         "Where the JSON Web Key Set that verifies OAUTHBEARER tokens is: a file: URL (read at "
         "start) or an http(s): URL (fetched at start and every ...jwks.endpoint.refresh.ms)."),
    _key("sasl.oauthbearer.jwks.endpoint.refresh.ms", _at_least(1), 3_600_000,
         "How often the JWKS of an http(s) URL is fetched again; a token naming an unknown key "
         "also starts a fetch (at most once a minute per key id)."),
    _key("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _at_least(0), 100,
         "First wait before a failed JWKS fetch is retried; doubled per attempt."),
    _key("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _at_least(0), 10_000,
         "Time within which a failed JWKS fetch is retried; the last good set stays in use."),
    _key("sasl.oauthbearer.expected.issuer", str, None,
         "When set, a token's iss claim must be exactly this."),
    _key("sasl.oauthbearer.expected.audience", _list, None,
         "When set (comma separated), a token's aud claim must hold one of these; when unset, a "
         "token with an aud claim is refused (Kafka's jose4j default)."),
    _key("sasl.oauthbearer.scope.claim.name", _claim_name, "scope", "The claim holding a token's scope."),
    _key("sasl.oauthbearer.sub.claim.name", _claim_name, "sub",
         "The claim naming a token's principal (User:<value>)."),
    _key("sasl.oauthbearer.clock.skew.seconds", _at_least(0), 30,
         "Seconds of clock difference allowed when checking a token's exp and nbf."),
    _key("sasl.mechanism.inter.broker.protocol", str, "GSSAPI",
         "SASL mechanism this broker logs in with on a SASL inter-broker listener."),
    _key("connection.failed.authentication.delay.ms", _at_least(0), 100,
         "A failed authentication is answered, and its connection closed, this late; further "
         "attempts from the same address wait as long, doubled per failure up to 5 s."),
    _key(REAUTH_KEY, _at_least(0), 0,
         "When positive, a SASL client is told this session lifetime (SaslAuthenticate v1+) and "
         "must re-authenticate on its connection within it: the broker closes a connection whose "
         "session expired on its next request other than SaslHandshake. 0 keeps sessions forever. "
         "May be set per listener and mechanism: "
         "listener.name.<listener>.<mechanism>.connections.max.reauth.ms."),
    _key("ssl.keystore.type", _store_type, "PEM",
         "Format of the key store: PEM or PKCS12 (Kafka's default JKS is Java's own: convert it)."),
    _key("ssl.keystore.location", str, None, "Key store file: the private key and certificate chain."),
    _key("ssl.keystore.password", str, None, "Password of a PKCS12 key store (a PEM one has none)."),
    _key("ssl.keystore.certificate.chain", str, None, "The certificate chain itself, in PEM."),
    _key("ssl.keystore.key", str, None, "The private key itself, in PEM (PKCS#8, maybe encrypted)."),
    _key("ssl.key.password", str, None, "Password of an encrypted private key."),
    _key("ssl.truststore.type", _store_type, "PEM", "Format of the trust store: PEM or PKCS12."),
    _key("ssl.truststore.location", str, None, "Trust store file: the CA certificates trusted for clients."),
    _key("ssl.truststore.password", str, None, "Password of a PKCS12 trust store (a PEM one has none)."),
    _key("ssl.truststore.certificates", str, None, "The trusted CA certificates themselves, in PEM."),
    _key("ssl.client.auth", _choice("required", "requested", "none"), "none",
         "Client certificates on SSL listeners: required, requested (checked if sent) or none."),
    _key("ssl.enabled.protocols", _list, ["TLSv1.2", "TLSv1.3"], "TLS versions accepted."),
    _key("ssl.protocol", _choice("TLSv1.2", "TLSv1.3", "TLS"), "TLSv1.3", "Newest TLS version offered."),
    _key("ssl.cipher.suites", _list, [], "TLS 1.2 cipher suites (OpenSSL names); empty keeps OpenSSL's."),
    _key("http.listeners", _http_listeners, ["http://127.0.0.1:9644"],
         "Addresses serving /metrics (Prometheus text format) and the web console (/, /api/), comma "
         "separated; empty disables."),
    _key("http.allowed.hosts", _list, [],
         "Host names the web console answers besides IP addresses, localhost, this machine's name "
         "and the listeners' hosts (kcore's own setting; * allows any, which gives up the guard "
         "against DNS rebinding)."),
    _key("schema.registry.listeners", _http_listeners, ["http://127.0.0.1:8081"],
         "Addresses serving the schema registry (Confluent Schema Registry's REST API, at the root), comma "
         "separated; empty disables. Process i of a node adds i to the port. A port that is taken stops "
         "the broker when this key is set; with the default it is logged and skipped."),
    _key("schema.registry.topic.replication.factor", _at_least(1), 3,
         "Replicas of the _schemas topic, created on the registry's first write (fewer when fewer "
         "brokers are live)."),
    _key("kcore.table.catalog.uri", str, None,
         "The Iceberg catalog that topics written as tables (kcore.table.mode) go to: an http(s) URL is a "
         "REST catalog, any other a SQL catalog at that SQLAlchemy URL (sqlite:///path, postgresql://...); "
         "unset: SQLite at <first log dir>/__tables/catalog.db with its warehouse beside it (docs/tables.md)."),
    _key("kcore.table.catalog.warehouse", str, None,
         "The warehouse location given to the catalog; unset: <first log dir>/__tables/warehouse for the "
         "SQLite catalog, the REST catalog's own otherwise."),
    _key("log.dirs", _list, ["./data"], "Directories holding partition logs, one per disk (docs/log-dirs.md)."),
    _key("log.dir", _list, None, "Synonym of log.dirs when log.dirs is unset."),
    _key("num.processes", _processes, 1,
         "Broker processes of this node (kcore's own setting): each serves its share of the "
         "partitions on its own core, port (the listener's + index) and broker.id (+ index); "
         "auto = one per available core."),
    _key("zookeeper.connect", str, None,
         "ZooKeeper ensemble host:port,host:port[/chroot] of a cluster; unset means a single node "
         "with a local controller."),
    _key("zookeeper.session.timeout.ms", _at_least(1), 18000,
         "ZooKeeper session timeout: a broker silent this long leaves the cluster and its "
         "leaderships move."),
    _key("zookeeper.connection.timeout.ms", int, None,
         "How long to wait for a ZooKeeper connection; defaults to the session timeout."),
    _key("controlled.shutdown.enable", _bool, True,
         "On SIGTERM, move this broker's leaderships to other in-sync replicas before stopping."),
    _key("controlled.shutdown.max.retries", _at_least(1), 3,
         "Controlled shutdown attempts before the broker stops anyway."),
    _key("controlled.shutdown.retry.backoff.ms", _at_least(0), 5000,
         "Pause between controlled shutdown attempts."),
    _key("auto.leader.rebalance.enable", _bool, True,
         "Move leaderships back to preferred replicas when a broker leads too few of its own."),
    _key("leader.imbalance.check.interval.seconds", _at_least(1), 300,
         "How often the controller checks the preferred leader balance."),
    _key("leader.imbalance.per.broker.percentage", _at_least(0), 10,
         "Share of a broker's preferred leaderships held elsewhere that triggers a rebalance."),
    _key("replica.fetch.wait.max.ms", _at_least(0), 500, "Long-poll wait of a follower's fetch."),
    _key("replica.fetch.min.bytes", _at_least(1), 1, "Bytes a follower's fetch waits for."),
    _key("replica.fetch.max.bytes", _at_least(1), 1048576,
         "Bytes a follower fetches per partition (at least one batch)."),
    _key("replica.fetch.response.max.bytes", _at_least(1), 10485760,
         "Bytes a follower fetches per request (at least one batch)."),
    _key("replica.fetch.backoff.ms", _at_least(0), 1000,
         "Pause of a follower's fetching after an error."),
    _key("replica.socket.timeout.ms", _at_least(1), 30000,
         "How long a follower's fetch waits for its answer beyond replica.fetch.wait.max.ms."),
    _key("replica.selector.class", _choice(*RACK_AWARE_SELECTOR_CLASSES, *LEADER_SELECTOR_CLASSES),
         None, "Which replica a consumer that sends its rack reads from (KIP-392): unset, the "
         "leader; a RackAwareReplicaSelector, an in-sync replica in the consumer's rack."),
    _key("num.partitions", _at_least(1), 1, "Partitions of an auto-created topic."),
    _key("default.replication.factor", _at_least(1), 1, "Replication factor of an auto-created topic."),
    _key("auto.create.topics.enable", _bool, True, "Create a topic when a client asks for its metadata."),
    _key("delete.topic.enable", _bool, True, "Allow DeleteTopics."),
    _key("max.request.partition.size.limit", _at_least(1), 2000,
         "Most partitions one DescribeTopicPartitions answer holds, whatever its request asks (KIP-966)."),
    _key("authorizer.class.name", str, "",
         "Any non-empty value turns on kcore's ACL authorizer (Kafka's names, e.g. "
         "kafka.security.authorizer.AclAuthorizer, are accepted); empty allows everything."),
    _key("super.users", _principals, [],
         "Principals allowed everything whatever the ACLs, ';' separated (User:admin;User:broker). "
         "In a cluster it must name the brokers' own principal."),
    _key("allow.everyone.if.no.acl.found", _bool, False,
         "With the authorizer on, allow access to a resource that no ACL covers."),
    _key("log.segment.bytes", _at_least(14), 1073741824, "Roll a segment at this size."),
    _key("log.roll.ms", int, None, "Roll a segment after this age; overrides log.roll.hours."),
    _key("log.roll.hours", _at_least(1), 168, "Roll a segment after this many hours."),
    _key("log.roll.jitter.ms", _like("segment.jitter.ms"), None,
         "Largest random jitter subtracted from a segment's roll time; overrides log.roll.jitter.hours."),
    _key("log.roll.jitter.hours", _at_least(0), 0, "log.roll.jitter.ms in hours."),
    _key("log.retention.ms", int, None, "Delete segments older than this; -1 keeps forever. Overrides minutes/hours."),
    _key("log.retention.minutes", int, None, "Retention in minutes; overrides hours."),
    _key("log.retention.hours", int, 168, "Retention in hours."),
    _key("log.retention.bytes", int, -1, "Delete oldest segments while a partition is larger; -1 is no limit."),
    _key("log.retention.check.interval.ms", _at_least(1), 300000, "How often retention runs."),
    _key("log.local.retention.ms", _like("local.retention.ms"), -2,
         "Tiered storage's local retention: only -2 (kcore has no tiered storage)."),
    _key("log.local.retention.bytes", _like("local.retention.bytes"), -2,
         "Tiered storage's local retention: only -2 (kcore has no tiered storage)."),
    _key("log.index.size.max.bytes", _at_least(4), 10485760,
         "Maximum offset index size; a full index rolls the segment."),
    _key("log.index.interval.bytes", _at_least(0), 4096, "Bytes between sparse index entries."),
    _key("num.recovery.threads.per.data.dir", _at_least(1), 1,
         "Threads per log dir that open the partition logs at start and recover them after a crash."),
    _key("log.flush.interval.messages", _at_least(1), INT64_MAX,
         "Messages between forced flushes (1 = sync every message before ack)."),
    _key("log.flush.interval.ms", int, None, "Maximum time data waits in the page cache before a flush."),
    _key("log.flush.scheduler.interval.ms", int, INT64_MAX, "How often the flusher checks log.flush.interval.ms."),
    _key("log.flush.offset.checkpoint.interval.ms", _at_least(1), 60000,
         "How often rolled segments are fsynced and the recovery point is checkpointed."),
    _key("log.writeback.interval.bytes", _at_least(-1), -1,
         "kcore's own setting: start writing each segment's appends to disk every this many "
         "bytes (sync_file_range on a worker thread) rather than when the kernel's dirty "
         "thresholds say, so that a memory-limited broker reclaims clean pages; 0 leaves it to "
         "the kernel, as Kafka does; -1: 1 MiB in a memory cgroup limited below the machine's "
         "memory, else 0. Not a flush: nothing waits for the disk."),
    _key("log.flush.journal.bytes", _journal_bytes, 67108864,
         "Size of the group-commit journal that makes flush.messages=1 appends of all partitions "
         "durable with one fdatasync per round, written in the first log dir on first use; "
         "0 fsyncs each partition's files instead."),
    _key("log.cleanup.policy", _cleanup_policy, "delete", "delete, compact or both."),
    _key("log.cleaner.enable", _bool, True, "Run the log cleaner for compacted topics."),
    _key("log.cleaner.backoff.ms", _at_least(1), 15000, "Pause of the log cleaner when no log needs cleaning."),
    _key("log.cleaner.delete.retention.ms", int, _DAY_MS, "How long tombstones stay after compaction."),
    _key("log.cleaner.min.cleanable.ratio", _ratio, 0.5, "Dirty ratio above which a log is compacted."),
    _key("log.cleaner.min.compaction.lag.ms", int, 0, "Minimum age of a record before it may be compacted."),
    _key("log.cleaner.max.compaction.lag.ms", _like("max.compaction.lag.ms"), INT64_MAX,
         "Longest time a record of a compacted topic stays uncompacted."),
    _key("log.segment.delete.delay.ms", int, 60000, "Delay between renaming a segment .deleted and removing it."),
    _key("log.message.timestamp.type", _choice("CreateTime", "LogAppendTime"), "CreateTime",
         "Timestamp stored in batches."),
    _key("log.message.timestamp.before.max.ms", _like("message.timestamp.before.max.ms"), INT64_MAX,
         "With CreateTime, how far in the past a record's timestamp may be."),
    _key("log.message.timestamp.after.max.ms", _like("message.timestamp.after.max.ms"), INT64_MAX,
         "With CreateTime, how far in the future a record's timestamp may be."),
    _key("log.message.timestamp.difference.max.ms", _like("message.timestamp.difference.max.ms"),
         INT64_MAX, "Deprecated bound standing in for the before/after bounds left at their default."),
    _key("log.message.format.version", _like("message.format.version"), "3.0-IV1",
         "Deprecated; accepted and ignored: batches are always stored as v2."),
    _key("log.message.downconversion.enable", _bool, True,
         "Accepted; no Fetch version kcore serves needs down-conversion."),
    _key("log.preallocate", _bool, False, "Preallocate segment files."),
    _key("message.max.bytes", _at_least(0), 1048588, "Largest record batch accepted (after compression)."),
    _key("min.insync.replicas", _at_least(1), 1, "Replicas that must hold a write for acks=all."),
    _key("compression.type", _choice(*CODECS), "producer", "Codec kept on disk; producer keeps the producer's."),
    _key("compression.gzip.level", _like("compression.gzip.level"), -1,
         "gzip level of batches the broker recompresses (-1: zlib's default, 6)."),
    _key("compression.lz4.level", _like("compression.lz4.level"), 9,
         "lz4 level of batches the broker recompresses (9: LZ4's fast mode)."),
    _key("compression.zstd.level", _like("compression.zstd.level"), 3,
         "zstd level of batches the broker recompresses."),
    _key("socket.request.max.bytes", _at_least(1), 104857600,
         "Largest request frame; a larger size prefix closes the connection."),
    # Kafka's default is 102400, which turns Linux's buffer autotuning off:
    # measured on loopback (bench/bench_socket_buffers.py, 6 rounds),
    # consumers fetched a median 164 MB/s with it against 679 MB/s with -1
    # (sendfile stalls on a 200 KiB send buffer); kcore keeps the OS's.
    _key("socket.send.buffer.bytes", _buffer_bytes, -1,
         "SO_SNDBUF of client connections; -1 (kcore's default) keeps the OS's autotuning."),
    _key("socket.receive.buffer.bytes", _buffer_bytes, -1,
         "SO_RCVBUF of client connections; -1 (kcore's default) keeps the OS's autotuning."),
    _key("connections.max.idle.ms", int, 600000,
         "Close client connections without traffic for this long; negative keeps them."),
    _key("queued.max.requests", _at_least(1), 500, "Requests read ahead on one connection before reading pauses."),
    _key("fetch.max.bytes", _at_least(1024), 57671680, "Upper bound on a fetch response's data."),
    _key("max.incremental.fetch.session.cache.slots", _at_least(0), 1000,
         "Incremental fetch sessions (KIP-227) kept; 0 answers every fetch without a session."),
    _key("broker.rack", str, None, "Rack of this broker: replicas of a partition go to distinct racks first."),
    _key("leader.replication.throttled.rate", _at_least(0), INT64_MAX,
         "Bytes/s a leader sends to followers, summed over the replicas named in the topics' "
         "leader.replication.throttled.replicas (followers in the ISR are never held back); "
         "dynamic (kcore configs --entity-type brokers)."),
    _key("follower.replication.throttled.rate", _at_least(0), INT64_MAX,
         "Bytes/s a follower fetches, summed over the replicas named in the topics' "
         "follower.replication.throttled.replicas (replicas in the ISR are never held back); "
         "dynamic (kcore configs --entity-type brokers)."),
    _key("replication.quota.window.num", _at_least(1), 11,
         "Samples over which replication throttle rates are measured."),
    _key("replication.quota.window.size.seconds", _at_least(1), 1,
         "Length of one replication throttle sample."),
    _key("replica.lag.time.max.ms", _at_least(1), 30000,
         "A follower that has not caught up with the leader for this long leaves the ISR."),
    _key("replica.high.watermark.checkpoint.interval.ms", _at_least(1), 5000,
         "How often each log dir's replication-offset-checkpoint (high watermarks) is written."),
    _key("unclean.leader.election.enable", _bool, False, "Allow a leader from outside the ISR."),
    _key("producer.id.expiration.ms", int, _DAY_MS, "Forget an idle producer's state after this long."),
    _key("transactional.id.expiration.ms", int, 7 * _DAY_MS, "Forget an idle transactional id after this long."),
    _key("transaction.max.timeout.ms", int, 900000, "Largest transaction timeout a producer may ask for."),
    _key("offsets.topic.num.partitions", _at_least(1), 50, "Partitions of __consumer_offsets."),
    _key("offsets.topic.replication.factor", _at_least(1), 3,
         "Replication factor of __consumer_offsets; its creation waits for this many live "
         "brokers (a single node without ZooKeeper uses 1)."),
    _key("offsets.retention.minutes", _at_least(1), 10080, "Keep committed offsets of an empty group this long."),
    _key("transaction.state.log.num.partitions", _at_least(1), 50, "Partitions of __transaction_state."),
    _key("transaction.state.log.replication.factor", _at_least(1), 3,
         "Replication factor of __transaction_state (a single node without ZooKeeper uses 1)."),
    _key("transaction.state.log.min.isr", _at_least(1), 2,
         "min.insync.replicas of __transaction_state: transaction state is acknowledged only "
         "once this many replicas have it."),
    _key("transaction.state.log.segment.bytes", _at_least(1024), 104857600,
         "Segment size of __transaction_state (small, so the cleaner compacts it often)."),
    _key("transaction.abort.timed.out.transaction.cleanup.interval.ms", _at_least(1), 10000,
         "How often the coordinator aborts transactions past their transaction.timeout.ms."),
    _key("transaction.partition.verification.enable", _bool, True,
         "Before appending a transactional batch, a partition leader checks with the transaction "
         "coordinator that the partition is in the producer's ongoing transaction (KIP-890)."),
    _key("transaction.remove.expired.transaction.cleanup.interval.ms", _at_least(1), 3600000,
         "How often the coordinator forgets transactional ids idle past "
         "transactional.id.expiration.ms."),
    _key("group.initial.rebalance.delay.ms", _at_least(0), 3000,
         "Wait for more members before the first rebalance of an empty group."),
    _key("group.min.session.timeout.ms", int, 6000, "Smallest session timeout a member may ask for."),
    _key("group.max.session.timeout.ms", int, 1800000, "Largest session timeout a member may ask for."),
    _key("group.max.size", _at_least(1), INT32_MAX, "Most members in one group."),
    _key("group.coordinator.rebalance.protocols", _rebalance_protocols, ["classic", "consumer"],
         "Group protocols served: classic (JoinGroup/SyncGroup) always; consumer "
         "(ConsumerGroupHeartbeat, KIP-848) when listed."),
    _key("group.consumer.heartbeat.interval.ms", _at_least(1), 5000,
         "How often members of consumer-protocol groups heartbeat (told in every answer)."),
    _key("group.consumer.session.timeout.ms", _at_least(1), 45000,
         "A consumer-protocol member that does not heartbeat for this long is removed."),
    _key("group.consumer.max.size", _at_least(1), INT32_MAX, "Most members in one consumer-protocol group."),
    _key("group.consumer.assignors", _assignors, ["uniform", "range"],
         "Server-side assignors of consumer-protocol groups (uniform, range, or Kafka's class "
         "names); the first is the default, members may pick another with group.remote.assignor."),
    _key("group.consumer.migration.policy", _choice("bidirectional", "upgrade", "downgrade", "disabled"),
         "bidirectional",
         "Whether a classic group becomes a consumer-protocol group when a consumer-protocol "
         "member joins (upgrade), and back when the last one leaves (downgrade)."),
    # Share groups (KIP-932), Kafka 4.2's names and defaults.
    _key("group.share.session.timeout.ms", _at_least(1), 45000,
         "A share group member that sends no heartbeat for this long leaves its group."),
    _key("group.share.heartbeat.interval.ms", _at_least(1), 5000,
         "How often share group members are told to heartbeat."),
    _key("group.share.max.size", _at_least(1), 200, "Most members in one share group."),
    _key("group.share.record.lock.duration.ms", _at_least(1000), 30000,
         "How long a share group member holds the records it acquired before they are "
         "delivered again (a group's share.record.lock.duration.ms overrides it)."),
    _key("group.share.delivery.count.limit", _at_least(2), 5,
         "Deliveries of one record before it is archived instead of delivered again."),
    _key("group.share.partition.max.record.locks", _at_least(100), 2000,
         "Most records in flight (acquired or waiting to be acquired again) per share-partition."),
    _key("group.share.max.share.sessions", _at_least(1), 2000,
         "Most share sessions (one per member and broker) this broker keeps."),
    _key("share.coordinator.state.topic.num.partitions", _at_least(1), 50,
         "Partitions of __share_group_state."),
    _key("share.coordinator.state.topic.replication.factor", _at_least(1), 3,
         "Replication factor of __share_group_state (a single node without ZooKeeper uses 1)."),
    _key("share.coordinator.state.topic.min.isr", _at_least(1), 2,
         "min.insync.replicas of __share_group_state."),
]}

# Kafka's PASSWORD-typed keys: DescribeConfigs never returns their values.
SENSITIVE_KEYS = frozenset({"ssl.keystore.password", "ssl.keystore.key", "ssl.key.password",
                            "ssl.truststore.password"})


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value` or `key: value`, `#`/`!` comments,
    backslash line continuation; surrounding whitespace is dropped."""
    result: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            result[line] = ""
        else:
            result[match.group(1)] = match.group(2).strip()
    if pending:
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", pending)
        if match:
            result[match.group(1)] = match.group(2).strip()
    return result


class BrokerConfig:
    """Parsed broker configuration. Immutable after construction.

    Attribute access uses Kafka's key (`config["log.segment.bytes"]`);
    `originals` holds only the keys the user set (DescribeConfigs reports
    the rest as defaults).
    """

    def __init__(self, settings: dict[str, str] | None = None):
        settings = dict(settings or {})
        # Every key as given, listener-prefixed ones too (a node's supervisor
        # hands them on to its broker processes).
        given = dict(settings)
        self._listener_settings: dict[tuple[str, str], str] = {}
        for name in [name for name in settings if split_prefixed(name) is not None]:
            prefixed = split_prefixed(name)
            assert prefixed is not None
            self._listener_settings[prefixed] = settings.pop(name)
        unknown = sorted(set(settings) - set(BROKER_KEYS))
        if unknown:
            raise ConfigError(
                "unknown configuration key(s): " + ", ".join(unknown)
                + " (kcore uses Kafka's broker config names)")
        self.originals = given
        self._values: dict[str, Any] = {}
        for name, key in BROKER_KEYS.items():
            if name in settings:
                self._values[name] = _parse_value(name, key.parse, settings[name])
            else:
                self._values[name] = key.default
        if self._values["node.id"] is not None and "broker.id" not in settings:
            self._values["broker.id"] = self._values["node.id"]
        if "log.dirs" not in settings and self._values["log.dir"]:
            self._values["log.dirs"] = self._values["log.dir"]
        self._validate_listeners()

    @classmethod
    def load(cls, path: str | Path | None, overrides: Iterable[str] = ()) -> BrokerConfig:
        settings: dict[str, str] = {}
        if path is not None:
            try:
                settings.update(parse_properties(Path(path).read_text()))
            except OSError as exc:
                raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"override {item!r} is not key=value")
            name, value = item.split("=", 1)
            settings[name.strip()] = value.strip()
        return cls(settings)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def is_default(self, name: str) -> bool:
        return name not in self.originals

    @property
    def broker_id(self) -> int:
        return self._values["broker.id"]

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(d) for d in self._values["log.dirs"]]

    def listener_addresses(self) -> list[tuple[str, str, int]]:
        """(name, host, port) per listener; host '' binds every interface."""
        return [split_listener(item) for item in self._values["listeners"]]

    def listeners(self) -> list[Listener]:
        protocols = parse_protocol_map(self._values["listener.security.protocol.map"])
        return [Listener(name, protocols[name], host, port)
                for name, host, port in self.listener_addresses()]

    def listener_value(self, listener: str, name: str) -> Any:
        """``name`` as the listener sees it: its ``listener.name.<listener>.``
        form when set, else the broker-wide value."""
        text = self._listener_settings.get((listener.lower(), name))
        if text is None:
            return self._values[name]
        return _parse_value(f"listener.name.{listener.lower()}.{name}", BROKER_KEYS[name].parse, text)

    def jaas_config(self, listener: str, mechanism: str) -> str | None:
        """``listener.name.<listener>.<mechanism>.sasl.jaas.config``, or None."""
        return self._listener_settings.get((listener.lower(), jaas_key(mechanism)))

    def max_reauth_ms(self, listener: str, mechanism: str) -> int:
        """``connections.max.reauth.ms`` of one mechanism on one listener."""
        return self.mechanism_value(listener, mechanism, REAUTH_KEY)

    def mechanism_value(self, listener: str, mechanism: str, name: str) -> Any:
        """``name`` for one SASL mechanism on one listener: the mechanism's
        prefixed form (``listener.name.<l>.<mechanism>.<name>``), else the
        listener's, else the broker-wide value (Kafka's SaslChannelBuilder
        order)."""
        text = self._listener_settings.get((listener.lower(), mechanism_key(mechanism, name)))
        if text is None:
            return self.listener_value(listener, name)
        return _parse_value(f"listener.name.{listener.lower()}.{mechanism_key(mechanism, name)}",
                            BROKER_KEYS[name].parse, text)

    def inter_broker_listener(self) -> Listener:
        wanted = self._values["inter.broker.listener.name"]
        listeners = self.listeners()
        return next((item for item in listeners if item.name == wanted), listeners[0])

    def advertised_endpoints(self) -> list[tuple[str, str, int]]:
        """(listener name, host, port) clients are given, per listener.

        ``advertised.listeners`` is published as written (a ``localhost``
        stays ``localhost``: clients compare it with their bootstrap host).
        Without it the listeners are advertised, and a wildcard host among
        them becomes this machine's canonical host name, as Kafka does.
        """
        configured = self._values["advertised.listeners"]
        if configured:
            return [split_listener(item) for item in configured]
        return [(name, canonical_host_name() if host in WILDCARD_HOSTS else host, port)
                for name, host, port in self.listener_addresses()]

    def advertised_address(self) -> tuple[str, int]:
        """Where other brokers reach this one: the inter-broker listener's
        advertised address (the first listener's by default)."""
        endpoints = self.advertised_endpoints()
        wanted = self.inter_broker_listener().name
        _, host, port = next((e for e in endpoints if e[0] == wanted), endpoints[0])
        return host, port

    def retention_ms(self) -> int:
        v = self._values
        if v["log.retention.ms"] is not None:
            return v["log.retention.ms"]
        if v["log.retention.minutes"] is not None:
            return v["log.retention.minutes"] * 60_000
        return v["log.retention.hours"] * 3_600_000

    def roll_ms(self) -> int:
        if self._values["log.roll.ms"] is not None:
            return self._values["log.roll.ms"]
        return self._values["log.roll.hours"] * 3_600_000

    def topic_defaults(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every topic key with the value a topic without overrides gets;
        ``overrides`` (parsed broker values) stand in for the configured ones."""
        return topic_defaults({**self._values, **overrides} if overrides else self._values)

    def _validate_listeners(self) -> None:
        protocols = parse_protocol_map(self._values["listener.security.protocol.map"])
        for item in self._values["advertised.listeners"] or []:
            if split_listener(item)[1] in WILDCARD_HOSTS:
                raise ConfigError(f"advertised.listeners: {item} cannot use a wildcard or empty host "
                                  "(clients cannot connect to it): use a routable host name or address")
        for key in ("listeners", "advertised.listeners"):
            for item in self._values[key] or []:
                name = split_listener(item)[0]
                if name not in protocols:
                    raise ConfigError(
                        f"{key}: listener name {name} has no security protocol: add "
                        f"{name}:<PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL> to "
                        "listener.security.protocol.map")
        wanted = self._values["inter.broker.listener.name"]
        if wanted is not None and wanted not in {item[0] for item in self.listener_addresses()}:
            raise ConfigError(f"inter.broker.listener.name {wanted} is not one of listeners")
        for listener in self.listeners():
            if listener.uses_sasl:
                self._validate_sasl(listener)
            if listener.uses_ssl:
                self._validate_ssl(listener)

    def _validate_sasl(self, listener: Listener) -> None:
        enabled = self.listener_value(listener.name, "sasl.enabled.mechanisms")
        unsupported = [m for m in enabled if m not in SASL_MECHANISMS]
        if unsupported or not enabled:
            raise ConfigError(
                f"listener {listener.name} ({listener.security_protocol}): sasl.enabled.mechanisms "
                f"{','.join(enabled) or '(empty)'}: kcore serves only " + ", ".join(SASL_MECHANISMS))
        if "PLAIN" in enabled and self.jaas_config(listener.name, "PLAIN") is None:
            raise ConfigError(
                f"listener {listener.name} enables PLAIN but sets no "
                f"listener.name.{listener.name.lower()}.plain.sasl.jaas.config")
        for mechanism in enabled:  # parsed now: a bad value fails the start, not a login
            self.max_reauth_ms(listener.name, mechanism)
            handler_key = mechanism_key(mechanism, CALLBACK_HANDLER_KEY)
            if mechanism != "OAUTHBEARER" and (listener.name.lower(), handler_key) in self._listener_settings:
                raise ConfigError(f"listener.name.{listener.name.lower()}.{handler_key}: kcore has no "
                                  f"pluggable callback handler for {mechanism}")
        if "OAUTHBEARER" in enabled:
            self._validate_oauthbearer(listener)

    def _validate_oauthbearer(self, listener: Listener) -> None:
        """What a listener serving OAUTHBEARER needs; the JWKS file or URL
        itself is read when the broker builds the listener (server/security.py)."""
        prefix = f"listener.name.{listener.name.lower()}.oauthbearer."
        if self.jaas_config(listener.name, "OAUTHBEARER") is None:
            raise ConfigError(
                f"listener {listener.name} enables OAUTHBEARER but sets no {prefix}sasl.jaas.config "
                "(org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ...;)")

        def value(name: str) -> Any:
            return self.mechanism_value(listener.name, "OAUTHBEARER", name)
        for name in OAUTHBEARER_KEYS:  # parsed now: a bad value fails the start, not a login
            value(name)
        handler = value(CALLBACK_HANDLER_KEY)
        if handler not in (None, UNSECURED_VALIDATOR_CLASS, *JWT_VALIDATOR_CLASSES):
            raise ConfigError(f"{prefix}{CALLBACK_HANDLER_KEY} {handler}: kcore validates OAUTHBEARER "
                              f"tokens with {UNSECURED_VALIDATOR_CLASS} (the default) or "
                              f"{JWT_VALIDATOR_CLASSES[0]}")
        if handler in JWT_VALIDATOR_CLASSES and value("sasl.oauthbearer.jwks.endpoint.url") is None:
            raise ConfigError(f"listener {listener.name}: {handler} needs "
                              "sasl.oauthbearer.jwks.endpoint.url (a file: or http(s): URL)")
        backoff = value("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
        if value("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms") < backoff:
            raise ConfigError(f"listener {listener.name}: sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms "
                              f"is less than sasl.oauthbearer.jwks.endpoint.retry.backoff.ms ({backoff})")

    def _validate_ssl(self, listener: Listener) -> None:
        def value(name: str) -> Any:
            return self.listener_value(listener.name, name)
        inline = value("ssl.keystore.certificate.chain"), value("ssl.keystore.key")
        if value("ssl.keystore.type") == "PKCS12" and value("ssl.keystore.location") is None:
            raise ConfigError(f"listener {listener.name}: ssl.keystore.type=PKCS12 needs "
                              "ssl.keystore.location (inline key stores are PEM)")
        if value("ssl.keystore.location") is None and None in inline:
            raise ConfigError(
                f"listener {listener.name} ({listener.security_protocol}) needs a key store: "
                "ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key")
        if value("ssl.client.auth") != "none" and value("ssl.truststore.location") is None \
                and value("ssl.truststore.certificates") is None:
            raise ConfigError(
                f"listener {listener.name}: ssl.client.auth={value('ssl.client.auth')} needs "
                "ssl.truststore.location or ssl.truststore.certificates")


# Hosts a listener binds to every interface with; clients cannot connect to them.
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


@functools.cache
def canonical_host_name() -> str:
    """This machine's fully qualified name, what Kafka advertises for a
    listener on every interface (InetAddress.getLocalHost's canonical name)."""
    return socket.getfqdn()


def split_listener(item: str) -> tuple[str, str, int]:
    match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:]*):(\d+)$", item)
    if match is None:
        raise ConfigError(f"listener {item!r} is not NAME://host:port")
    host = match.group(2).strip("[]")
    port = int(match.group(3))
    if port > 65535:
        raise ConfigError(f"listener {item!r} has port {port} > 65535")
    return match.group(1).upper(), host, port


def split_http_listener(item: str) -> tuple[str, int]:
    """http://host:port -> (host, port); port 0 picks a free one."""
    match = re.match(r"^http://(\[[^\]]*\]|[^:/]*):(\d+)/?$", item.strip())
    if match is None or int(match.group(2)) > 65535:
        raise ValueError(f"{item!r} is not http://host:port")
    return match.group(1).strip("[]"), int(match.group(2))


def _parse_value(name: str, parse: Callable[[str], Any], text: str) -> Any:
    try:
        return parse(text)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid value {text!r} for configuration {name}: {exc}") from None
