"""IndexNow (indexnow.org): every URL the change log records, submitted to a search engine.

    Sitemaps(base_url="https://shop.example", changes=ChangeLog.sqlite(path),
             push=[IndexNow(key="3f1c9a2be07d4c11")])

The middleware answers ``/<key>.txt`` (the key alone, ``text/plain; charset=utf-8``) on
every site it submits for, before the app sees the request. Each site is its own outbox
consumer (``indexnow|https://shop.example``): a 200 for one host and a 429 for another
never resends the first. A delivery is one POST of at most 10,000 URLs, each once::

    POST /indexnow   Content-Type: application/json; charset=utf-8
    {"host": "shop.example", "key": "...", "urlList": ["https://shop.example/p/1", ...]}

200 and 202 (key validation pending) are sent; 429, 5xx, a timeout or a network error
are retried (``Retry-After`` honoured); 400, 403, 422 and other refusals are logged with
the answer's body and never retried: a wrong key must not hammer an engine.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import httpx

from ..changes.model import Delivery
from ..errors import ConfigurationError
from .retry import retry_after
from .target import Outcome, Refused, Retry, Sent, Want

__all__ = ["DEFAULT_ENDPOINT", "IndexNow"]

DEFAULT_ENDPOINT = "https://api.indexnow.org/indexnow"
MAX_URLS = 10_000  # indexnow.org: at most 10,000 URLs per POST
_KEY = re.compile(r"[a-zA-Z0-9-]{8,128}")  # indexnow.org: 8 to 128 of a-z, A-Z, 0-9 and "-"
_BODY_QUOTED = 500  # characters of a refusal's body that reach the log
_RETRIED = frozenset({408, 425, 429})  # and every 5xx: "try later"
_JSON = "application/json; charset=utf-8"


class IndexNow:
    """Submit every URL added, changed or removed to an IndexNow engine.

    Example::

        IndexNow(key="3f1c9a2be07d4c11", endpoint="https://www.bing.com/indexnow")

    - ``key``: 8 to 128 characters of ``a-z A-Z 0-9 -``; answered at ``/<key>.txt``.
    - ``endpoint``: the engine's ``/indexnow`` URL (one engine shares with the others).
    - ``key_location``: where the key file is, when not at ``/<key>.txt`` of the host
      (the app mounted below a path): an absolute URL, or a path joined to each site's
      origin (``"/shop/<key>.txt"``); sent as ``keyLocation``. The middleware answers
      ``/<key>.txt`` below its mount either way.
    - ``timeout``: seconds one POST may take (connect, send, read), then it is retried.
    """

    name = "indexnow"
    wants: frozenset[Want] = frozenset({"urls"})
    limit = MAX_URLS

    def __init__(
        self,
        *,
        key: str,
        endpoint: str = DEFAULT_ENDPOINT,
        key_location: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise ConfigurationError(
                f"IndexNow key must be 8 to 128 characters of a-z, A-Z, 0-9 and '-', not {key!r}"
            )
        self.key = key
        if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
            raise ConfigurationError(f"IndexNow endpoint must be an http(s) URL, not {endpoint!r}")
        self.endpoint = endpoint
        if key_location is not None and (
            not isinstance(key_location, str)
            or not (key_location.startswith("/") or urlsplit(key_location).scheme in ("http", "https"))
        ):
            raise ConfigurationError(f"IndexNow key_location must be a URL or a path, not {key_location!r}")
        self.key_location = key_location
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(
                f"IndexNow timeout must be a positive number of seconds, not {timeout!r}"
            )
        self.timeout = float(timeout)

    @property
    def key_file(self) -> tuple[str, bytes]:
        """The path the middleware answers (below its mount) and its body: the key alone."""
        return f"/{self.key}.txt", self.key.encode("ascii")

    def consumer(self, site: str) -> str:
        return f"indexnow|{site}"

    def body(self, delivery: Delivery, site: str) -> dict[str, object]:
        """The POST's JSON: each URL once, in the order first recorded."""
        parts = urlsplit(site)
        body: dict[str, object] = {"host": parts.hostname or "", "key": self.key}
        if self.key_location is not None:
            where = self.key_location
            body["keyLocation"] = (
                f"{parts.scheme}://{parts.netloc}{where}" if where.startswith("/") else where
            )
        # indexnow.org: "never the same URL over and over": a URL changed twice goes once.
        body["urlList"] = list(dict.fromkeys(change.loc for change in delivery.changes))
        return body

    def send(self, delivery: Delivery, site: str) -> Outcome:
        content = json.dumps(self.body(delivery, site)).encode()
        try:
            answer = httpx.post(
                self.endpoint, content=content, headers={"Content-Type": _JSON}, timeout=self.timeout
            )
        except httpx.HTTPError as error:
            return Retry(reason=f"{type(error).__name__}: {error}")
        status = answer.status_code
        if status in (200, 202):  # 202: received, the key's validation is pending
            return Sent()
        said = f"{status}: {answer.text[:_BODY_QUOTED]}"
        if status in _RETRIED or status >= 500:
            return Retry(retry_after(answer.headers.get("retry-after")), said)
        return Refused(said)  # 400 bad request, 403 key not valid, 422 URLs not of the host
