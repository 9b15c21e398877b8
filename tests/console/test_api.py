"""The console's JSON endpoints over HTTP, against the real broker and data
of conftest.py; changes are checked through a real Kafka client."""
from __future__ import annotations

import socket
import time
import urllib.request

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import NewTopic

from kcore.console.history import HISTORY_POINTS
from kcore.console.messages import ANSWER_MAX_CHARS, PREVIEW_BYTES
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.console import (
    BINARY_VALUE,
    COMMITTED,
    END,
    HTTP_TIMEOUT_S,
    ORDERS_PARTITIONS,
    committed,
    earliest_offsets,
    filled_topic,
    topic_config_values,
)


def test_overview_names_the_broker_version_and_counts(console):
    overview = console.get("/api/overview")
    assert overview["broker_id"] == 0 and overview["version"]
    assert [b["port"] for b in overview["brokers"]] == [console.broker.port]
    assert overview["partitions"] >= ORDERS_PARTITIONS and overview["under_replicated"] == 0
    assert overview["groups"] >= 2 and overview["uptime_s"] > 0
    assert set(overview["rates"]) >= {"bytes_in", "bytes_out", "messages_in"}


def test_throughput_rates_come_from_the_broker_counters(console):
    """The rates are differences of the counters /metrics exports (one
    source of truth): over the samples since the broker started, they add
    up to the bytes producers appended, which the fixture's produce did."""
    deadline = time.monotonic() + 10
    while len(points := console.get("/api/throughput")["points"]) < 2:
        assert time.monotonic() < deadline, "no throughput samples"
        time.sleep(0.5)
    metrics = urllib.request.urlopen(console.url + "/metrics", timeout=HTTP_TIMEOUT_S).read().decode()
    bytes_in = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith("kafka_server_brokertopicmetrics_bytesin_total{"))
    assert f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{console.orders}"}} {sum(END.values())}.0' \
        in metrics
    assert all(p["bytes_in"] >= 0 and p["messages_in"] >= 0 for p in points)
    if len(points) < HISTORY_POINTS:  # the window still starts at the broker's start
        appended = sum(p["bytes_in"] * p["seconds"] for p in points)
        assert bytes_in > 0 and abs(appended - bytes_in) <= bytes_in * 1e-6


def test_topic_list_and_topic_page_show_offsets_and_segments(console):
    listed = {t["name"]: t for t in console.get("/api/topics")["topics"]}
    orders = listed[console.orders]
    assert orders["partitions"] == ORDERS_PARTITIONS and orders["size_bytes"] > 0
    topic = console.get(f"/api/topics/{console.orders}")
    by_index = {p["partition"]: p for p in topic["partitions"]}
    for index, end in END.items():
        assert by_index[index]["log_start_offset"] == 0
        assert by_index[index]["log_end_offset"] == by_index[index]["high_watermark"] == end
        assert by_index[index]["segments"] == 1 and by_index[index]["isr"] == [0]
    assert {"name": "cleanup.policy", "value": "delete", "source": "default"} in topic["configs"]


def test_browse_shows_keys_json_values_headers_and_binary(console):
    answer = console.get(f"/api/topics/{console.orders}/partitions/0/messages?offset=18&limit=10")
    records = answer["records"]
    assert [r["offset"] for r in records] == [18, 19, 20] and answer["next_offset"] == 21
    first = records[0]
    assert first["key"] == {"type": "text", "size": 8, "text": "order-18", "truncated": False}
    assert first["value"]["type"] == "json" and '"item": "widget-18"' in first["value"]["text"]
    assert first["headers"][0] == {"key": "source", "value": {"type": "text", "size": 3, "text": "web",
                                                              "truncated": False}}
    assert first["headers"][1]["value"] == {"type": "binary", "size": 2, "text": "00 01", "truncated": False}
    assert records[2]["value"] == {"type": "binary", "size": 4, "text": BINARY_VALUE.hex(" "), "truncated": False}


def test_browse_is_bounded_by_limit_and_pages_on(console):
    first = console.get(f"/api/topics/{console.orders}/partitions/0/messages?limit=7")
    assert [r["offset"] for r in first["records"]] == list(range(7)) and first["next_offset"] == 7
    second = console.get(f"/api/topics/{console.orders}/partitions/0/messages?offset=7&limit=7")
    assert [r["offset"] for r in second["records"]] == list(range(7, 14))
    status, answer = console.call("GET", f"/api/topics/{console.orders}/partitions/0/messages?limit=100000")
    assert status == 400 and answer["error"] == "INVALID_REQUEST" and "limit" in answer["message"]


def test_browse_from_a_timestamp_starts_at_the_first_record_at_or_after_it(console):
    records = console.get(f"/api/topics/{console.orders}/partitions/1/messages?limit=3")["records"]
    later = console.get(f"/api/topics/{console.orders}/partitions/1/messages?timestamp={records[2]['timestamp']}")
    assert later["records"][0]["timestamp"] >= records[2]["timestamp"]
    assert later["records"][0]["offset"] <= 2
    future = console.get(f"/api/topics/{console.orders}/partitions/1/messages?timestamp={2**50}")
    assert future["records"] == [] and future["start_offset"] == END[1]


def test_search_finds_records_by_key_or_value_within_its_bounds(console):
    by_key = console.get(f"/api/topics/{console.orders}/partitions/0/search?q=ORDER-1&in=key")
    assert sorted(r["offset"] for r in by_key["records"]) == [1] + list(range(10, 20))
    assert by_key["complete"] and by_key["scanned"] == END[0]
    by_value = console.get(f"/api/topics/{console.orders}/partitions/0/search?q=widget-7&in=value")
    assert [r["offset"] for r in by_value["records"]] == [7]
    bounded = console.get(f"/api/topics/{console.orders}/partitions/0/search?q=widget&max_records=4&offset=2")
    assert bounded["scanned"] == 4 and [r["offset"] for r in bounded["records"]] == [2, 3, 4, 5]
    assert not bounded["complete"]


def test_bad_input_gets_a_clear_error_and_the_broker_keeps_serving(console):
    cases = [
        ("GET", "/api/topics/no-such-topic", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("GET", f"/api/topics/{console.orders}/partitions/9/messages", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ("GET", f"/api/topics/{console.orders}/partitions/0/messages?offset=999", None, 400, "OFFSET_OUT_OF_RANGE"),
        ("GET", f"/api/topics/{console.orders}/partitions/0/messages?offset=x", None, 400, "INVALID_REQUEST"),
        ("GET", f"/api/topics/{console.orders}/partitions/0/search", None, 400, "INVALID_REQUEST"),
        ("GET", "/api/groups/no-such-group", None, 404, "GROUP_ID_NOT_FOUND"),
        ("GET", "/api/nothing-here", None, 404, "NOT_FOUND"),
        ("DELETE", "/api/groups", None, 405, "METHOD_NOT_ALLOWED"),
        ("POST", "/api/topics", b"{not json", 400, "INVALID_REQUEST"),
        ("POST", "/api/topics", b"[1, 2]", 400, "INVALID_REQUEST"),
        ("POST", "/api/topics", b'{"name": "bad name!"}', 400, "INVALID_TOPIC_EXCEPTION"),
        ("POST", "/api/topics", b'{"name": "x", "partitions": "many"}', 400, "INVALID_REQUEST"),
        ("PUT", f"/api/topics/{console.orders}/configs", b'{"set": {"retention.ms": "soon"}}', 400, "INVALID_CONFIG"),
        ("PUT", f"/api/topics/{console.orders}/configs", b'{"set": {"no.such.key": "1"}}', 400, "INVALID_CONFIG"),
        ("POST", f"/api/groups/{console.billing}/reset-offsets", b'{"topic": "t", "strategy": "sideways"}', 400,
         "INVALID_REQUEST"),
    ]
    for method, path, raw, status, error in cases:
        got, answer = console.call(method, path, raw=raw)
        assert (got, answer.get("error")) == (status, error), (method, path, answer)
        assert answer["message"]
    assert console.get("/api/overview")["broker_id"] == 0


def test_http_limits_refuse_large_unlabelled_and_unknown_requests(console):
    status, answer = console.call("POST", "/api/topics", raw=b'{"name": "x"}', content_type="text/plain")
    assert status == 415 and "application/json" in answer["text"]
    status, answer = console.call("GET", "/static/../../setup.py")
    assert status == 404
    for raw, answer in [
            (b"POST /api/topics HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n",
             b"HTTP/1.1 413"),
            (b"POST /api/topics HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n",
             b"HTTP/1.1 400"),
            (b"POST /api/topics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"HTTP/1.1 411"),
            (b"\x00\xffGARBAGE\r\n\r\n", b"HTTP/1.1 400")]:
        with socket.create_connection(("127.0.0.1", int(console.url.rsplit(":", 1)[1])),
                                      timeout=HTTP_TIMEOUT_S) as sock:
            sock.sendall(raw)
            assert sock.recv(100).startswith(answer), raw
    page = urllib.request.urlopen(console.url + "/", timeout=HTTP_TIMEOUT_S)
    assert page.headers.get_content_type() == "text/html" and b"/static/app.js" in page.read()
    script = urllib.request.urlopen(console.url + "/static/app.js", timeout=HTTP_TIMEOUT_S)
    assert script.headers.get_content_type() == "text/javascript"


def test_create_change_configs_and_delete_a_topic_as_a_client_sees_it(console):
    name = unique_topic("made-in-console")
    status, answer = console.call("POST", "/api/topics", {"name": name, "partitions": 2,
                                                          "configs": {"cleanup.policy": "compact"}})
    assert status == 200 and answer["leaders_elected"], answer
    assert console.call("POST", "/api/topics", {"name": name})[1]["error"] == "TOPIC_ALREADY_EXISTS"
    metadata = admin_client(console.broker.bootstrap).list_topics(timeout=ADMIN_TIMEOUT_S)
    assert len(metadata.topics[name].partitions) == 2
    status, _ = console.call("PUT", f"/api/topics/{name}/configs", {"set": {"retention.ms": "3600000"},
                                                                   "delete": ["cleanup.policy"]})
    assert status == 200
    configs = topic_config_values(console.broker.bootstrap, name)
    assert configs["retention.ms"] == "3600000" and configs["cleanup.policy"] == "delete"
    assert console.call("DELETE", f"/api/topics/{name}")[0] == 200
    deadline = time.monotonic() + 10
    while name in admin_client(console.broker.bootstrap).list_topics(timeout=ADMIN_TIMEOUT_S).topics:
        assert time.monotonic() < deadline, "the deleted topic stayed in the metadata"
        time.sleep(0.1)
    assert console.call("DELETE", f"/api/topics/{name}")[0] == 404


def test_group_shows_the_lag_a_real_consumer_left(console):
    listed = {g["group_id"]: g for g in console.get("/api/groups")["groups"]}
    assert listed[console.billing]["state"] == "Empty" and listed[console.live]["state"] == "Stable"
    group = console.get(f"/api/groups/{console.billing}")
    lag = {o["partition"]: (o["committed_offset"], o["end_offset"], o["lag"]) for o in group["offsets"]}
    assert lag == {p: (COMMITTED[p], END[p], END[p] - COMMITTED[p]) for p in END}
    live = console.get(f"/api/groups/{console.live}")
    assert len(live["members"]) == 1
    assert sorted(tuple(tp) for tp in live["members"][0]["assignment"]) == [(console.orders, p) for p in END]


def test_lag_history_is_sampled_by_the_broker(console):
    deadline = time.monotonic() + 10
    while len(history := console.get(f"/api/groups/{console.billing}")["lag_history"]) < 2:
        assert time.monotonic() < deadline, "no lag samples"
        time.sleep(0.5)
    expected = sum(END[p] - COMMITTED[p] for p in END)
    assert history[-1][1] == expected and history[-1][0] > history[0][0]


def test_reset_offsets_dry_run_then_execute(console):
    group = unique_topic("reset")
    topic = console.orders
    status, answer = console.call("POST", f"/api/groups/{group}/reset-offsets",
                                  {"topic": topic, "strategy": "shift", "value": -4})
    assert status == 200 and not answer["executed"]
    assert {p["partition"]: p["new_offset"] for p in answer["plan"]} == {p: END[p] - 4 for p in END}
    assert committed(console.broker.bootstrap, group, topic) == dict.fromkeys(END, -1001)  # nothing yet
    status, answer = console.call("POST", f"/api/groups/{group}/reset-offsets",
                                  {"topic": topic, "strategy": "offset", "value": 999, "partitions": [0, 2],
                                   "execute": True})
    assert status == 200 and answer["executed"]
    assert committed(console.broker.bootstrap, group, topic) == {0: END[0], 1: -1001, 2: END[2]}  # clamped


def test_reset_offsets_of_a_group_with_members_is_refused(console):
    status, answer = console.call("POST", f"/api/groups/{console.live}/reset-offsets",
                                  {"topic": console.orders, "strategy": "earliest", "execute": True})
    assert status == 409 and answer["error"] == "NON_EMPTY_GROUP" and "Stable" in answer["message"]
    status, answer = console.call("POST", f"/api/groups/{console.live}/reset-offsets",
                                  {"topic": console.orders, "strategy": "earliest"})
    assert status == 200 and answer["state"] == "Stable" and not answer["executed"]


def test_a_browse_of_large_compressed_values_stops_at_its_answer_budget(console):
    """200 values of 64 KiB zeros weigh little on disk once compressed, and
    would be ~40 MB of hex: the answer stops past 8 Mi characters."""
    topic = unique_topic("large")
    admin = admin_client(console.broker.bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(ADMIN_TIMEOUT_S)
    producer = Producer({"bootstrap.servers": console.broker.bootstrap, "compression.type": "zstd",
                         "linger.ms": 50})
    for _ in range(200):
        producer.produce(topic, bytes(PREVIEW_BYTES), partition=0)
    assert producer.flush(HTTP_TIMEOUT_S) == 0
    answer = console.get(f"/api/topics/{topic}/partitions/0/messages?limit=500")
    per_record = PREVIEW_BYTES * 3 - 1 + 2 * 100  # hex with spaces, plus the null key
    assert len(answer["records"]) == ANSWER_MAX_CHARS // per_record + 1
    assert answer["next_offset"] == len(answer["records"])
    assert answer["records"][0]["value"]["type"] == "binary" and not answer["records"][0]["value"]["truncated"]


def test_delete_records_moves_the_log_start_offsets_a_client_then_sees(console):
    bootstrap = console.broker.bootstrap
    topic = filled_topic(bootstrap, "console-trim", 3, 6)
    path = f"/api/topics/{topic}/delete-records"
    status, answer = console.call("POST", path, {"offset": 4, "partitions": [1]})
    assert (status, answer["partitions"]) == (200, [{"partition": 1, "low_watermark": 4, "error": None}])
    assert earliest_offsets(bootstrap, topic, 3) == [0, 4, 0]
    status, answer = console.call("POST", path, {"offset": -1})  # every partition, to its high watermark
    assert [(p["low_watermark"], p["error"]) for p in answer["partitions"]] == [(6, None)] * 3
    assert earliest_offsets(bootstrap, topic, 3) == [6, 6, 6]
    assert console.get(f"/api/topics/{topic}")["partitions"][0]["log_start_offset"] == 6
    status, answer = console.call("POST", path, {"offset": 7, "partitions": [0, 9]})
    assert status == 200 and [(p["partition"], p["error"]) for p in answer["partitions"]] == [
        (0, "OFFSET_OUT_OF_RANGE"), (9, "UNKNOWN_TOPIC_OR_PARTITION")]
    for body, expected in [({}, (400, "INVALID_REQUEST")), ({"offset": "x"}, (400, "INVALID_REQUEST")),
                           ({"offset": 1, "partitions": "0"}, (400, "INVALID_REQUEST"))]:
        status, answer = console.call("POST", path, body)
        assert (status, answer["error"]) == expected, body
    status, answer = console.call("POST", "/api/topics/no-such-topic/delete-records", {"offset": 1})
    assert (status, answer["error"]) == (404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert earliest_offsets(bootstrap, topic, 3) == [6, 6, 6]


def test_a_consumer_protocol_group_is_listed_and_described(console):
    """A KIP-848 member (group.protocol=consumer): the list says its type,
    the group page its epoch, assignor and each member's partitions."""
    group = unique_topic("kip848")
    consumer = Consumer({"bootstrap.servers": console.broker.bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([console.orders])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < len(END):
            assert time.monotonic() < deadline, "the member never got every partition"
            consumer.poll(0.2)
        listed = {g["group_id"]: g for g in console.get("/api/groups")["groups"]}
        assert (listed[group]["type"], listed[group]["state"], listed[group]["members"]) == ("consumer", "Stable", 1)
        described = console.get(f"/api/groups/{group}")
        assert described["protocol"] == "uniform" and described["generation_id"] >= 1
        member = described["members"][0]
        assert member["protocol"] == "consumer"
        assert sorted(tuple(tp) for tp in member["assignment"]) == [(console.orders, p) for p in END]
    finally:
        consumer.close()
