"""Platforms' public key sets, fetched from their JWKS URL and cached per process.

A token whose `kid` is not in the cached set makes one refetch (a platform
rotated its key), at most once per `MIN_REFRESH` seconds per URL, so a flood
of tokens with made-up kids cannot make us hammer the platform.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from attn_practice.grader.host.lti import http

TTL = 3600.0
MIN_REFRESH = 2.0


class KeyCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, dict[str, PyJWK]]] = {}

    def _fetch(self, url: str) -> dict[str, PyJWK]:
        answer = http.call("GET", url, headers={"Accept": "application/json"})
        if answer.status != 200:
            raise http.PlatformError(f"the platform's key set ({url}) answered {answer.brief()}")
        try:
            keys = PyJWKSet.from_dict(answer.json()).keys
        except (PyJWKError, PyJWKSetError, KeyError, TypeError) as exc:
            raise http.PlatformError(f"the platform's key set ({url}) could not be read: {exc}") from None
        return {str(k.key_id or ""): k for k in keys}

    def key(self, url: str, kid: str | None) -> Any:
        """The public key for `kid` (the only key when the token names none), or None."""
        with self._lock:
            at, keys = self._sets.get(url, (0.0, {}))
        now = time.monotonic()
        stale = now - at > TTL
        missing = (kid or "") not in keys and not (kid is None and len(keys) == 1)
        if stale or (missing and now - at > MIN_REFRESH):
            keys = self._fetch(url)
            with self._lock:
                self._sets[url] = (now, keys)
        if kid is None:
            return next(iter(keys.values())).key if len(keys) == 1 else None
        found = keys.get(kid)
        return found.key if found is not None else None
