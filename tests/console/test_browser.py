"""The console in a real browser (Debian's Chromium through Playwright)
against the real broker and data of conftest.py: what the pages show is
checked against what the clients produced and committed, and what the
pages change is checked through a real Kafka client. Screenshots of the
main pages go to test-artifacts/console/."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from playwright.sync_api import expect

from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.console import (
    COMMITTED,
    END,
    committed,
    earliest_offsets,
    filled_topic,
    screenshot,
    topic_config_values,
)
from tests.support.share import create_topic as create_share_topic
from tests.support.share import produce as produce_share
from tests.support.share import set_group_configs, share_consumer

# Every wait on the page is bounded: the broker answers in milliseconds and
# the charts fill once a second.
expect.set_options(timeout=10_000)


def test_overview_shows_the_broker_and_live_throughput(page, console):
    page.goto(console.url + "/")
    expect(page.locator("#ov-version")).not_to_have_text("")
    expect(page.locator("#ov-brokers")).to_have_text("1")
    expect(page.locator("#ov-under-replicated")).to_have_text("0")
    expect(page.locator("#brokers tr[data-broker='0']")).to_contain_text(str(console.broker.port))
    expect(page.locator("#throughput-chart path[data-series='bytes in/s']")).to_have_count(1)
    screenshot(page, "overview")


def test_topic_list_shows_created_topics(page, console):
    page.goto(console.url + "/#/topics")
    row = page.locator(f"#topics tr[data-topic='{console.orders}']")
    expect(row.locator("td").nth(1)).to_have_text("3")
    screenshot(page, "topics")
    row.locator("a").click()
    expect(page.locator("#partitions tr[data-partition='0'] td").nth(5)).to_have_text(str(END[0]))


def test_config_change_in_the_page_is_seen_by_describe_configs(page, console):
    page.goto(console.url + f"/#/topics/{console.orders}")
    page.select_option("#config-name", "retention.ms")
    page.fill("#config-value", "7200000")
    page.click("#config-set")
    row = page.locator("#configs tr[data-config='retention.ms']")
    expect(row).to_contain_text("7200000")
    expect(row).to_contain_text("override")
    assert topic_config_values(console.broker.bootstrap, console.orders)["retention.ms"] == "7200000"
    screenshot(page, "topic")


def test_create_and_delete_a_topic_in_the_page(page, console):
    name = unique_topic("from-page")
    page.goto(console.url + "/#/topics")
    form = page.locator("#create-topic")
    form.locator("input[name='name']").fill(name)
    form.locator("input[name='partitions']").fill("4")
    form.locator("button[type='submit']").click()
    expect(page.locator(f"#topic-page[data-topic='{name}'] #partitions tbody tr")).to_have_count(4)
    admin = admin_client(console.broker.bootstrap)
    assert len(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics[name].partitions) == 4
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-topic")
    expect(page.locator("#topics-page")).to_be_visible()
    deadline = time.monotonic() + 10
    while name in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics:
        assert time.monotonic() < deadline, "the topic deleted in the page stayed"
        time.sleep(0.1)


def test_browsing_shows_produced_messages_with_their_headers(page, console):
    page.goto(console.url + f"/#/topics/{console.orders}/messages?partition=0&offset=18")
    row = page.locator("#messages tr.message[data-offset='18']")
    expect(row.locator("td.key pre")).to_have_text("order-18")
    expect(row.locator("td.value [data-type='json'] pre")).to_contain_text('"item": "widget-18"')
    expect(row.locator("td.headers .header").first).to_have_text("source: web")
    expect(row.locator("td.headers .header").nth(1)).to_have_text("trace: 00 01")
    binary = page.locator("#messages tr.message[data-offset='20'] td.value [data-type='binary'] pre")
    expect(binary).to_have_text("00 ff 10 80")
    screenshot(page, "messages")
    page.fill("#search-form input[name='q']", "widget-7")
    page.click("#search-form button[type='submit']")
    expect(page.locator("#messages tr.message")).to_have_count(1)
    expect(page.locator("#messages tr.message")).to_have_attribute("data-offset", "7")


def test_group_page_shows_the_lag_a_real_consumer_group_left(page, console):
    page.goto(console.url + "/#/groups")
    expect(page.locator(f"#groups tr[data-group='{console.billing}'] td").nth(1)).to_have_text("Empty")
    page.locator(f"#groups tr[data-group='{console.billing}'] a").click()
    for partition, end in END.items():
        row = page.locator(f"#group-offsets tr[data-partition='{partition}']")
        expect(row.locator("td.lag")).to_have_text(str(end - COMMITTED[partition]))
    expect(page.locator("#group-state")).to_have_text("Empty")
    expect(page.locator("#lag-chart path[data-series]")).to_have_count(1)
    screenshot(page, "group")
    page.goto(console.url + f"/#/groups/{console.live}")
    expect(page.locator("#group-state")).to_have_text("Stable")
    expect(page.locator("#group-members-table tbody tr")).to_have_count(1)


def test_reset_offsets_in_the_page_dry_run_then_execute(page, console):
    group, topic = unique_topic("page-reset"), console.orders
    committer = Consumer({"bootstrap.servers": console.broker.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, p, 1) for p in END], asynchronous=False)
    committer.close()
    page.goto(console.url + f"/#/groups/{group}")
    form = page.locator("#reset-form")
    form.locator("input[name='topic']").fill(topic)
    form.locator("select[name='strategy']").select_option("latest")
    page.click("#reset-dry-run")
    expect(page.locator("#reset-plan-table tr[data-partition='0'] td").nth(3)).to_have_text(str(END[0]))
    assert committed(console.broker.bootstrap, group, topic) == dict.fromkeys(END, 1)
    page.click("#reset-execute")
    expect(page.locator("#reset-plan .notice")).to_contain_text("reset")
    assert committed(console.broker.bootstrap, group, topic) == END
    expect(page.locator("#group-offsets tr[data-partition='1'] td.lag")).to_have_text("0")


def test_bad_input_shows_a_clear_error_in_the_page(page, console):
    page.goto(console.url + "/#/topics/no-such-topic")
    expect(page.locator("#error")).to_contain_text("UNKNOWN_TOPIC_OR_PARTITION")
    page.goto(console.url + f"/#/topics/{console.orders}/messages?partition=0&offset=999")
    expect(page.locator("#error")).to_contain_text("OFFSET_OUT_OF_RANGE")
    page.goto(console.url + f"/#/topics/{console.orders}")
    page.select_option("#config-name", "segment.bytes")
    page.fill("#config-value", "lots")
    page.click("#config-set")
    expect(page.locator("#error")).to_contain_text("INVALID_CONFIG")
    screenshot(page, "error")
    page.goto(console.url + f"/#/groups/{console.live}")
    page.locator("#reset-form input[name='topic']").fill(console.orders)
    page.click("#reset-dry-run")
    page.click("#reset-execute")
    expect(page.locator("#error")).to_contain_text("NON_EMPTY_GROUP")
    page.goto(console.url + "/")
    expect(page.locator("#ov-brokers")).to_have_text("1")  # the broker is unaffected


def test_delete_records_in_the_page_asks_first_then_moves_the_log_start(page, console):
    bootstrap = console.broker.bootstrap
    topic = filled_topic(bootstrap, "page-trim", 2, 8)
    page.goto(console.url + f"/#/topics/{topic}")
    form = page.locator("#delete-records-form")
    form.locator("select[name='partition']").select_option("1")
    form.locator("input[name='offset']").fill("5")
    asked: list[str] = []
    page.once("dialog", lambda dialog: asked.append(dialog.message) or dialog.dismiss())
    page.click("#delete-records")
    expect(page.locator("#delete-records-form")).to_be_visible()
    assert asked and "partition 1" in asked[0] and "offset 5" in asked[0]
    assert earliest_offsets(bootstrap, topic, 2) == [0, 0]  # declined: nothing deleted
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-records")
    expect(page.locator("#delete-records-table tr[data-partition='1'] td").nth(1)).to_have_text("5")
    expect(page.locator("#partitions tr[data-partition='1'] td").nth(4)).to_have_text("5")  # Log start
    assert earliest_offsets(bootstrap, topic, 2) == [0, 5]
    screenshot(page, "delete-records")
    page.locator("#delete-records-form input[name='offset']").fill("99")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-records")
    expect(page.locator("#error")).to_contain_text("OFFSET_OUT_OF_RANGE")
    assert earliest_offsets(bootstrap, topic, 2) == [0, 5]


def test_groups_page_shows_share_groups_with_records_in_flight_and_lag(page, console):
    topic, group = unique_topic("page-share"), unique_topic("share-g")
    create_share_topic(console.broker.bootstrap, topic)
    set_group_configs([console.broker.bootstrap], group, {"share.auto.offset.reset": "earliest"})
    produce_share(console.broker.bootstrap, topic, 12)
    consumer = share_consumer(console.broker.bootstrap, group, topic,
                              **{"share.acknowledgement.mode": "explicit", "max.poll.records": "5"})
    held = []
    for _ in range(40):
        held = [m for m in consumer.poll(0.5) if not m.error()]
        if held:
            break
    try:
        page.goto(console.url + "/#/groups")
        row = page.locator(f"#share-groups-table tr[data-share-group='{group}']")
        expect(row.locator("td").nth(1)).to_have_text("Stable")
        expect(row.locator("td").nth(5)).to_have_text(str(len(held)))   # in flight: the records held
        expect(row.locator("td.lag")).to_have_text("12")
        screenshot(page, "share-groups")
    finally:
        consumer.close()


def test_the_topic_page_shows_its_iceberg_tables_lag(page, console):
    topic = filled_topic(console.broker.bootstrap, "table-page", 2, 50)
    page.goto(console.url + f"/#/topics/{topic}")
    expect(page.locator("#topic-page")).to_be_visible()
    expect(page.locator("#topic-table")).to_have_count(0)  # no table: no line
    admin = admin_client(console.broker.bootstrap)
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("kcore.table.mode", "key_value", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("kcore.table.commit.interval.ms", "200", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    deadline = time.monotonic() + 30
    while True:
        page.reload()
        line = page.locator("#topic-table")
        if line.count() and line.get_attribute("data-lag") == "0" and "100 records" in line.inner_text():
            break
        assert time.monotonic() < deadline, "the table's lag never reached 0 on the page"
        time.sleep(0.5)
    expect(line).to_contain_text(f"kcore.{topic}")
