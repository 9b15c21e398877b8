"""Where a listener's JSON Web Key Set comes from:
``sasl.oauthbearer.jwks.endpoint.url``, a ``file:`` URL or an
``http(s):`` one, read as Kafka reads them.

- A file is read once, at start (Kafka's JwksFileVerificationKeyResolver):
  a token naming a key it lacks is refused.
- A URL is fetched at start, then every
  ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (default 1 h), a failed
  fetch retried after ``...retry.backoff.ms`` (100) doubled up to
  ``...retry.backoff.max.ms`` (10000) in all; the last good set stays in
  use meanwhile. A token naming a key the set lacks starts a fetch at
  once (Kafka's RefreshingHttpsJwks), at most once a minute per key id
  and for the last 16 ids, and never for an id over 1000 characters.
  https uses the system's trust store.

Either failing at start (no such file, a directory, unreadable, not a
JWKS, an endpoint that does not answer one) is a ConfigError: the broker
does not start.

Not thread-safe: the refresh runs on the broker's event loop; the fetch
itself runs in a worker thread so the loop never waits on the network.
"""
from __future__ import annotations

import asyncio
import http.client
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from kcore.config import ConfigError
from kcore.security.jwks import JsonWebKeySet, JwksError

log = logging.getLogger(__name__)

URL_KEY = "sasl.oauthbearer.jwks.endpoint.url"
FETCH_TIMEOUT_S = 10.0
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024  # a JWKS is a few KiB; a bound against a runaway endpoint
MISSING_KEY_ID_CACHE_MAX_ENTRIES = 16  # Kafka's RefreshingHttpsJwks
MISSING_KEY_ID_CACHE_IN_FLIGHT_S = 60.0
MISSING_KEY_ID_MAX_KEY_LENGTH = 1000


class FileJwks:
    """A JWKS file, read at start."""

    def __init__(self, url: str):
        self.location = url
        path = Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).absolute()
        if not path.exists():
            raise ConfigError(f"The OAuth configuration option {URL_KEY} contains a file ({path}) that doesn't exist")
        if path.is_dir():
            raise ConfigError(f"The OAuth configuration option {URL_KEY} references a directory ({path}), "
                              "not a file")
        try:
            self._keys = JsonWebKeySet.parse(path.read_bytes())
        except OSError as exc:
            raise ConfigError(f"The OAuth configuration option {URL_KEY} contains a file ({path}) that "
                              f"cannot be read: {exc.strerror}") from None
        except JwksError as exc:
            raise ConfigError(f"{URL_KEY} {url}: {exc}") from None

    def key_set(self) -> JsonWebKeySet:
        return self._keys

    def key_not_found(self, kid: str | None) -> None:
        log.info("no key %r in the JWKS file %s", kid, self.location)


def http_get(url: str) -> bytes:
    """The body of a 200 answer to GET ``url``, else OSError."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:  # noqa: S310 (http/https only)
        body = response.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise OSError(f"the JWKS is over {MAX_DOCUMENT_BYTES} bytes")
    return body


class HttpJwks:
    """A JWKS endpoint, fetched at start and refreshed by ``run``."""

    def __init__(self, url: str, refresh_ms: int, retry_backoff_ms: int, retry_backoff_max_ms: int,
                 fetch: Callable[[str], bytes] = http_get, clock: Callable[[], float] = time.monotonic):
        self.location = url
        self.refresh_s = refresh_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.retry_backoff_max_s = retry_backoff_max_ms / 1000
        self._fetch = fetch
        self._clock = clock
        self._missing: OrderedDict[str, float] = OrderedDict()  # key id -> when it may be tried again
        self._refreshing: asyncio.Task | None = None
        try:
            self._keys = self._get()
        except (OSError, JwksError) as exc:
            raise ConfigError(f"{URL_KEY} {url}: cannot read the JWKS at start: {exc}") from None
        self.refreshes = 0  # fetches that replaced the set after the first

    def key_set(self) -> JsonWebKeySet:
        return self._keys

    def key_not_found(self, kid: str | None) -> None:
        if kid is None or len(kid) > MISSING_KEY_ID_MAX_KEY_LENGTH:
            return
        now = self._clock()
        if self._missing.get(kid, now) > now:
            return
        self._missing[kid] = now + MISSING_KEY_ID_CACHE_IN_FLIGHT_S
        self._missing.move_to_end(kid)
        while len(self._missing) > MISSING_KEY_ID_CACHE_MAX_ENTRIES:
            self._missing.popitem(last=False)
        log.info("key %r not in the JWKS of %s: fetching it again", kid, self.location)
        self._start_refresh()

    async def run(self) -> None:
        """Refresh every refresh interval until cancelled."""
        while True:
            await asyncio.sleep(self.refresh_s)
            self._start_refresh()
            if self._refreshing is not None:
                await asyncio.shield(self._refreshing)

    def _start_refresh(self) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        """One fetch with Kafka's retries (its Retry: waits doubling from
        the backoff, all of them within the maximum)."""
        deadline = self._clock() + self.retry_backoff_max_s
        wait_s = self.retry_backoff_s
        while True:
            try:
                keys = await asyncio.to_thread(self._get)
            except (OSError, JwksError) as exc:
                remaining = deadline - self._clock()
                if min(wait_s, remaining) <= 0:
                    log.warning("cannot refresh the JWKS of %s: %s; keeping the last one", self.location, exc)
                    return
                await asyncio.sleep(min(wait_s, remaining))
                wait_s *= 2
                continue
            for kid in keys.key_ids():
                if kid is not None:
                    self._missing.pop(kid, None)
            self._keys = keys
            self.refreshes += 1
            return

    def _get(self) -> JsonWebKeySet:
        """The set at the URL; OSError when it cannot be fetched, JwksError
        when what came is no key set."""
        try:
            document = self._fetch(self.location)
        except urllib.error.URLError as exc:  # an OSError whose text hides in reason
            raise OSError(str(exc.reason)) from None
        except (http.client.HTTPException, ValueError) as exc:  # a truncated or garbled answer
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        return JsonWebKeySet.parse(document)


def jwks_source(url: str, refresh_ms: int, retry_backoff_ms: int,
                retry_backoff_max_ms: int) -> FileJwks | HttpJwks:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme == "file":
        return FileJwks(url)
    return HttpJwks(url, refresh_ms, retry_backoff_ms, retry_backoff_max_ms)
