"""The secret `grade` draws its generated examples from (CONTRACT 4.3).

`check` shows the same public examples on every machine, so a submission
could carry a table of them and answer without computing. `grade` seeds
every Hypothesis test from a secret instead: the environment variable a
course names (`secret_env`, default ATTN_PRACTICE_SECRET), else one random
secret per installation, created on first use in the user's data folder
(atomically, mode 0600, so concurrent batch workers all read the same one).
The same secret and submission always give the same report. Only a hash of
the secret (`secret_tag`) is ever written into a cache or example store.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path

from attn_practice.grader.course import DEFAULT_SECRET_ENV as DEFAULT_ENV

SECRET_FILE = "grading-secret"


class SecretError(RuntimeError):
    """No secret could be read or created (e.g. a read-only home and no env variable)."""


def new_secret() -> str:
    """A fresh random secret (e.g. for a Gradescope bundle's environment)."""
    return secrets.token_hex(32)


def data_dir() -> Path:
    """`$XDG_DATA_HOME/attn-practice`, else ~/.local/share/attn-practice."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "attn-practice"


def installation_secret(folder: Path | None = None) -> str:
    """This installation's secret, created on first use (0600; the first writer wins)."""
    folder = folder or data_dir()
    path = folder / SECRET_FILE
    existing = _read(path)
    if existing:
        return existing
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{SECRET_FILE}.", suffix=".tmp")  # 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(new_secret() + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # atomic, and never replaces a secret another process made
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise SecretError(f"cannot create the grading secret in {folder}: {exc.strerror or exc}; "
                          f"set {DEFAULT_ENV} instead") from None
    found = _read(path)
    if not found:
        raise SecretError(f"the grading secret in {path} is empty or unreadable; delete it or set {DEFAULT_ENV}")
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def grading_secret(env_name: str | None = None) -> str:
    """The secret for `grade`: `$env_name` (default ATTN_PRACTICE_SECRET) if set, else the installation's."""
    value = os.environ.get(env_name or DEFAULT_ENV, "")
    return value if value else installation_secret()


def submission_salt(secret: str, files: dict[str, bytes]) -> int:
    """The salt a submission's generated inputs are rebuilt under (see `strategies.salted`).

    From the secret and every byte the sandbox may import (names included),
    so the inputs a version of a submission sees say nothing about the
    inputs of the next version: a table of harvested answers answers nothing.
    """
    h = hashlib.sha256(f"attn-practice-salt/1|{secret}|".encode())
    for name in sorted(files):
        data = files[name]
        h.update(len(name.encode()).to_bytes(8, "big") + name.encode("utf-8", "surrogateescape"))
        h.update(len(data).to_bytes(8, "big") + data)
    return int.from_bytes(h.digest()[:8], "big")


def secret_tag(secret: str | None) -> str:
    """What caches and example stores are keyed by: a hash, never the secret itself."""
    if secret is None:
        return "public"
    return hashlib.sha256(f"attn-practice-secret/1|{secret}".encode()).hexdigest()[:32]
