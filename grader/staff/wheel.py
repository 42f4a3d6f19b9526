"""A wheel of the running grader, and its dependencies pinned, for CI set-ups.

attn-practice is on no package index, so CI installs the very grader that
wrote its configuration: `grader_wheel` assembles a wheel from the installed
package's own files and metadata (an editable install from the source tree
and a normal install give the same wheel contents), and `pinned_requirements`
lists every dependency, transitively, at the version installed here.

The wheel is built by hand (it is a zip with a `.dist-info`; PEP 427) rather
than by `pip wheel`, which would need the source tree and a build backend that
a normal install does not have. Same files in, same bytes out.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import io
import os
import re
import zipfile
from pathlib import Path

from attn_practice.grader.paths import PACKAGE_ROOT

DIST_NAME = "attn-practice"
PACKAGE = "attn_practice"
#: Top-level entries of a source tree (editable install) that are not the package.
_NOT_PACKAGE = {"tests", "bench", "build", "dist", "docs", "pyproject.toml", "setup.py", "setup.cfg"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".whl", ".bak")


def _distribution() -> metadata.Distribution:
    """The installed distribution: its `.dist-info`, never a build's `.egg-info` in the cwd.

    Run from a source checkout, `sys.path[0]` is the cwd, and a leftover
    `attn_practice.egg-info` there (no METADATA file) would otherwise give the
    wheel no dependencies: a bundle whose `setup.sh` installs no click, numpy...
    """
    found = list(metadata.distributions(name=DIST_NAME))
    for dist in found:
        if dist.read_text("METADATA"):
            return dist
    if found:
        return found[0]
    return metadata.distribution(DIST_NAME)


def _version() -> str:
    """The installed version, as a wheel file name spells it."""
    return re.sub(r"[^\w.+]", "_", _distribution().version)


def wheel_name() -> str:
    return f"{PACKAGE}-{_version()}-py3-none-any.whl"


def package_files(root: Path = PACKAGE_ROOT) -> list[Path]:
    """The installed package's files, relative to its root (no caches, no tests, no venv)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel = here.relative_to(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                         and not d.endswith((".egg-info", ".dist-info"))
                         and not (rel == Path(".") and d in _NOT_PACKAGE)
                         and not (here / d / "pyvenv.cfg").exists())
        for name in sorted(files):
            if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                continue
            if rel == Path(".") and name in _NOT_PACKAGE:
                continue
            out.append(rel / name)
    return out


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def grader_wheel() -> tuple[str, bytes]:
    """(file name, bytes) of a wheel holding the running grader."""
    dist = _distribution()
    info = f"{PACKAGE}-{_version()}.dist-info"
    entries: list[tuple[str, bytes]] = []
    for rel in package_files():
        entries.append((f"{PACKAGE}/{rel.as_posix()}", (PACKAGE_ROOT / rel).read_bytes()))
    meta = dist.read_text("METADATA") or f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: {dist.version}\n"
    entries.append((f"{info}/METADATA", meta.encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: attn-practice\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    points = dist.read_text("entry_points.txt")
    if points:
        entries.append((f"{info}/entry_points.txt", points.encode()))
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in entries)
    record += f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    return wheel_name(), buf.getvalue()


def pinned_requirements() -> list[str]:
    """`name==version` for every dependency of the grader (transitively), as installed here."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    env = {**default_environment(), "extra": ""}
    pins: dict[str, str] = {}
    queue = list(_distribution().requires or [])
    while queue:
        req = Requirement(queue.pop(0))
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in pins or name == DIST_NAME:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        pins[name] = dist.version
        for sub in dist.requires or []:
            queue.append(sub)
        for extra in req.extras:
            for sub in dist.requires or []:
                r = Requirement(sub)
                if r.marker is not None and r.marker.evaluate({**env, "extra": extra}) \
                        and not r.marker.evaluate(env):
                    queue.append(f"{r.name}{'[' + ','.join(r.extras) + ']' if r.extras else ''}"
                                 f"{r.specifier}")
    return [f"{n}=={v}" for n, v in sorted(pins.items())]


def constraints_text() -> str:
    return ("# The grader's dependencies at the versions it was tested with "
            "(written by attn-practice).\n" + "".join(f"{p}\n" for p in pinned_requirements()))


#: The Python minor versions a Gradescope image may have; the bundle has constraints for each.
SUPPORTED_MINORS = ("3.10", "3.11", "3.12", "3.13")


def _running_minor() -> str:
    import sys

    return f"{sys.version_info.major}.{sys.version_info.minor}"


def constraints_for(minor: str) -> str:
    """Constraints that resolve on Python `minor`: the exact pins on the minor they were
    tested on (this one), elsewhere each dependency below its next major version.

    An exact pin can be impossible on another minor (NumPy 2.3 needs Python
    3.11+); a range lets pip take the newest release that supports it, never a
    new major version that could change behaviour.
    """
    head = f"# The grader's dependencies for Python {minor} (written by attn-practice).\n"
    if minor == _running_minor():
        return head + "".join(f"{p}\n" for p in pinned_requirements())
    lines = []
    for pin in pinned_requirements():
        name, version = pin.split("==", 1)
        major = re.match(r"\d+", version)
        lines.append(f"{name}<{int(major.group()) + 1}\n" if major else f"{name}\n")
    return head + "# (ranges: the exact pins were tested on another Python)\n" + "".join(lines)
