"""CI configuration that grades with attn-practice: GitHub Classroom, GitLab, Gradescope.

Pure text builders plus one careful file writer. attn-practice is on no
package index, so by default every set-up installs the very grader that wrote
it: a wheel of the running package (`wheel.grader_wheel`) with its
dependencies pinned to the versions installed here (`constraints.txt`), on
the same Python minor version. `--package SPEC` installs something else
instead (validated: one line, no control characters; shell-quoted).

Private suites never go into a student's repository: for GitHub the workflow
checks out a private repository with a token secret, for GitLab the job
clones a private project with the job token; the Gradescope bundle is never
seen by students, so it carries them. The generated files are commented
templates meant to be read and edited by instructors.
"""

from __future__ import annotations

import io
import secrets
import shlex
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from attn_practice.grader.atomic import write_atomic, write_output
from attn_practice.grader.staff.yaml_values import no_expression, yaml_quote

#: The Python the grader runs on here: the pins in constraints.txt are for it.
PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
DEFAULT_PACKAGE = ""  # empty: the bundled wheel of the running grader
GITHUB_WORKFLOW = Path(".github/workflows/classroom.yml")
GITLAB_CI = Path(".gitlab-ci.yml")
TEMPLATE_DIR = Path(".attn-practice")  # in the student template: wheel, pins, public course file
PRIVATE_CHECKOUT = ".attn-practice-private"
PRIVATE_REPO_VAR = "${{ vars.ATTN_PRACTICE_PRIVATE_REPO }}"
TOKEN_SECRET = "ATTN_PRACTICE_TOKEN"
GITLAB_PRIVATE_VAR = "ATTN_PRACTICE_PRIVATE_PROJECT"
#: Gradescope's own limit is 10 minutes and a timeout there loses everything,
#: so the grader is stopped well before it and a results file is still written.
GRADESCOPE_TIME_LIMIT = 540
GRADESCOPE_VENV = "/opt/attn-practice"
COURSE_NAME = "course.yaml"
CONSTRAINTS = "constraints.txt"
SECRET_FILE = "grading_secret"
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
    if spec.startswith("-"):
        raise ValueError("the package spec must be a requirement or a path, not a pip option")
    return spec


@dataclass(frozen=True)
class Setup:
    """What a generated CI set-up installs and grades with.

    package: a pip spec, or "" for the wheel bundled beside it (`wheel` names it).
    course: where the course file is, relative to the repository root ("" for none).
    private: the course has private suites, fetched from a private repository.
    """

    package: str = ""
    wheel: str = ""
    course: str = ""
    private: bool = False
    private_repo: str = PRIVATE_REPO_VAR
    secret_env: str = "ATTN_PRACTICE_SECRET"
    python: str = PYTHON_VERSION

    def pip_install(self) -> str:
        if self.package:
            return f"python -m pip install {shlex.quote(check_package(self.package))}"
        return (f"python -m pip install -c {TEMPLATE_DIR}/{CONSTRAINTS} "
                f"{TEMPLATE_DIR}/{shlex.quote(self.wheel)}")

    def grade(self, fmt: str, out: str = "") -> str:
        cmd = f"attn-practice grade . --format {fmt}"
        if out:
            cmd += f" --out {out}"
        if self.course:
            cmd += f" --course {shlex.quote(self.course)}"
        return cmd


def github_workflow(setup: Setup | str | None = None, python: str = PYTHON_VERSION) -> str:
    """`.github/workflows/classroom.yml` for GitHub Classroom's grading reporter."""
    if not isinstance(setup, Setup):
        setup = Setup(package=check_package(setup) if setup else "", wheel="" if setup else
                      _default_wheel(), python=python)
    cache_path = f"{TEMPLATE_DIR}/{CONSTRAINTS}" if not setup.package else str(GITHUB_WORKFLOW)
    repo = (setup.private_repo if setup.private_repo == PRIVATE_REPO_VAR
            else no_expression(setup.private_repo, "the private repository"))
    private = ""
    if setup.private:
        private = f"""\
      # Private tests live in a private repository, never in the student's:
      # set the organisation variable ATTN_PRACTICE_PRIVATE_REPO (owner/name)
      # and the secret {TOKEN_SECRET} (a fine-grained token that can read it).
      - name: Check out the private tests
        uses: actions/checkout@v4
        with:
          repository: {yaml_quote(repo)}
          token: ${{{{ secrets.{TOKEN_SECRET} }}}}
          path: {PRIVATE_CHECKOUT}
          persist-credentials: false
"""
    return f"""\
# GitHub Classroom autograding with attn-practice (written by `attn-practice ci github`).
# The "attn-practice" step grades the repository, prints annotations on the
# learner's own lines, and sets its `result` output itself; the reporter turns
# that into the points GitHub Classroom records.
# Students control this file in their own repository: see "Commands for course
# staff and CI" in the attn-practice README for what they can and cannot change.
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
{private}      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: {yaml_quote(setup.python)}
          cache: pip
          cache-dependency-path: {yaml_quote(cache_path)}
      - name: Install attn-practice
        run: {yaml_quote(no_expression(setup.pip_install(), "the package"))}
      - name: Grade with attn-practice
        id: attn-practice
        env:
          # The secret that seeds generated inputs: set it once for the organisation.
          {setup.secret_env}: ${{{{ secrets.{setup.secret_env} }}}}
        run: {yaml_quote(no_expression(setup.grade("github"), "the course file's path"))}
      - name: Autograding Reporter
        # Report even when grading failed a step (the step then exits 1).
        if: ${{{{ !cancelled() && steps.attn-practice.outputs.result != '' }}}}
        uses: education/autograding-grading-reporter@v1
        env:
          ATTN-PRACTICE_RESULTS: "${{{{steps.attn-practice.outputs.result}}}}"
        with:
          runners: attn-practice
"""


def gitlab_ci(setup: Setup | str | None = None, python: str = PYTHON_VERSION) -> str:
    """`.gitlab-ci.yml` whose JUnit report GitLab shows in merge requests."""
    if not isinstance(setup, Setup):
        setup = Setup(package=check_package(setup) if setup else "", wheel="" if setup else
                      _default_wheel(), python=python)
    script = [setup.pip_install()]
    if setup.private:
        script.append(f'git clone --depth 1 "https://gitlab-ci-token:${{CI_JOB_TOKEN}}@'
                      f'${{CI_SERVER_HOST}}/${{{GITLAB_PRIVATE_VAR}}}.git" {PRIVATE_CHECKOUT}')
    script.append(setup.grade("junit", "report.xml"))
    lines = "\n".join(f"    - {yaml_quote(s)}" for s in script)
    private = ""
    if setup.private:
        private = f"""\
# Private tests are cloned from a private project named by the CI/CD variable
# {GITLAB_PRIVATE_VAR} (group/project); allow this project's CI job token in
# that project's settings (CI/CD > Job token permissions).
"""
    return f"""\
# GitLab CI grading with attn-practice (written by `attn-practice ci gitlab`).
# The JUnit report appears in the pipeline's Tests tab and in merge requests.
# The grading secret is the CI/CD variable {setup.secret_env} (masked, protected).
{private}attn-practice:
  image: {yaml_quote(f"python:{setup.python}")}
  variables:
    PIP_CACHE_DIR: "$CI_PROJECT_DIR/.cache/pip"
  cache:
    key: attn-practice-pip
    paths:
      - .cache/pip
  script:
{lines}
  artifacts:
    when: always
    reports:
      junit: report.xml
"""


def _default_wheel() -> str:
    from attn_practice.grader.staff.wheel import wheel_name

    return wheel_name()


def template_files(course: Path | None, *, package: str = "", private_repo: str = PRIVATE_REPO_VAR,
                   ) -> tuple[Setup, dict[Path, bytes]]:
    """The set-up for a student template, and the files beside the workflow it needs.

    Without `package`, the wheel and constraints go into `.attn-practice/`. A
    course without private suites is copied there too (students can read it);
    with private suites, the course file is expected at the root of the private
    checkout and nothing of it is written into the template.
    """
    from attn_practice.grader.course import load_course
    from attn_practice.grader.staff.wheel import constraints_text, grader_wheel

    files: dict[Path, bytes] = {}
    wheel = ""
    if not package:
        wheel, blob = grader_wheel()
        files[TEMPLATE_DIR / wheel] = blob
        files[TEMPLATE_DIR / CONSTRAINTS] = constraints_text().encode()
    course_path, private, secret_env = "", False, "ATTN_PRACTICE_SECRET"
    if course is not None:
        loaded = load_course(course)
        secret_env = loaded.secret_env
        if loaded.extra_suites:
            private = True
            course_path = f"{PRIVATE_CHECKOUT}/{course.name}"
        else:
            files[TEMPLATE_DIR / COURSE_NAME] = course.read_bytes()
            course_path = f"{TEMPLATE_DIR}/{COURSE_NAME}"
    return Setup(package=package, wheel=wheel, course=course_path, private=private,
                 private_repo=private_repo, secret_env=secret_env), files


# -- Gradescope ---------------------------------------------------------------------------


def _bundled(package: str) -> Path | None:
    """A local wheel/sdist file to ship inside the Gradescope zip, if `package` is one."""
    path = Path(package).expanduser()
    if path.is_file() and path.name.endswith(_BUNDLED_SUFFIXES):
        return path
    return None


def gradescope_setup(package: str = DEFAULT_PACKAGE, python: str = PYTHON_VERSION) -> str:
    """`setup.sh`: Python `python` if needed, then attn-practice in its own virtualenv.

    Without a package spec it installs the bundled wheel with the bundled
    constraints. A virtualenv sidesteps "externally managed" system Pythons.
    ATTN_PRACTICE_VENV (default /opt/attn-practice) says where.
    """
    if package:
        spec = check_package(package)
        bundled = _bundled(spec)
        target = f'"$HERE"/{shlex.quote(bundled.name)}' if bundled else shlex.quote(spec)
    else:
        target = f'-c "$CONSTRAINTS" "$HERE"/{shlex.quote(_default_wheel())}'
    return f"""\
#!/usr/bin/env bash
# Gradescope runs this once, as root, while building the autograder image.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
VENV="${{ATTN_PRACTICE_VENV:-{GRADESCOPE_VENV}}}"
export DEBIAN_FRONTEND=noninteractive
# Any Python 3.10 to 3.13 will do (the bundle has constraints for each); the
# exact pins were tested on {python}, so it comes first when the image has it.
supported() {{ "$1" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; }}
PY=""
for candidate in python{python} python3 python3.13 python3.12 python3.11 python3.10; do
  if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
    PY="$candidate"
    break
  fi
done
if [ -z "$PY" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update && apt-get install -y python3 python3-venv || true
  if supported python3; then PY=python3; fi
fi
if [ -z "$PY" ]; then
  echo "error: attn-practice needs Python 3.10 to 3.13; none was found" >&2
  exit 1
fi
MINOR="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
CONSTRAINTS="$HERE/constraints-$MINOR.txt"
if [ ! -f "$CONSTRAINTS" ]; then CONSTRAINTS="$HERE/{CONSTRAINTS}"; fi
echo "attn-practice: installing on $("$PY" --version 2>&1) with $(basename "$CONSTRAINTS")"
if ! "$PY" -m venv "$VENV"; then
  apt-get update
  apt-get install -y python3-venv python3-pip
  "$PY" -m venv --clear "$VENV"
fi
"$VENV/bin/python" -m pip install {target}
"$VENV/bin/attn-practice" --help >/dev/null
"""


def gradescope_run(course: bool = False, secret_env: str = "ATTN_PRACTICE_SECRET") -> str:
    """`run_autograder`: grade the submission, and always leave a results.json.

    It exits 0 whatever happened: Gradescope shows a results file, but answers
    a non-zero exit or a missing file with "The autograder failed to execute
    correctly". AUTOGRADER_ROOT (default /autograder) and ATTN_PRACTICE_VENV
    (default /opt/attn-practice) let it run elsewhere.
    """
    root = "${AUTOGRADER_ROOT:-/autograder}"
    course_arg = f' \\\n  --course "{root}/source/{COURSE_NAME}"' if course else ""
    return f"""\
#!/usr/bin/env bash
# Gradescope runs this for every submission (written by `attn-practice ci gradescope`).
RESULTS="{root}/results/results.json"
export PATH="${{ATTN_PRACTICE_VENV:-{GRADESCOPE_VENV}}}/bin:$PATH"
# The grading secret that seeds generated inputs ships in the bundle (never seen by students).
if [ -f "{root}/source/{SECRET_FILE}" ]; then
  {secret_env}="$(cat "{root}/source/{SECRET_FILE}")"
  export {secret_env}
fi
mkdir -p "{root}/results"
rm -f "$RESULTS"
timeout --kill-after=10 "${{ATTN_PRACTICE_TIME_LIMIT:-{GRADESCOPE_TIME_LIMIT}}}" \\
  attn-practice grade "{root}/submission" \\
  --format gradescope --out "{root}/results/results.json"{course_arg}
status=$?
echo "attn-practice grade exited with status $status"
# 0 and 1 mean "graded" (1: some step failed). 3 with a results file: graded, but
# the grader failed on some step, and the file says which, never as a verdict.
# Anything else is the grader's own failure and whatever file exists is not
# trusted; why is in this log (for staff: private test names stay out of it).
if [ "$status" -eq 3 ] && [ -s "$RESULTS" ]; then
  echo "The grader failed on part of this submission; results.json says which steps."
elif [ "$status" -gt 1 ] || [ ! -s "$RESULTS" ]; then
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    why="ran out of time"
  else
    why="stopped with status $status"
  fi
  printf '{{"score": 0, "output": "The autograder %s before it could grade this submission. This is not a verdict on your code: please tell your instructor, who can read why in the autograder output.", "tests": []}}\\n' "$why" > "$RESULTS"
fi
exit 0
"""


def _zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.create_system = 3  # Unix, so unzip honours the mode bits below
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _bundled_course(course: Path) -> tuple[bytes, dict[str, Path]]:
    """The course file as bundled, and its private suites by their place in the bundle.

    `extra_suites` is rewritten to the bundled folders (`suites/1-private/`),
    so the bundle works wherever the instructor's folders were.
    """
    from attn_practice.grader.course import load_course

    loaded = load_course(course)
    if not loaded.extra_suites:
        return course.read_bytes(), {}
    data = yaml.safe_load(course.read_text(encoding="utf-8")) or {}
    places: dict[str, Path] = {}
    for i, suite in enumerate(loaded.extra_suites, start=1):
        places[f"suites/{i}-{suite.name}"] = suite
    data["extra_suites"] = [f"{p}/" if places[p].is_dir() else p for p in places]
    text = (f"# {course.name} as bundled by `attn-practice ci gradescope` (extra_suites point "
            "into the bundle).\n" + yaml.safe_dump(data, sort_keys=False))
    return text.encode(), places


def gradescope_zip(package: str = DEFAULT_PACKAGE, course: Path | None = None, *,
                   secret: str | None = None) -> bytes:
    """The autograder bundle: `setup.sh` and `run_autograder` at the root (both 0755).

    Also: the grader's wheel and pins (unless `package` says otherwise), the
    course file and every private suite it names, and a grading secret
    (fresh unless given). Fixed timestamps: the same inputs give the same bytes.
    """
    from attn_practice.grader.course import load_course, suite_files

    secret_env = load_course(course).secret_env if course is not None else "ATTN_PRACTICE_SECRET"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(_zip_entry("setup.sh", 0o755), gradescope_setup(package).encode())
        zf.writestr(_zip_entry("run_autograder", 0o755),
                    gradescope_run(course is not None, secret_env).encode())
        zf.writestr(_zip_entry(SECRET_FILE, 0o600), (secret or secrets.token_hex(32)).encode())
        if course is not None:
            text, places = _bundled_course(Path(course))
            zf.writestr(_zip_entry(COURSE_NAME, 0o644), text)
            for place, suite in places.items():
                for f in suite_files([suite]):
                    rel = f.relative_to(suite).as_posix() if suite.is_dir() else ""
                    name = f"{place}/{rel}" if rel else place
                    zf.writestr(_zip_entry(name, 0o644), f.read_bytes())
        if package:
            bundled = _bundled(check_package(package))
            if bundled is not None:
                zf.writestr(_zip_entry(bundled.name, 0o644), bundled.read_bytes())
        else:
            from attn_practice.grader.staff.wheel import (
                SUPPORTED_MINORS,
                constraints_for,
                constraints_text,
                grader_wheel,
            )

            name, blob = grader_wheel()
            zf.writestr(_zip_entry(name, 0o644), blob)
            zf.writestr(_zip_entry(CONSTRAINTS, 0o644), constraints_text().encode())
            for minor in SUPPORTED_MINORS:  # setup.sh takes the one for the image's Python
                zf.writestr(_zip_entry(f"constraints-{minor}.txt", 0o644),
                            constraints_for(minor).encode())
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
    if path.exists() and (path.is_symlink() or not path.is_file()):
        write_output(path, blob, mode=mode)  # /dev/stdout, a FIFO, a link: through it, never replaced
        return Written(path, "replaced")
    if path.exists():
        if path.read_bytes() == blob:
            return Written(path, "unchanged")
        if not force:
            raise WouldOverwrite(f"{path} already exists; use --force to replace it (a backup is kept)")
        backup = _backup_path(path)
        shutil.copy2(path, backup)
        write_atomic(path, blob, mode=mode)
        return Written(path, "replaced", backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, blob, mode=mode)
    return Written(path, "created")
