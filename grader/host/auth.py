"""Who is asking: learners by their resume secret, the instructor by key or password.

The part JupyterHub calls an Authenticator, kept in one module so another way
in (LTI 1.3) can replace join-code + resume link without touching the views.

- A learner's resume secret (256 bits, in their resume link) is stored only
  as a SHA-256 hash. Opening the link asks before it signs a browser in. A
  reissued link changes the hash and ends the learner's sessions.
- A session (learner or instructor) is a random token in a cookie, stored
  only as its hash (`session.py` signs browsers in and out).
- The CSRF token of a session is an HMAC of its token's hash under the
  class's server secret (kept in the store, so every process agrees).
- The instructor key is printed in the instructor link (`host rotate-key`
  replaces it); a password (scrypt) may be set with `host set-password`.
  Both end every instructor session.
- Attempts at secrets are rate limited per client address (`RateLimiter`).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from attn_practice.grader.host.store.base import Learner, SessionKind, Store

SECRET_BYTES = 32
LEARNER_COOKIE = "attnp_learner"
TEACH_COOKIE = "attnp_teach"
CSRF_HEADER = "X-Attn-Token"
MIN_PASSWORD = 10


class Setting(str, enum.Enum):
    """Class settings kept in the store."""

    SERVER_SECRET = "server_secret"
    INSTRUCTOR_KEY = "instructor_key"
    PASSWORD_HASH = "password_hash"
    JOIN_CODE = "join_code"
    JOINING_OPEN = "joining_open"
    ASK_STUDENT_ID = "ask_student_id"


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def new_join_code() -> str:
    """Long enough not to be guessed (96 bits), short enough to read out."""
    return secrets.token_urlsafe(12)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=2 ** 14, r=8, p=1, dklen=32)
    return f"scrypt${salt.hex()}${digest.hex()}"


def password_ok(password: str, stored: str | None) -> bool:
    if not stored or not stored.startswith("scrypt$"):
        return False
    try:
        _, salt, _digest = stored.split("$")
        return hmac.compare_digest(hash_password(password, bytes.fromhex(salt)), stored)
    except ValueError:
        return False


def ensure_class_settings(store: Store, *, ask_student_id: bool | None = None) -> None:
    """Create the class's secrets on first start (kept on later starts, shared by processes)."""
    for key, make in ((Setting.SERVER_SECRET, new_secret), (Setting.INSTRUCTOR_KEY, new_secret),
                      (Setting.JOIN_CODE, new_join_code), (Setting.JOINING_OPEN, lambda: "1")):
        store.setting_or_set(key.value, make())  # two processes starting at once agree
    if ask_student_id is not None:
        store.set_setting(Setting.ASK_STUDENT_ID.value, "1" if ask_student_id else "0")


def rotate_instructor_key(store: Store) -> str:
    """A new instructor key (the old link stops working) and every instructor session ended."""
    key = new_secret()
    store.set_setting(Setting.INSTRUCTOR_KEY.value, key)
    store.end_sessions(SessionKind.INSTRUCTOR)
    return key


def set_instructor_password(store: Store, password: str) -> None:
    """Set the class password and end every instructor session (whoever knew the old one is out)."""
    store.set_setting(Setting.PASSWORD_HASH.value, hash_password(password))
    store.end_sessions(SessionKind.INSTRUCTOR)


@dataclass(frozen=True)
class ClassKeys:
    """The class's secrets as read from the store (re-read when the instructor changes one)."""

    server_secret: str
    instructor_key: str
    join_code: str
    joining_open: bool
    ask_student_id: bool
    password_hash: str | None

    @classmethod
    def load(cls, store: Store) -> ClassKeys:
        get = store.get_setting
        return cls(server_secret=get(Setting.SERVER_SECRET.value) or "",
                   instructor_key=get(Setting.INSTRUCTOR_KEY.value) or "",
                   join_code=get(Setting.JOIN_CODE.value) or "",
                   joining_open=get(Setting.JOINING_OPEN.value) != "0",
                   ask_student_id=get(Setting.ASK_STUDENT_ID.value) == "1",
                   password_hash=get(Setting.PASSWORD_HASH.value))

    def mac(self, purpose: str, value: str) -> str:
        return hmac.new(self.server_secret.encode(), f"{purpose}:{value}".encode("utf-8", "replace"),
                        hashlib.sha256).hexdigest()[:43]

    def learner_csrf(self, resume_secret: str) -> str:
        return self.mac("learner-csrf", hash_secret(resume_secret))

    def key_ok(self, key: str) -> bool:
        return bool(key) and hmac.compare_digest(key.encode("utf-8", "replace"),
                                                 self.instructor_key.encode())

    def join_ok(self, code: str) -> bool:
        return hmac.compare_digest(code.encode("utf-8", "replace"), self.join_code.encode())


def same(a: str, b: str) -> bool:
    return bool(a) and hmac.compare_digest(a.encode("utf-8", "replace"), b.encode("utf-8", "replace"))


def learner_for(store: Store, resume_secret: str | None) -> Learner | None:
    """The learner whose resume secret this is (cookie or link); None for anything else."""
    if not resume_secret or len(resume_secret) > 200:
        return None
    return store.learner_by_resume_hash(hash_secret(resume_secret))


class RateLimiter:
    """Token buckets per key (an address, a learner): `allow` spends one, or says how long to wait.

    In memory, per process: with several processes behind a balancer each
    allows its share, which bounds attempts all the same.
    """

    def __init__(self, burst: float, per_second: float, max_keys: int = 50_000):
        self.burst, self.rate, self.max_keys = burst, per_second, max_keys
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str) -> float:
        """0.0 when allowed (one token spent), else the seconds until the next token."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1:
                if len(self._buckets) >= self.max_keys:
                    self._buckets.clear()  # bounded memory; forgetting only ever lets more through
                self._buckets[key] = (tokens - 1, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1 - tokens) / self.rate

    def refund(self, key: str) -> None:
        """Give back a token spent on something that was not the asker's doing (a grader failure)."""
        with self._lock:
            if key in self._buckets:
                tokens, last = self._buckets[key]
                self._buckets[key] = (min(self.burst, tokens + 1), last)
