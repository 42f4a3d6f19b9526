"""Registered platforms and the tool's own keys, kept in the class's store (settings).

A platform is one (issuer, client id) with its OIDC auth URL, token URL,
JWKS URL, optional token audience (Brightspace's differs from its token
URL) and deployment ids; registering it again adds deployment ids and
updates the URLs. Every view reads the registrations from the store, so a
registration takes effect at once, also in a running class.

The tool's RSA key is made once per class; `rotate` makes a new current key
and keeps the one before it in the JWKS (platforms cache key sets) until the
next rotation. The private keys stay in the store: `public_jwks` is the only
thing built from them that leaves the process.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from attn_practice.grader.host.store.base import Store

PLATFORMS = "lti_platforms"
KEYS = "lti_keys"
BASE_URL = "lti_base_url"
KEY_BITS = 2048


class RegistryError(ValueError):
    """A registration refused; the message names the option."""


def url_ok(url: str) -> bool:
    """HTTPS, or HTTP on a loopback address only (CONTRACT §8)."""
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return False
    if parts.scheme == "https":
        return True
    host = parts.hostname
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    auth_url: str
    token_url: str
    jwks_url: str
    deployment_ids: tuple[str, ...]
    token_audience: str = ""
    registered: float = field(default=0.0)

    @property
    def audience(self) -> str:
        return self.token_audience or self.token_url

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "deployment_ids": list(self.deployment_ids)}


def platforms(store: Store) -> list[Platform]:
    raw = store.get_setting(PLATFORMS)
    if not raw:
        return []
    return [Platform(**{**p, "deployment_ids": tuple(p["deployment_ids"])}) for p in json.loads(raw)]


def find(store: Store, issuer: str, client_id: str | None = None) -> list[Platform]:
    """The registrations of `issuer` (of that client id when given)."""
    return [p for p in platforms(store)
            if p.issuer == issuer and (client_id is None or p.client_id == client_id)]


def register(store: Store, *, issuer: str, client_id: str, auth_url: str, token_url: str, jwks_url: str,
             deployment_ids: list[str], token_audience: str = "") -> tuple[Platform, bool]:
    """Add or update a registration; (platform, new). Deployment ids accumulate."""
    for name, url in (("--issuer", issuer), ("--auth-url", auth_url), ("--token-url", token_url),
                      ("--jwks-url", jwks_url)) + ((("--token-audience", token_audience),)
                                                   if token_audience else ()):
        if not url_ok(url):
            raise RegistryError(f"{name} {url!r} must be an https:// URL (http:// only on a loopback "
                                "address such as 127.0.0.1).")
    if not client_id.strip():
        raise RegistryError("--client-id must not be empty.")
    current = platforms(store)
    old = next((p for p in current if p.issuer == issuer and p.client_id == client_id), None)
    deployments = list(old.deployment_ids) if old else []
    deployments += [d for d in deployment_ids if d and d not in deployments]
    if not deployments:
        raise RegistryError("give at least one --deployment-id (the LMS shows it when the tool is "
                            "deployed).")
    new = Platform(issuer, client_id, auth_url, token_url, jwks_url, tuple(deployments), token_audience,
                   old.registered if old else time.time())
    rest = [p for p in current if p is not old]
    store.set_setting(PLATFORMS, json.dumps([p.to_json() for p in rest + [new]]))
    return new, old is None


# ------------------------------------------------------------------ the tool's keys
@dataclass(frozen=True)
class ToolKey:
    kid: str
    private_pem: str
    created: float

    def private_key(self) -> rsa.RSAPrivateKey:
        key = serialization.load_pem_private_key(self.private_pem.encode(), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        return key

    def public_jwk(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.private_key().public_key()))
        return {"kty": "RSA", "n": jwk["n"], "e": jwk["e"], "kid": self.kid, "alg": "RS256", "use": "sig"}

    def __repr__(self) -> str:  # never the private key in a log or a traceback
        return f"ToolKey(kid={self.kid!r}, created={self.created})"


def _new_key() -> dict[str, Any]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"kid": secrets.token_urlsafe(12), "private_pem": pem, "created": time.time()}


def _raw_keys(store: Store) -> str:
    return store.get_setting(KEYS) or store.setting_or_set(KEYS, json.dumps([_new_key()]))


def tool_keys(store: Store) -> list[ToolKey]:
    """[current, previous?]: made on first use (atomically: processes starting together agree)."""
    return [ToolKey(**k) for k in json.loads(_raw_keys(store))]


def current_key(store: Store) -> ToolKey:
    return tool_keys(store)[0]


def rotate(store: Store) -> ToolKey:
    """A new current key; the old current one stays served until the next rotation."""
    keys = tool_keys(store)
    fresh = _new_key()
    kept = [{"kid": k.kid, "private_pem": k.private_pem, "created": k.created} for k in keys[:1]]
    store.set_setting(KEYS, json.dumps([fresh, *kept]))
    return ToolKey(**fresh)


def retire_previous(store: Store) -> list[str]:
    """Drop the previous key (once every platform uses the current one); the kids that were dropped."""
    keys = tool_keys(store)
    kept = keys[0]
    store.set_setting(KEYS, json.dumps([{"kid": kept.kid, "private_pem": kept.private_pem,
                                         "created": kept.created}]))
    return [k.kid for k in keys[1:]]


def public_jwks(store: Store) -> dict[str, Any]:
    return _public(_raw_keys(store))


@functools.lru_cache(maxsize=4)
def _public(raw: str) -> dict[str, Any]:
    """The key set served for these stored keys (parsed once per rotation, not per request)."""
    return {"keys": [ToolKey(**k).public_jwk() for k in json.loads(raw)]}
