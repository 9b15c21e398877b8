"""Fixtures of the console tests: the broker and data of
tests/support/console.py, and the browser that reads them."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import BrokerProcess, free_port
from tests.support.console import CHROMIUM, CHROMIUM_ARGS, Console, fill_console_world


@pytest.fixture(scope="session")
def console(tmp_path_factory) -> Console:
    http_port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("console") / "data",
                           {"http.listeners": f"http://127.0.0.1:{http_port}",
                            # Groups form at once: the tests wait for two.
                            "group.initial.rebalance.delay.ms": "0"}).start()
    live_consumer = None
    try:
        orders, billing, live, live_consumer = fill_console_world(broker)
        yield Console(broker, f"http://127.0.0.1:{http_port}", orders, billing, live)
    finally:
        if live_consumer is not None:
            live_consumer.close()
        broker.kill()


# Module scope: Playwright's sync API runs an event loop in this thread
# while it is started, and asyncio.run() in any later test would refuse to
# start beside it.
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (make system-deps)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console):
    """A fresh page of the console; what the page's script throws fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors
