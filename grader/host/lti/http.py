"""The few HTTP calls the tool makes to a platform: bounded in time and size, never following
redirects to elsewhere silently, and never raising anything but `PlatformError`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

TIMEOUT = 10.0
MAX_BODY = 2 * 1024 * 1024


class PlatformError(Exception):
    """The platform could not be reached or answered what we cannot use; the message says which."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise PlatformError(f"the platform answered HTTP {self.status} with something that is not "
                                "JSON") from None

    def brief(self) -> str:
        text = self.body[:300].decode("utf-8", "replace").strip().replace("\n", " ")
        return f"HTTP {self.status}" + (f": {text}" if text else "")


def call(method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | None = None,
         timeout: float = TIMEOUT) -> Answer:
    """One request; an HTTP error status is an `Answer` too (the caller decides), a failure to reach
    the platform is a `PlatformError`."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - URLs are registered
            data = resp.read(MAX_BODY + 1)
            status, got = resp.status, dict(resp.headers.items())
    except urllib.error.HTTPError as exc:
        data = exc.read(MAX_BODY + 1) if exc.fp else b""
        status, got = exc.code, dict(exc.headers.items()) if exc.headers else {}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PlatformError(f"could not reach {url}: {reason}") from None
    if len(data) > MAX_BODY:
        raise PlatformError(f"the platform's answer from {url} is too large")
    return Answer(status, data, {k.lower(): v for k, v in got.items()})
