"""CI configuration that grades with attn-practice: GitHub Classroom, GitLab, Gradescope.

Pure text builders plus one careful file writer. The generated files are
meant to be read and edited by instructors, so they are written as commented
templates; every value put into them (the pip package spec) is validated and
shell-quoted, and sits where YAML reads it literally.
"""

from __future__ import annotations

import io
import json
import shlex
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from attn_practice.grader.atomic import write_atomic

DEFAULT_PACKAGE = "attn-practice"
PYTHON_VERSION = "3.11"
GITHUB_WORKFLOW = Path(".github/workflows/classroom.yml")
GITLAB_CI = Path(".gitlab-ci.yml")
#: Gradescope's own limit is 10 minutes and a timeout there loses everything,
#: so the grader is stopped well before it and a results file is still written.
GRADESCOPE_TIME_LIMIT = 540
GRADESCOPE_VENV = "/opt/attn-practice"
COURSE_NAME = "course.yaml"
_BUNDLED_SUFFIXES = (".whl", ".tar.gz", ".zip")


class WouldOverwrite(FileExistsError):
    """The target exists with other content and `force` was not given."""


def check_package(spec: str) -> str:
    """A pip requirement or path, refused if it could break out of a script line."""
    spec = spec.strip()
    if not spec:
        raise ValueError("the package spec is empty")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in spec):
        raise ValueError("the package spec must be one line without control characters")
    return spec


def github_workflow(package: str = DEFAULT_PACKAGE, python: str = PYTHON_VERSION) -> str:
    """`.github/workflows/classroom.yml` for GitHub Classroom's grading reporter."""
    pip = shlex.quote(check_package(package))
    return f"""\
# GitHub Classroom autograding with attn-practice (written by `attn-practice ci github`).
# The "attn-practice" step grades the repository, prints annotations on the
# learner's own lines, and sets its `result` output itself; the reporter turns
# that into the points GitHub Classroom records.
name: Autograding Tests
"on":
  - push
  - workflow_dispatch
  - repository_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    # Do not grade the starter commit GitHub Classroom makes.
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: 15
    steps:
      - name: Checkout code
        uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: {json.dumps(python)}
      - name: Install attn-practice
        run: |
          python -m pip install --upgrade pip
          python -m pip install {pip}
      - name: Grade with attn-practice
        id: attn-practice
        run: |
          attn-practice grade . --format github
      - name: Autograding Reporter
        # Report even when grading failed a step (the step then exits 1).
        if: ${{{{ !cancelled() && steps.attn-practice.outputs.result != '' }}}}
        uses: education/autograding-grading-reporter@v1
        env:
          ATTN-PRACTICE_RESULTS: "${{{{steps.attn-practice.outputs.result}}}}"
        with:
          runners: attn-practice
"""


def gitlab_ci(package: str = DEFAULT_PACKAGE, python: str = PYTHON_VERSION) -> str:
    """`.gitlab-ci.yml` whose JUnit report GitLab shows in merge requests."""
    install = json.dumps(f"python -m pip install {shlex.quote(check_package(package))}")
    image = json.dumps(f"python:{python}")
    return f"""\
# GitLab CI grading with attn-practice (written by `attn-practice ci gitlab`).
# The JUnit report appears in the pipeline's Tests tab and in merge requests.
attn-practice:
  image: {image}
  script:
    - {install}
    - "attn-practice grade . --format junit --out report.xml"
  artifacts:
    when: always
    reports:
      junit: report.xml
"""


def _bundled(package: str) -> Path | None:
    """A local wheel/sdist file to ship inside the Gradescope zip, if `package` is one."""
    path = Path(package).expanduser()
    if path.is_file() and path.name.endswith(_BUNDLED_SUFFIXES):
        return path
    return None


def gradescope_setup(package: str = DEFAULT_PACKAGE) -> str:
    """`setup.sh`: Python if needed, then attn-practice in its own virtualenv.

    A virtualenv sidesteps "externally managed" system Pythons on newer images.
    """
    spec = check_package(package)
    bundled = _bundled(spec)
    target = f'"$HERE"/{shlex.quote(bundled.name)}' if bundled else shlex.quote(spec)
    return f"""\
#!/usr/bin/env bash
# Gradescope runs this once, as root, while building the autograder image.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
VENV={GRADESCOPE_VENV}
export DEBIAN_FRONTEND=noninteractive
if ! command -v python3 >/dev/null 2>&1; then
  apt-get update
  apt-get install -y python3 python3-venv python3-pip
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "attn-practice needs Python 3.10 or newer: choose a newer base image (Ubuntu 22.04+)." >&2
  exit 1
fi
if ! python3 -m venv "$VENV"; then
  apt-get update
  apt-get install -y python3-venv python3-pip
  python3 -m venv --clear "$VENV"
fi
"$VENV/bin/python" -m pip install --upgrade pip
"$VENV/bin/python" -m pip install {target}
"$VENV/bin/attn-practice" --help >/dev/null
"""


def gradescope_run(course: bool = False) -> str:
    """`run_autograder`: grade the submission, and always leave a results.json.

    It exits 0 whatever happened: Gradescope shows a results file, but answers
    a non-zero exit or a missing file with "The autograder failed to execute
    correctly". AUTOGRADER_ROOT (default /autograder) lets it run elsewhere.
    """
    course_arg = f' \\\n  --course "${{AUTOGRADER_ROOT:-/autograder}}/source/{COURSE_NAME}"' if course else ""
    return f"""\
#!/usr/bin/env bash
# Gradescope runs this for every submission (written by `attn-practice ci gradescope`).
RESULTS="${{AUTOGRADER_ROOT:-/autograder}}/results/results.json"
export PATH="{GRADESCOPE_VENV}/bin:$PATH"
mkdir -p "${{AUTOGRADER_ROOT:-/autograder}}/results"
rm -f "$RESULTS"
timeout --kill-after=10 "${{ATTN_PRACTICE_TIME_LIMIT:-{GRADESCOPE_TIME_LIMIT}}}" \\
  attn-practice grade "${{AUTOGRADER_ROOT:-/autograder}}/submission" \\
  --format gradescope --out "${{AUTOGRADER_ROOT:-/autograder}}/results/results.json"{course_arg}
status=$?
echo "attn-practice grade exited with status $status"
# 0 and 1 mean "graded" (1: some step failed); anything else is the grader's
# own failure, and whatever file exists then is not to be trusted.
if [ "$status" -gt 1 ] || [ ! -s "$RESULTS" ]; then
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    why="ran out of time"
  else
    why="stopped with status $status"
  fi
  printf '{{"score": 0, "output": "The autograder %s before it could grade this submission. This is not a verdict on your code: please tell your instructor.", "tests": []}}\\n' "$why" > "$RESULTS"
fi
exit 0
"""


def _zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.create_system = 3  # Unix, so unzip honours the mode bits below
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def gradescope_zip(package: str = DEFAULT_PACKAGE, course: Path | None = None) -> bytes:
    """The autograder bundle: `setup.sh` and `run_autograder` at the root (both 0755).

    The same inputs give the same bytes (fixed timestamps), so rebuilding a
    bundle that did not change is visible as "unchanged".
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(_zip_entry("setup.sh", 0o755), gradescope_setup(package).encode())
        zf.writestr(_zip_entry("run_autograder", 0o755), gradescope_run(course is not None).encode())
        if course is not None:
            zf.writestr(_zip_entry(COURSE_NAME, 0o644), Path(course).read_bytes())
        bundled = _bundled(check_package(package))
        if bundled is not None:
            zf.writestr(_zip_entry(bundled.name, 0o644), bundled.read_bytes())
    return buf.getvalue()


@dataclass(frozen=True)
class Written:
    """What `install_file` did."""

    path: Path
    action: str  # "created" | "replaced" | "unchanged"
    backup: Path | None = None


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak{n}")
        n += 1
    return candidate


def install_file(path: Path, data: str | bytes, *, force: bool = False, mode: int = 0o644) -> Written:
    """Write `data` to `path`, never silently replacing someone's file.

    Same content already there: nothing happens. Other content: refused with
    WouldOverwrite unless `force`, and then the old file is first copied to
    `<name>.bak` (or `.bak1`, `.bak2`, ...).
    """
    blob = data.encode() if isinstance(data, str) else data
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    if path.exists():
        if path.read_bytes() == blob:
            return Written(path, "unchanged")
        if not force:
            raise WouldOverwrite(f"{path} already exists; use --force to replace it (a backup is kept)")
        backup = _backup_path(path)
        shutil.copy2(path, backup)
        write_atomic(path, blob, mode=mode)
        return Written(path, "replaced", backup)
    write_atomic(path, blob, mode=mode)
    return Written(path, "created")
