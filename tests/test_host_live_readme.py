"""The README as a newcomer reads it (issue 37 item 7): the two set-up commands first, install
lines that work from a checkout, an example course file that exists or is explained, and the
staff, hosting and deployment guides in docs/, one file each, linked from the README.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = ("docs/staff.md", "docs/hosting.md", "docs/deployment.md")


def _commands(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_the_two_set_up_commands_come_first_unchanged():
    first = _commands(README)[:2]
    assert first == ["pip install . && attn-practice start\n", "pip install -e '.[test]' && pytest\n"]


def test_install_lines_work_from_a_checkout():
    """The package is on no index: `pip install 'attn-practice[host]'` fails on a fresh machine."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for text in [README, *((ROOT / g).read_text(encoding="utf-8") for g in GUIDES)]:
        assert not re.search(r"attn-practice\[[a-z]", text), "an install line for a package on no index"
        for extra in re.findall(r"pip install (?:-e )?'\.\[(\w+)\]'", text):
            assert extra in extras
    assert "pip install '.[host]'" in README and "pip install '.[dask]'" in README


def test_the_example_course_file_is_made_or_explained():
    for text in (README, (ROOT / "docs/hosting.md").read_text(encoding="utf-8")):
        for course in re.findall(r"--course (\S+\.yaml)", text):
            folder = course.rsplit("/", 1)[0] if "/" in course else ""
            assert f"course init {folder}" in text or "course.yaml" in text and "optional" in text, course


def test_the_guides_live_in_docs_and_are_linked():
    assert len(README.splitlines()) < 400, "the README grew back into the guides"
    for guide in GUIDES:
        assert (ROOT / guide).exists(), guide
        assert f"]({guide})" in README, f"{guide} is not linked from the README"
    for other in ("docs/handins.md", "docs/lti.md", "docs/hosting-security.md", "docs/report-schema.md"):
        assert f"]({other})" in README
    assert "## Hosting a class" not in README and "## Deploying past one machine" not in README
    assert "### Security: what the sandbox guarantees" not in README


def test_links_between_the_guides_resolve():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+\.(?:md|png))\)", text):
            if target.startswith("http"):
                continue
            resolved = (path.parent / target).resolve()
            if target.endswith(("handins.md", "lti.md", "hosting-security.md")) and not resolved.exists():
                continue  # written by their own issues; the README links them already
            assert resolved.exists(), f"{path.name} links {target}, which does not exist"
