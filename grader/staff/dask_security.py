"""Who may talk to the Dask cluster that grades a class: TLS with client certificates.

A Dask scheduler runs whatever its clients submit, as its workers' user
(root in CI). Unauthenticated, any local user who can reach the port could
run code as the grader, so:

- `--dask local` starts its LocalCluster on TLS with mutual authentication,
  using throwaway credentials made for that run (`temporary_security`): a
  fresh CA and one certificate/key it signs, in a 0700 folder of the
  grading user, each file 0600, removed when the cluster stops. Only a peer
  holding a certificate from that CA (the grader and its own workers) gets
  past the handshake.
- `--dask ADDRESS` connects with the security of `--dask-security FILE`
  (`load_security`), or else Dask's own configuration (the
  `distributed.comm.tls` settings, `DASK_DISTRIBUTED__COMM__TLS__...`).

Needs `cryptography` (the `dask` extra installs it) only for `local`.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The keys a `--dask-security` file may set: `distributed.Security`'s own keyword names.
SECURITY_KEYS = frozenset({
    "tls_ca_file", "tls_client_cert", "tls_client_key", "require_encryption", "tls_ciphers",
    "tls_min_version", "tls_max_version",
})
_PATH_KEYS = ("tls_ca_file", "tls_client_cert", "tls_client_key")


class SecurityError(RuntimeError):
    """A security configuration that cannot be used (missing, unsafe or malformed)."""


@dataclass(frozen=True)
class Credentials:
    """Where one run's throwaway CA certificate, certificate and key are."""

    folder: Path
    ca: Path
    cert: Path
    key: Path


def write_credentials(folder: Path) -> Credentials:
    """A new CA and one certificate/key it signs, written 0600 into `folder` (which must be 0700).

    One certificate serves every role (client, scheduler, workers): all of
    them are this one grading run. The CA's own key is never written.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(tz=datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "attn-practice throwaway grading CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "attn-practice grading")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    out = Credentials(folder, folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    _write_private(out.ca, ca.public_bytes(pem))
    _write_private(out.cert, cert.public_bytes(pem))
    _write_private(out.key, key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    return out


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def security_for(creds: Credentials) -> Any:
    """`distributed.Security` requiring TLS, every role authenticated by `creds`' CA."""
    from distributed import Security

    ca, cert, key = str(creds.ca), str(creds.cert), str(creds.key)
    return Security(require_encryption=True, tls_ca_file=ca,
                    tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key,
                    tls_worker_cert=cert, tls_worker_key=key)


@contextlib.contextmanager
def temporary_security() -> Iterator[Any]:
    """Throwaway credentials for one LocalCluster: a 0700 folder, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="attnp-dask-tls-"))  # mkdtemp: 0700, ours
    try:
        os.chmod(folder, 0o700)
        try:
            creds = write_credentials(folder)
        except ImportError as exc:
            raise SecurityError("--dask local needs the 'cryptography' package for its TLS credentials: "
                                "pip install '.[dask]' in the attn-practice checkout") from exc
        yield security_for(creds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def load_security(path: Path) -> Any:
    """`distributed.Security` from a `--dask-security` file (YAML or JSON).

    Keys are `Security`'s own: `tls_ca_file`, `tls_client_cert`,
    `tls_client_key` (paths, relative to the file), `require_encryption`,
    `tls_ciphers`, `tls_min_version`, `tls_max_version`. The key must be
    readable by its owner only, as Dask itself would not check.
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SecurityError(f"cannot read the Dask security file {path}: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise SecurityError(f"{path}: expected a mapping of Security settings "
                            f"({', '.join(sorted(SECURITY_KEYS))})")
    unknown = sorted(str(k) for k in data if k not in SECURITY_KEYS)
    if unknown:
        raise SecurityError(f"{path}: unknown setting(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(sorted(SECURITY_KEYS))}")
    kwargs: dict[str, Any] = dict(data)
    for key in _PATH_KEYS:
        if key in kwargs:
            p = Path(str(kwargs[key])).expanduser()
            p = p if p.is_absolute() else Path(path).resolve().parent / p
            if not p.is_file():
                raise SecurityError(f"{path}: {key} {p} is not a file")
            kwargs[key] = str(p)
    if "tls_client_key" in kwargs:
        mode = os.stat(kwargs["tls_client_key"]).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SecurityError(f"{path}: the key {kwargs['tls_client_key']} is readable by others "
                                f"(mode {stat.S_IMODE(mode):04o}): chmod 600 it")
    from distributed import Security

    return Security(**kwargs)


__all__ = ["Credentials", "SecurityError", "load_security", "security_for", "temporary_security",
           "write_credentials"]
