"""The stores of a ZooKeeper cluster, in Kafka's znodes: ACLs, client
quotas, dynamic broker configs, SCRAM credentials and producer id blocks.

| path | content |
|---|---|
| /kafka-acl/<ResourceType>/<name> | literal ACLs: ``{"version":1,"acls":[{"principal",
  "permissionType","operation","host"}]}`` |
| /kafka-acl-extended/prefixed/<ResourceType>/<name> | prefixed ACLs, same JSON |
| /kafka-acl-changes/acl_changes_NNNNNNNNNN | sequential: ``<ResourceType>:LITERAL:<name>`` changed |
| /config/users/<user>[/clients/<client-id>] | ``{"version":1,"config":{"producer_byte_rate":"1048576",
  "SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}`` |
| /config/clients/<client-id> | same, quotas only |
| /config/brokers/<id> (or <default>) | ``{"version":1,"config":{"leader.replication.throttled.rate":"1"}}`` |
| /config/changes/config_change_NNNNNNNNNN | ``{"version":2,"entity_path":"users/alice/clients/app"}`` |
| /latest_producer_id_block | ``{"version":1,"broker":N,"block_start":"S","block_end":"E"}``, end inclusive |

``<default>`` names the default user, client id or broker; names are URL-encoded
as Kafka's ``Sanitizer`` does. Resource, operation and permission names are
Kafka's (``Topic``, ``Read``, ``Allow``). Every broker watches both change
paths and, on a new notification, reads the whole set again: ACL and
quota sets (and broker configs) are small and a full read cannot miss a change.
SCRAM credentials are read from the znode when a client authenticates, so
they need no watch. A producer id block is claimed with a write
conditional on the version read, so two brokers never claim the same block
(two producers with one id would each take the other's retries for their
own). Source: Kafka's ``kafka.zk.ZkData``, ``AclAuthorizer`` and
``ProducerIdManager`` (ZooKeeper mode).

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from urllib.parse import quote, unquote

from kcore.dynamic_config import BrokerConfigs
from kcore.metadata_store.base import (
    BLOCK_SIZE,
    Credentials,
    Deletion,
    OnBrokerConfigs,
    OnChange,
    QuotaConfigs,
    Upsertion,
    decode_user,
    encode_user,
)
from kcore.metadata_store.zk_client import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    Watch,
    ZkClient,
    needs_zookeeper,
)
from kcore.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kcore.security.quotas import CLIENT_ID, QUOTA_KEYS, USER, QuotaEntity
from kcore.security.scram import ScramCredential

log = logging.getLogger(__name__)

LITERAL_ACLS = "/kafka-acl"
PREFIXED_ACLS = "/kafka-acl-extended/prefixed"
ACL_CHANGES = "/kafka-acl-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DEFAULT = "<default>"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
# A conditional write that loses to another broker's is retried this often.
MAX_CAS_RETRIES = 20

RESOURCE_NAMES = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group",
                  ResourceType.CLUSTER: "Cluster", ResourceType.TRANSACTIONAL_ID: "TransactionalId",
                  ResourceType.DELEGATION_TOKEN: "DelegationToken", ResourceType.USER: "User",
                  # kcore's schema registry subjects (security/acl.py): a type of its own.
                  ResourceType.SUBJECT: "Subject"}
RESOURCE_TYPES = {name: kind for kind, name in RESOURCE_NAMES.items()}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


OPERATION_NAMES = {op: _camel(op.name) for op in AclOperation}
OPERATIONS = {name: op for op, name in OPERATION_NAMES.items()}
PERMISSION_NAMES = {p: _camel(p.name) for p in AclPermissionType}
PERMISSIONS = {name: p for p, name in PERMISSION_NAMES.items()}


def acl_path(kind: ResourceType, pattern: PatternType, name: str) -> str:
    base = PREFIXED_ACLS if pattern == PatternType.PREFIXED else LITERAL_ACLS
    return f"{base}/{RESOURCE_NAMES[kind]}/{quote(name, safe='')}"


def encode_acls(acls: Iterable[AclBinding]) -> bytes:
    return json.dumps({"version": 1, "acls": [
        {"principal": acl.principal, "permissionType": PERMISSION_NAMES[acl.permission],
         "operation": OPERATION_NAMES[acl.operation], "host": acl.host}
        for acl in sorted(acls)]}).encode()


def decode_acls(data: bytes, kind: ResourceType, pattern: PatternType, name: str
                ) -> set[AclBinding]:
    if not data:
        return set()
    return {AclBinding(kind, name, pattern, item["principal"], item["host"],
                       OPERATIONS[item["operation"]], PERMISSIONS[item["permissionType"]])
            for item in json.loads(data).get("acls", [])}


def quota_path(entity: QuotaEntity) -> str:
    parts = dict(entity.parts)
    def name(value: str | None) -> str:
        return DEFAULT if value is None else quote(value, safe="")
    if USER in parts:
        path = f"users/{name(parts[USER])}"
        if CLIENT_ID in parts:
            path += f"/clients/{name(parts[CLIENT_ID])}"
        return path
    return f"clients/{name(parts[CLIENT_ID])}"


class ZkSecurityStore:
    """ACLs, quotas and broker configs (see module doc)."""

    def __init__(self, zk: ZkClient):
        self.zk = zk
        self._on_change: OnChange | None = None
        self._watches: list[Watch] = []
        self._seen = {ACL_CHANGES: -1, CONFIG_CHANGES: -1}
        self._reloading: asyncio.Task | None = None
        self._stale = False
        self.on_broker_configs: OnBrokerConfigs | None = None

    async def start(self, on_change: OnChange) -> None:
        self._on_change = on_change
        for path in (LITERAL_ACLS, PREFIXED_ACLS, ACL_CHANGES, CONFIG_USERS, CONFIG_CLIENTS,
                     CONFIG_BROKERS, CONFIG_CHANGES):
            await self._ensure(path)
        await self._reload()
        for path in (ACL_CHANGES, CONFIG_CHANGES):
            self._watches.append(await self.zk.watch_children(path, self._notified(path)))

    async def shutdown(self) -> None:
        for watch in self._watches:
            watch.cancel()
        if self._reloading is not None:
            self._reloading.cancel()

    async def _ensure(self, path: str) -> None:
        try:
            await self.zk.create(path, b"", makepath=True)
        except NodeExistsError:
            pass

    def _notified(self, path: str) -> Callable[[list[str]], None]:
        return lambda children: self._on_notifications(path, children)

    def _on_notifications(self, path: str, children: list[str]) -> None:
        newest = max((_sequence(child) for child in children), default=-1)
        if newest <= self._seen[path]:
            return
        self._seen[path] = newest
        # A notification during a reload may name a change that reload read
        # too early: read again after it (never drop a notification).
        self._stale = True
        if self._reloading is None or self._reloading.done():
            self._reloading = asyncio.get_running_loop().create_task(self._reload_while_stale())

    async def _reload_while_stale(self) -> None:
        while self._stale:
            self._stale = False
            try:
                await self._reload()
            except Exception:  # ZooKeeper unreachable: the next notification retries
                log.exception("reloading ACLs and quotas from ZooKeeper failed")
                return

    async def _reload(self) -> None:
        acls = await self._read_acls()
        quotas = await self._read_quotas()
        broker_configs = await self._read_broker_configs()
        assert self._on_change is not None
        self._on_change(acls, quotas)
        if self.on_broker_configs is not None:
            self.on_broker_configs(broker_configs)

    async def _read_broker_configs(self) -> BrokerConfigs:
        configs: BrokerConfigs = {}
        for entity in await self._children(CONFIG_BROKERS):
            values = _config_map(await self._data(f"{CONFIG_BROKERS}/{entity}"))
            if values:
                configs[unquote(entity)] = values
        return configs

    async def _read_acls(self) -> set[AclBinding]:
        acls: set[AclBinding] = set()
        for base, pattern in ((LITERAL_ACLS, PatternType.LITERAL),
                              (PREFIXED_ACLS, PatternType.PREFIXED)):
            for type_name in await self._children(base):
                kind = RESOURCE_TYPES.get(type_name)
                if kind is None:
                    continue
                for child in await self._children(f"{base}/{type_name}"):
                    data = await self._data(f"{base}/{type_name}/{child}")
                    try:
                        acls |= decode_acls(data, kind, pattern, unquote(child))
                    except (KeyError, ValueError):
                        log.warning("ignoring malformed ACLs at %s/%s/%s", base, type_name, child)
        return acls

    async def _read_quotas(self) -> QuotaConfigs:
        configs: QuotaConfigs = {}
        for user in await self._children(CONFIG_USERS):
            user_name = None if user == DEFAULT else unquote(user)
            self._add_quota(configs, [(USER, user_name)],
                            await self._data(f"{CONFIG_USERS}/{user}"))
            for client in await self._children(f"{CONFIG_USERS}/{user}/clients"):
                client_name = None if client == DEFAULT else unquote(client)
                self._add_quota(configs, [(USER, user_name), (CLIENT_ID, client_name)],
                                await self._data(f"{CONFIG_USERS}/{user}/clients/{client}"))
        for client in await self._children(CONFIG_CLIENTS):
            self._add_quota(configs, [(CLIENT_ID, None if client == DEFAULT else unquote(client))],
                            await self._data(f"{CONFIG_CLIENTS}/{client}"))
        return configs

    @staticmethod
    def _add_quota(configs: QuotaConfigs, parts, data: bytes) -> None:
        """The quota keys of a /config/users or /config/clients znode; the
        same config map holds other things (SCRAM credentials), left alone."""
        values = {key: float(value) for key, value in _config_map(data).items()
                  if key in QUOTA_KEYS and _is_number(value)}
        if values:
            configs[QuotaEntity.of(parts)] = values

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.zk.get_children(path)
        except NoNodeError:
            return []

    async def _data(self, path: str) -> bytes:
        try:
            data, _ = await self.zk.get(path)
            return data
        except NoNodeError:
            return b""

    # -- changes ----------------------------------------------------------
    @needs_zookeeper
    async def change_acls(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        by_resource: dict[tuple, tuple[set[AclBinding], set[AclBinding]]] = {}
        for acl in added:
            by_resource.setdefault(_resource(acl), (set(), set()))[0].add(acl)
        for acl in removed:
            by_resource.setdefault(_resource(acl), (set(), set()))[1].add(acl)
        for (kind, pattern, name), (plus, minus) in by_resource.items():
            await self._update_resource(acl_path(kind, pattern, name), kind, pattern, name,
                                        plus, minus)
            await self.zk.create(f"{ACL_CHANGES}/{ACL_CHANGE_PREFIX}",
                                 f"{RESOURCE_NAMES[kind]}:{pattern.name}:{name}".encode(),
                                 sequential=True)
        await self._reload()

    async def _update_resource(self, path: str, kind: ResourceType, pattern: PatternType,
                               name: str, plus: set[AclBinding], minus: set[AclBinding]) -> None:
        """Read-modify-write of one resource's znode, conditional on its
        version so a concurrent change on another broker is not lost."""
        for _ in range(MAX_CAS_RETRIES):
            try:
                data, stat = await self.zk.get(path)
            except NoNodeError:
                current: set[AclBinding] = set()
                version = None
            else:
                current, version = decode_acls(data, kind, pattern, name), stat.version
            wanted = (current - minus) | plus
            try:
                if version is None:
                    if wanted:
                        await self.zk.create(path, encode_acls(wanted), makepath=True)
                elif wanted:
                    await self.zk.set(path, encode_acls(wanted), version)
                else:
                    await self.zk.delete(path, version)
                return
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
        raise RuntimeError(f"{path}: too many concurrent changes")

    @needs_zookeeper
    async def change_quotas(self, entity: QuotaEntity, values: dict[str, float | None]) -> None:
        await self._change_config(quota_path(entity), {
            key: None if value is None else repr(float(value)) for key, value in values.items()})

    @needs_zookeeper
    async def change_broker_configs(self, entity: str, changes: dict[str, str | None]) -> None:
        await self._change_config(f"brokers/{quote(entity, safe='<>')}", changes)

    async def _change_config(self, entity_path: str, values: dict[str, str | None]) -> None:
        """Read-modify-write of /config/<entity_path> (conditional on its
        version), then a change notification every broker acts on."""
        path = f"/config/{entity_path}"
        for _ in range(MAX_CAS_RETRIES):
            try:
                data, stat = await self.zk.get(path)
                version: int | None = stat.version
            except NoNodeError:
                data, version = b"", None
            config = _config_map(data)
            for key, value in values.items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
            encoded = json.dumps({"version": 1, "config": config}).encode()
            try:
                if version is None:
                    await self.zk.create(path, encoded, makepath=True)
                else:
                    await self.zk.set(path, encoded, version)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
        else:
            raise RuntimeError(f"{path}: too many concurrent changes")
        await self.zk.create(f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}",
                             json.dumps({"version": 2, "entity_path": entity_path}).encode(),
                             sequential=True)
        await self._reload()


def _config_map(data: bytes) -> dict[str, str]:
    if not data:
        return {}
    try:
        config = json.loads(data).get("config", {})
    except (ValueError, AttributeError):
        log.warning("ignoring a malformed config znode: %r", data[:100])
        return {}
    return {str(key): str(value) for key, value in config.items()} if isinstance(config, dict) else {}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _resource(acl: AclBinding) -> tuple[ResourceType, PatternType, str]:
    return acl.resource_type, acl.pattern_type, acl.resource_name


def _sequence(child: str) -> int:
    digits = child[-10:]
    return int(digits) if digits.isdigit() else -1


class ZkCredentialStore:
    """SCRAM credentials in ``/config/users`` (see module doc)."""

    def __init__(self, zk: ZkClient):
        self._zk = zk

    async def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return (await self._user(user)).get(mechanism)

    @needs_zookeeper
    async def all(self) -> Credentials:
        try:
            names = await self._zk.get_children(CONFIG_USERS)
        except NoNodeError:
            return {}
        result = {}
        for name in names:
            credentials = await self._user(unquote(name))
            if credentials:
                result[unquote(name)] = credentials
        return result

    @needs_zookeeper
    async def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        changed: Credentials = {}
        for user, mechanism in deletions:
            credentials = changed.setdefault(user, await self._user(user))
            credentials.pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            if user not in changed:
                changed[user] = await self._user(user)
            changed[user][mechanism] = credential
        for user, credentials in changed.items():
            path = f"{CONFIG_USERS}/{quote(user, safe='')}"
            data = encode_user(credentials).encode()
            try:
                await self._zk.set(path, data)
            except NoNodeError:
                await self._zk.create(path, data, makepath=True)

    async def _user(self, user: str) -> dict[str, ScramCredential]:
        try:
            data, _ = await self._zk.get(f"{CONFIG_USERS}/{quote(user, safe='')}")
        except NoNodeError:
            return {}
        return decode_user(data)


class ZkProducerIdManager:
    """A cluster broker's producer ids, from blocks claimed in ZooKeeper
    (see module doc)."""

    def __init__(self, zk: ZkClient, broker_id: int):
        self._zk = zk
        self._broker_id = broker_id
        self._next = 0
        self._block_end = 0  # exclusive
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next >= self._block_end:
                self._next, self._block_end = await self._claim_block()
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _claim_block(self) -> tuple[int, int]:
        while True:
            try:
                data, stat = await self._zk.get(PRODUCER_ID_BLOCK)
                start = int(json.loads(data)["block_end"]) + 1 if data else 0
                version = stat.version
            except NoNodeError:
                start, version = 0, None
            value = json.dumps({"version": 1, "broker": self._broker_id, "block_start": str(start),
                                "block_end": str(start + BLOCK_SIZE - 1)}).encode()
            try:
                if version is None:
                    await self._zk.create(PRODUCER_ID_BLOCK, value)
                else:
                    await self._zk.set(PRODUCER_ID_BLOCK, value, version=version)
                return start, start + BLOCK_SIZE
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed a block meanwhile: claim the next
