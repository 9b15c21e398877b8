"""What the ACL authorizer costs a produce.

1. In process: ``Authorizer.authorize`` for a topic among 1000 ACLs (900
   literal on other topics, 100 prefixed), answered from the decision
   cache (every request after the first) and decided afresh (the first
   request of a principal, host, operation and topic, or after any ACL
   change).
2. End to end: two broker processes, the authorizer off on one and on
   (1000 ACLs, WRITE granted on the topic) on the other; the same raw
   Produce v8 requests (acks=1, one batch of one 100-byte record) sent
   one at a time, rounds alternating between the brokers; the median
   request latency of each and their difference. A second broker with the
   authorizer off gives the noise floor of that difference (A/A).

    .venv/bin/python -m bench.bench_authorizer [--requests 20000] [--rounds 5]

Under pytest-benchmark (`pytest bench/bench_authorizer.py --benchmark-enable`)
the in-process figures; the end-to-end run stores its figures in extra_info.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kcore.security.authorizer import Authorizer
from kcore.testing import BrokerProcess
from kcore.testing.wire import WireClient, batch, create_topic, produce_body

PRINCIPAL, HOST, TOPIC = "User:ANONYMOUS", "127.0.0.1", "bench"


def many_acls(count: int = 1000) -> list[AclBinding]:
    acls = [AclBinding(ResourceType.TOPIC, f"topic-{i}", PatternType.LITERAL, f"User:u{i % 50}",
                       "*", AclOperation.READ, AclPermissionType.ALLOW) for i in range(count - 100)]
    acls += [AclBinding(ResourceType.TOPIC, f"pre-{i}-", PatternType.PREFIXED, "User:u1", "*",
                        AclOperation.WRITE, AclPermissionType.ALLOW) for i in range(99)]
    acls.append(AclBinding(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, PRINCIPAL, "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW))
    return acls


def authorizer() -> Authorizer:
    result = Authorizer()
    result.replace(many_acls())
    return result


def test_authorize_cached(benchmark):
    auth = authorizer()
    assert auth.authorize(PRINCIPAL, HOST, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)
    benchmark(auth.authorize, PRINCIPAL, HOST, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)


def test_authorize_decided_afresh(benchmark):
    auth = authorizer()
    decide = auth._decide  # what a cache miss runs
    assert decide(PRINCIPAL, HOST, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)
    benchmark(decide, PRINCIPAL, HOST, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)


def _grant_all(broker: BrokerProcess) -> None:
    client = WireClient(broker.port)
    creations = [{"resource_type": a.resource_type, "resource_name": a.resource_name,
                  "resource_pattern_type": a.pattern_type, "principal": a.principal,
                  "host": a.host, "operation": a.operation, "permission_type": a.permission}
                 for a in many_acls()]
    response = client.request(ApiKey.CREATE_ACLS, 3, {"creations": creations})
    assert all(r.error_code == ErrorCode.NONE for r in response.results)
    client.close()


def _latencies(client: WireClient, requests: int, body: dict) -> list[float]:
    seen = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.request(ApiKey.PRODUCE, 8, body)
        seen.append(time.perf_counter() - started)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    return seen


def end_to_end(requests: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        common = {"num.partitions": "1", "http.listeners": ""}
        plain = BrokerProcess(Path(tmp) / "plain", common).start()
        twin = BrokerProcess(Path(tmp) / "twin", common).start()
        secured = BrokerProcess(Path(tmp) / "secured", {
            **common, "authorizer.class.name": "kcore", "super.users": PRINCIPAL}).start()
        try:
            for broker in (plain, twin, secured):
                create_topic(WireClient(broker.port), TOPIC)
            _grant_all(secured)
            secured.overrides.pop("super.users")  # the ACLs decide from here on
            secured.restart()
            body = produce_body(TOPIC, 0, bytes(batch([b"v" * 100])))
            clients = {"off": WireClient(plain.port), "off_twin": WireClient(twin.port),
                       "on": WireClient(secured.port)}
            for client in clients.values():
                _latencies(client, 500, body)  # warm-up
            medians: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(rounds):
                for name, client in clients.items():
                    medians[name].append(statistics.median(_latencies(client, requests, body)))
            off, on = statistics.median(medians["off"]), statistics.median(medians["on"])
            twin_off = statistics.median(medians["off_twin"])
            return {"requests_per_round": requests, "rounds": rounds,
                    "median_us_off": round(off * 1e6, 1), "median_us_on": round(on * 1e6, 1),
                    "cost_us": round((on - off) * 1e6, 1),
                    "cost_percent": round((on - off) / off * 100, 1),
                    "noise_us_a_a": round((twin_off - off) * 1e6, 1)}
        finally:
            for broker in (plain, twin, secured):
                broker.kill()


def test_produce_latency_authorizer_on_and_off(benchmark):
    figures = benchmark.pedantic(end_to_end, args=(5000, 3), rounds=1, iterations=1)
    benchmark.extra_info.update(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    auth = authorizer()
    for name, call in (("cached", auth.authorize), ("decided afresh", auth._decide)):
        count = 200_000
        started = time.perf_counter()
        for _ in range(count):
            call(PRINCIPAL, HOST, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)
        print(f"authorize, {name}: {(time.perf_counter() - started) / count * 1e9:.0f} ns")
    print(end_to_end(args.requests, args.rounds))


if __name__ == "__main__":
    main()
