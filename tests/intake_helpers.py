"""Building submissions as students hand them in (zips good and hostile, notebooks), for the intake tests."""

from __future__ import annotations

import io
import json
import stat
import struct
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()
SHAPES = ROOT / "tests" / "submissions"
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]


def solved(folder: Path, body: str = REFERENCE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for stem in CORE:
        (folder / f"{stem}.py").write_text(body)
    return folder


def zip_of(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, (2024, 5, 1, 12, 0, 0)), data)
    return path


def solved_members(prefix: str = "") -> dict[str, bytes | str]:
    return {f"{prefix}{stem}.py": REFERENCE for stem in CORE}


def slip_zip(path: Path, name: str = "../../escaped_by_zip.py") -> Path:
    return zip_of(path, {**solved_members(), name: "print('escaped')\n"})


def symlink_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for n, d in solved_members().items():
            z.writestr(n, d)
        info = zipfile.ZipInfo("step6_masked.py")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    return path


def ratio_bomb(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in solved_members().items():
            z.writestr(n, d)
        z.writestr("data.bin", b"\0" * (24 << 20))
    return path


def many_members(path: Path, n: int = 10_001) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for n_, d in solved_members().items():
            z.writestr(n_, d)
        for i in range(n):
            z.writestr(f"junk/{i}.txt", b"")
    return path


def _patch_sizes(data: bytes, *, file_size: int, compress_size: int | None = None,
                 skip: int = 0) -> bytes:
    """Rewrite the declared sizes of members (after the first `skip`) in the central directory."""
    buf = bytearray(data)
    pos, seen = 0, 0
    while (pos := buf.find(b"PK\x01\x02", pos)) >= 0:
        if seen >= skip:
            if compress_size is not None:
                struct.pack_into("<I", buf, pos + 20, compress_size)
            struct.pack_into("<I", buf, pos + 24, file_size)
        seen += 1
        pos += 4
    return bytes(buf)


def declared_2gib(path: Path) -> Path:
    """A member whose header declares 2 GiB (the bytes are small): refused before reading."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in solved_members().items():
            z.writestr(n, d)
        z.writestr("huge.bin", b"x" * 1000)
    path.write_bytes(_patch_sizes(b.getvalue(), file_size=2 << 30, skip=len(CORE)))
    return path


def total_bomb(path: Path) -> Path:
    """Twenty members each declaring 10 MiB at a modest ratio: 200 MiB in all, over the total cap."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
        for n, d in solved_members().items():
            z.writestr(n, d)
        for i in range(20):
            z.writestr(f"part{i}.bin", b"y" * 1000)
    path.write_bytes(_patch_sizes(b.getvalue(), file_size=10 << 20, compress_size=1 << 20, skip=len(CORE)))
    return path


def notebook(cells: list[str], path: Path) -> Path:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": c.splitlines(keepends=True)} for c in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path
