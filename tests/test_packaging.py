"""A non-editable install holds every module and data file the package needs.

`pyproject.toml` lists the packages by hand (the repository root is the
package, so setuptools cannot find them by itself). A subpackage or data file
missing from that list works in an editable install and breaks `pip install .`
for every learner, so the lists are checked against the tree here.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOT_SHIPPED = ("tests/", "bench/", "docs/", ".ci/", "build/", "dist/")


def _config() -> dict:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.splitlines() if not f.startswith(NOT_SHIPPED) and "/" in f]


def _package_of(path: str) -> str:
    return ".".join(["attn_practice", *Path(path).parent.parts])


def test_every_package_folder_is_listed():
    listed = set(_config()["packages"])
    packages = {_package_of(f) for f in _tracked() if f.endswith("/__init__.py")}
    assert packages - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_every_data_file_is_shipped():
    config = _config()
    listed = set(config["packages"])
    data = config.get("package-data", {})
    missing = []
    for f in _tracked():
        if f.endswith(".py") or f.startswith(("exercises/", "grader/", "reference/")) is False:
            continue
        # the nearest listed package above the file, and the file's path inside it
        parts = Path(f).parts
        for cut in range(len(parts) - 1, 0, -1):
            pkg = ".".join(["attn_practice", *parts[:cut]])
            if pkg in listed:
                inside = "/".join(parts[cut:])
                if not any(fnmatch.fnmatch(inside, pat) for pat in data.get(pkg, ())):
                    missing.append(f)
                break
    assert missing == [], "add these to [tool.setuptools.package-data] in pyproject.toml"
