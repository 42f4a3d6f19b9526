"""`attn-practice ci ...`: the generated CI files parse and run what they should."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from attn_practice.grader.commands.ci import ci
from attn_practice.grader.staff import ci_setup

SUBMISSIONS = Path(__file__).parent / "submissions"
ODD_PACKAGE = "attn-practice @ git+https://example.org/x/attn-practice.git@v1#egg=attn-practice"


def _steps(workflow: dict) -> list[dict]:
    return workflow["jobs"]["run-autograding-tests"]["steps"]


def _commands(script: str) -> list[list[str]]:
    return [shlex.split(line) for line in script.splitlines() if line.strip()]


# -- linting with the tools CI systems use -----------------------------------------------


def _tool(name: str) -> str:
    """The linter installed beside this Python (the test extras), or a skip saying why not."""
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' installs it)")
    probe = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"{name} cannot run here: {probe.stderr.strip()[:200]}")
    return found


def actionlint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("actionlint"), "-no-color", str(path)], capture_output=True,
                          text=True, timeout=120)


def gitlab_schema(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci",
                           str(path)], capture_output=True, text=True, timeout=120)


def _course(tmp_path: Path, private: bool) -> Path:
    course = tmp_path / "course" / "course.yaml"
    course.parent.mkdir(parents=True, exist_ok=True)
    text = "points: {step5: 2}\n"
    if private:
        (course.parent / "private").mkdir()
        (course.parent / "private" / "test_p.py").write_text(PRIVATE_TEST)
        text += "extra_suites: [private/]\n"
    course.write_text(text)
    return course


PRIVATE_TEST = """\
import numpy as np
import pytest


@pytest.mark.step("step1")
def test_the_answer(step):
    \"\"\"Scores of the instructor's own example\"\"\"
    step.check(np.array([[42.0, 1.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]))
"""


# -- GitHub Classroom ------------------------------------------------------------


@pytest.mark.parametrize("variant", ["wheel", "package", "course", "private"])
def test_github_workflow_lints_and_installs_the_grader(tmp_path, variant):
    args = ["github", str(tmp_path / "repo")]
    if variant == "package":
        args += ["--package", ODD_PACKAGE]
    if variant in ("course", "private"):
        args += ["--course", str(_course(tmp_path, variant == "private"))]
    if variant == "private":
        args += ["--private-repo", "my-org/attention-private"]
    res = CliRunner().invoke(ci, args)
    assert res.exit_code == 0, res.output
    path = tmp_path / "repo" / ci_setup.GITHUB_WORKFLOW
    lint = actionlint(path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    wf = yaml.safe_load(path.read_text())
    assert wf["name"] == "Autograding Tests" and "push" in wf["on"]
    steps = _steps(wf)
    assert steps[0]["uses"].startswith("actions/checkout@")
    py = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert py["with"]["python-version"] == ci_setup.PYTHON_VERSION and py["with"]["cache"] == "pip"
    assert (tmp_path / "repo" / py["with"]["cache-dependency-path"]).is_file()
    install = _commands(next(s for s in steps if "pip install" in s.get("run", ""))["run"])[0]
    template = tmp_path / "repo" / ".attn-practice"
    if variant == "package":
        assert install == ["python", "-m", "pip", "install", ODD_PACKAGE]
        assert not template.exists()
    else:
        wheel = install[-1]
        assert install[3:6] == ["install", "-c", ".attn-practice/constraints.txt"]
        assert (tmp_path / "repo" / wheel).is_file() and wheel.endswith("-py3-none-any.whl")
        pins = (template / "constraints.txt").read_text()
        assert "numpy==" in pins and "pytest==" in pins
    grade = next(s for s in steps if s.get("id") == "attn-practice")
    command = _commands(grade["run"])[0]
    assert command[:5] == ["attn-practice", "grade", ".", "--format", "github"]
    assert grade["env"]["ATTN_PRACTICE_SECRET"] == "${{ secrets.ATTN_PRACTICE_SECRET }}"
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    if variant == "course":
        assert command[-2:] == ["--course", ".attn-practice/course.yaml"]
        assert (template / "course.yaml").read_text() == "points: {step5: 2}\n"
    if variant == "private":
        assert command[-2:] == ["--course", ".attn-practice-private/course.yaml"]
        assert len(checkouts) == 2
        private = checkouts[1]["with"]
        assert private["repository"] == "my-org/attention-private"
        assert private["token"] == "${{ secrets.ATTN_PRACTICE_TOKEN }}"
        assert private["path"] == ".attn-practice-private"
        # nothing of the private suites lands in the student's template
        assert not list((tmp_path / "repo").rglob("test_p.py"))
        assert not (template / "course.yaml").exists()
    else:
        assert len(checkouts) == 1
    reporter = steps[-1]
    assert reporter["uses"] == "education/autograding-grading-reporter@v1"
    assert reporter["env"] == {"ATTN-PRACTICE_RESULTS": "${{steps.attn-practice.outputs.result}}"}
    assert "!cancelled()" in reporter["if"]  # runs although grading exited 1


def test_actionlint_really_checks(tmp_path):
    """The linter is live: a broken workflow is rejected (so a pass above means something)."""
    bad = tmp_path / "bad.yml"
    bad.write_text(ci_setup.github_workflow(ODD_PACKAGE).replace("runs-on: ubuntu-latest",
                                                                 "runs-on: [ubuntu-latest"))
    assert actionlint(bad).returncode != 0
    bad.write_text(ci_setup.github_workflow(ODD_PACKAGE).replace("steps.attn-practice.outputs",
                                                                 "steps.attn-practice.output"))
    assert actionlint(bad).returncode != 0


def test_package_spec_must_be_one_line():
    for bad in ("  ", "attn-practice\nrm -rf /", "x\x1b[2J", "--index-url=http://evil"):
        with pytest.raises(ValueError):
            ci_setup.check_package(bad)
    res = CliRunner().invoke(ci, ["github", ".", "--package", "a\nb"])
    assert res.exit_code == 2 and "--package" in res.output


# -- GitLab -------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["wheel", "package", "private"])
def test_gitlab_ci_passes_the_gitlab_schema_and_reports_junit(tmp_path, variant):
    args = ["gitlab", str(tmp_path / "repo")]
    if variant == "package":
        args += ["--package", ODD_PACKAGE]
    if variant == "private":
        args += ["--course", str(_course(tmp_path, True))]
    res = CliRunner().invoke(ci, args)
    assert res.exit_code == 0, res.output
    path = tmp_path / "repo" / ".gitlab-ci.yml"
    check = gitlab_schema(path)
    assert check.returncode == 0, check.stdout + check.stderr
    job = yaml.safe_load(path.read_text())["attn-practice"]
    assert job["image"] == f"python:{ci_setup.PYTHON_VERSION}"
    assert job["variables"]["PIP_CACHE_DIR"].endswith(".cache/pip") and job["cache"]["paths"]
    script = [shlex.split(line) for line in job["script"]]
    if variant == "package":
        assert ["python", "-m", "pip", "install", ODD_PACKAGE] in script
    else:
        assert (tmp_path / "repo" / script[0][-1]).is_file()
    grade = script[-1]
    assert grade[:3] == ["attn-practice", "grade", "."]
    assert grade[grade.index("--format") + 1] == "junit"
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == grade[grade.index("--out") + 1] == "report.xml"
    if variant == "private":
        assert any("CI_JOB_TOKEN" in line for line in job["script"])
        assert grade[-2:] == ["--course", ".attn-practice-private/course.yaml"]


def test_gitlab_schema_really_checks(tmp_path):
    bad = tmp_path / ".gitlab-ci.yml"
    bad.write_text(ci_setup.gitlab_ci(ODD_PACKAGE).replace("when: always", "when: sometimes"))
    assert gitlab_schema(bad).returncode != 0


# -- Gradescope ------------------------------------------------------------------------


def _mode(info: zipfile.ZipInfo) -> int:
    return (info.external_attr >> 16) & 0o7777


def test_gradescope_zip_layout_and_modes(tmp_path):
    data = ci_setup.gradescope_zip(secret="s" * 64)
    assert data == ci_setup.gradescope_zip(secret="s" * 64)  # reproducible
    path = tmp_path / "autograder.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        wheel = [n for n in names if n.endswith(".whl")]
        minors = {f"constraints-{m}.txt" for m in ("3.10", "3.11", "3.12", "3.13")}
        assert names == {"setup.sh", "run_autograder", "grading_secret", "constraints.txt", *wheel,
                         *minors}
        assert len(wheel) == 1
        for name in ("setup.sh", "run_autograder"):
            assert _mode(zf.getinfo(name)) == 0o755
            assert stat.S_ISREG(zf.getinfo(name).external_attr >> 16)
        assert _mode(zf.getinfo("grading_secret")) == 0o600
        run = zf.read("run_autograder").decode()
        setup = zf.read("setup.sh").decode()
    for text in (run, setup):
        assert text.startswith("#!/usr/bin/env bash\n") and "\r" not in text
    assert '"${AUTOGRADER_ROOT:-/autograder}/submission"' in run
    assert '--out "${AUTOGRADER_ROOT:-/autograder}/results/results.json"' in run
    assert "--format gradescope" in run and "--course" not in run
    assert run.rstrip().endswith("exit 0")
    assert f'-c "$CONSTRAINTS" "$HERE"/{wheel[0]}' in setup
    assert 'CONSTRAINTS="$HERE/constraints-$MINOR.txt"' in setup
    two = [zipfile.ZipFile(__import__("io").BytesIO(ci_setup.gradescope_zip())).read("grading_secret")
           for _ in range(2)]
    assert two[0] != two[1] and len(two[0]) == 64  # a fresh secret every bundle


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gradescope_scripts_are_valid_bash(tmp_path):
    for text in (ci_setup.gradescope_setup(ODD_PACKAGE), ci_setup.gradescope_setup(),
                 ci_setup.gradescope_run(course=True)):
        script = tmp_path / "s.sh"
        script.write_text(text)
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_gradescope_zip_bundles_the_course_and_its_private_suites(tmp_path):
    course = _course(tmp_path, True)
    with zipfile.ZipFile(__import__("io").BytesIO(ci_setup.gradescope_zip("", course))) as zf:
        names = set(zf.namelist())
        assert "course.yaml" in names and "suites/1-private/test_p.py" in names
        zf.extractall(tmp_path / "bundle")
    from attn_practice.grader.course import load_course

    bundled = load_course(tmp_path / "bundle" / "course.yaml")
    assert bundled.points == {"step5": 2.0}
    assert [p.name for p in bundled.extra_suites] == ["1-private"]
    run = (tmp_path / "bundle" / "run_autograder").read_text()
    assert '--course "${AUTOGRADER_ROOT:-/autograder}/source/course.yaml"' in run


def test_gradescope_zip_with_a_bundled_package_file(tmp_path):
    wheel = tmp_path / "attn_practice-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK fake wheel")
    with zipfile.ZipFile(__import__("io").BytesIO(ci_setup.gradescope_zip(str(wheel)))) as zf:
        assert wheel.name in zf.namelist() and "constraints.txt" not in zf.namelist()
        setup = zf.read("setup.sh").decode()
    assert f'pip install "$HERE"/{wheel.name}' in setup


def _fake_grader(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "attn-practice"
    exe.write_text(f"#!/usr/bin/env bash\n{body}\n")
    exe.chmod(0o755)


def _run_autograder(tmp_path: Path, bin_dir: Path | None, course: bool = False) -> subprocess.CompletedProcess:
    script = tmp_path / "run_autograder"
    script.write_text(ci_setup.gradescope_run(course))
    script.chmod(0o755)
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root))
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash")
def test_run_autograder_passes_arguments_and_keeps_results(tmp_path):
    args_file = tmp_path / "args.json"
    _fake_grader(tmp_path / "bin", (
        f'python3 -c "import json, sys; json.dump(sys.argv[1:], open({str(args_file)!r}, \'w\'))" "$@"\n'
        'out=""; while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done\n'
        'echo \'{"score": 1, "tests": []}\' > "$out"; exit 1'
    ))
    proc = _run_autograder(tmp_path, tmp_path / "bin", course=True)
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "autograder"
    args = json.loads(args_file.read_text())
    assert args[:2] == ["grade", f"{root}/submission"]
    assert args[args.index("--format") + 1] == "gradescope"
    assert args[args.index("--out") + 1] == f"{root}/results/results.json"
    assert args[args.index("--course") + 1] == f"{root}/source/course.yaml"
    assert json.loads((root / "results" / "results.json").read_text())["score"] == 1


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash")
def test_run_autograder_writes_results_when_grader_crashes(tmp_path):
    results = tmp_path / "autograder" / "results" / "results.json"
    for body, status in (("echo boom >&2; exit 3", "status 3"),  # failed before writing anything
                         ('echo \'{"score": 99, "tests": []}\' > "$6"; exit 2', "status 2"),  # not trusted
                         ("exit 137", "ran out of time")):
        _fake_grader(tmp_path / "bin", body)
        proc = _run_autograder(tmp_path, tmp_path / "bin")
        assert proc.returncode == 0
        data = json.loads(results.read_text())
        assert data["score"] == 0 and status in data["output"] and "not a verdict" in data["output"]
        assert "autograder output" in data["output"]  # where staff read why; stderr never shown to students


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash")
def test_run_autograder_keeps_the_report_of_a_grade_that_failed_only_in_part(tmp_path):
    """Exit 3 after the report was written (CONTRACT 4.4): the steps graded stand, the file says which did not."""
    results = tmp_path / "autograder" / "results" / "results.json"
    _fake_grader(tmp_path / "bin", 'echo \'{"score": 4, "output": "failed on step2", "tests": []}\' > "$6"; exit 3')
    proc = _run_autograder(tmp_path, tmp_path / "bin")
    assert proc.returncode == 0
    assert json.loads(results.read_text()) == {"score": 4, "output": "failed on step2", "tests": []}
    assert "results.json says which steps" in proc.stdout


# -- the Click group ---------------------------------------------------------------------


def test_cli_never_overwrites_without_force(tmp_path):
    runner = CliRunner()
    target = tmp_path / ".github" / "workflows" / "classroom.yml"
    first = runner.invoke(ci, ["github", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert "attn-practice grade . --format github" in target.read_text()
    again = runner.invoke(ci, ["github", str(tmp_path)])
    assert again.exit_code == 0 and "up to date" in again.output

    target.write_text("# the instructor's own workflow\n")
    refused = runner.invoke(ci, ["github", str(tmp_path), "--package", ODD_PACKAGE])
    assert refused.exit_code == 1 and "--force" in refused.output and "Traceback" not in refused.output
    assert target.read_text() == "# the instructor's own workflow\n"

    forced = runner.invoke(ci, ["github", str(tmp_path), "--package", ODD_PACKAGE, "--force"])
    assert forced.exit_code == 0, forced.output
    assert (target.parent / "classroom.yml.bak").read_text() == "# the instructor's own workflow\n"
    assert ODD_PACKAGE in target.read_text()
    target.write_text("# edited again\n")
    runner.invoke(ci, ["github", str(tmp_path), "--force", "--package", ODD_PACKAGE])
    assert (target.parent / "classroom.yml.bak1").read_text() == "# edited again\n"


def test_cli_gitlab_and_bad_package(tmp_path):
    runner = CliRunner()
    result = runner.invoke(ci, ["gitlab", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())["attn-practice"]
    bad = runner.invoke(ci, ["gitlab", str(tmp_path / "x"), "--package", "a\nb"])
    assert bad.exit_code == 2 and "--package" in bad.output


def test_cli_gradescope(tmp_path):
    runner = CliRunner()
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1]\n")
    out = tmp_path / "build" / "autograder.zip"
    result = runner.invoke(ci, ["gradescope", "--out", str(out), "--course", str(course)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as zf:
        assert "course.yaml" in zf.namelist()
    refused = runner.invoke(ci, ["gradescope", "--out", str(out)])
    assert refused.exit_code == 1
    assert runner.invoke(ci, ["gradescope", "--out", str(out), "--force"]).exit_code == 0
    assert (out.parent / "autograder.zip.bak").exists()


def test_ci_group_lists_commands():
    assert set(ci.commands) == {"github", "gitlab", "gradescope"}
    assert CliRunner().invoke(ci, ["--help"]).exit_code == 0


# -- end to end, once `attn-practice grade` exists -----------------------------------------


def _grade_cli_works() -> str | None:
    if shutil.which("attn-practice") is None:
        return "the attn-practice command is not installed"
    try:
        proc = subprocess.run(["attn-practice", "grade", "--help"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`attn-practice grade --help` did not run: {exc}"
    if proc.returncode != 0:
        return "`attn-practice grade --help` failed: the grade command is not ready yet"
    return None


SYNTHETIC = {
    "step1_scores.py": "import numpy as np\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n",
    "step2_scale.py": "def scale_scores(scores, d_k):\n    print('::set-output name=score::100')\n    return scores\n",
    "step5_attention.py": "def attention(Q, K, V)\n    pass\n",
}


def _example_submissions(tmp_path: Path) -> list[Path]:
    """A few of tests/submissions (when there), plus one made here with known outcomes."""
    cases = sorted(p for p in SUBMISSIONS.iterdir() if p.is_dir())[:4] if SUBMISSIONS.is_dir() else []
    mixed = tmp_path / "cases" / "synthetic-mixed"
    mixed.mkdir(parents=True)
    for name, text in SYNTHETIC.items():
        (mixed / name).write_text(text)
    return [*cases, mixed]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash")
def test_run_autograder_end_to_end(tmp_path):
    reason = _grade_cli_works()
    if reason:
        pytest.skip(reason)
    for case in _example_submissions(tmp_path):
        work = tmp_path / "runs" / case.name
        root = work / "autograder"
        shutil.copytree(case, root / "submission", symlinks=True)
        proc = _run_autograder(work, None)
        assert proc.returncode == 0, (case.name, proc.stdout, proc.stderr)
        data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        assert "tests" in data and isinstance(data["score"], int | float), case.name
        assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"])), case.name
        for t in data["tests"]:
            assert t["status"] in ("passed", "failed") and t["max_score"] >= t["score"] >= 0
        if case.name == "all-correct":
            assert all(t["status"] == "passed" for t in data["tests"])
        if case.name == "synthetic-mixed":
            status = {t["number"]: t["status"] for t in data["tests"]}
            assert status["1"] == "passed" and status["2"] == "failed" and status["5"] == "failed"


REFERENCE = (Path(__file__).resolve().parent.parent / "reference" / "attention.py").read_text()
#: Correct except on the private test's own input (Q[0, 0] == 42): only the private test can see it.
PRIVATE_ONLY_WRONG = REFERENCE + """

_right_dot_scores = dot_scores


def dot_scores(Q, K):
    out = _right_dot_scores(Q, K)
    return out + 1 if np.size(Q) and np.asarray(Q).reshape(-1)[0] == 42.0 else out
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash")
def test_gradescope_bundle_installs_and_grades_from_a_fresh_environment(tmp_path):
    """The bundle as Gradescope uses it: unzip into /autograder/source (a temp prefix here), run
    setup.sh into a fresh venv with no attn-practice in it, then run_autograder per submission."""
    course = _course(tmp_path, True)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(__import__("io").BytesIO(ci_setup.gradescope_zip("", course))) as zf:
        zf.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(0o755)
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(AUTOGRADER_ROOT=str(root), ATTN_PRACTICE_VENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith(str(Path(sys.executable).parent)))
    proc = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    installed = subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import attn_practice, sys; print(attn_practice.__file__)"],
                               capture_output=True, text=True, timeout=60)
    assert str(venv) in installed.stdout, installed  # the bundled wheel, not this checkout
    # ... and that non-editable install can build the same wheel again (for its own CI set-ups)
    from attn_practice.grader.staff.wheel import grader_wheel

    rebuilt = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sys, zipfile, io\n"
                              "from attn_practice.grader.staff.wheel import grader_wheel\n"
                              "name, blob = grader_wheel()\n"
                              "print('\\n'.join(sorted(zipfile.ZipFile(io.BytesIO(blob)).namelist())))"],
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    here = sorted(zipfile.ZipFile(__import__("io").BytesIO(grader_wheel()[1])).namelist())
    ours = [n for n in here if not n.endswith(("/LICENSE", "/README.md"))]
    assert [n for n in rebuilt.stdout.split() if not n.endswith(("/LICENSE", "/README.md"))] == ours

    cases = {
        "correct": {f"{s}.py": REFERENCE for s in ("step1_scores", "step2_scale", "step3_softmax",
                                                   "step4_weighted_sum", "step5_attention")},
        "private_only_wrong": {},
        "wrong": {},
    }
    cases["private_only_wrong"] = {**cases["correct"], "step1_scores.py": PRIVATE_ONLY_WRONG}
    cases["wrong"] = {**cases["correct"], "step5_attention.py": (
        Path(__file__).parent / "implementations" / "step5" / "wrong_no_scale.py").read_text()}
    results = {}
    for name, files in [*cases.items(), ("hostile", None)]:
        sub = root / "submission"
        shutil.rmtree(sub, ignore_errors=True)
        if files is None:
            shutil.copytree(SUBMISSIONS / "attack_exit_import", sub)
        else:
            sub.mkdir()
            for f, text in files.items():
                (sub / f).write_text(text)
        run = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "exited with status 0" in run.stdout or "exited with status 1" in run.stdout, run.stdout
        data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        assert sum(t["max_score"] for t in data["tests"]) == 6.0, name  # points: {step5: 2}
        assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
        results[name] = data
    def lost(name: str) -> list:  # the failure message names each lost test and why
        return [(t["name"], t["score"], t.get("output", "")[:1500]) for t in results[name]["tests"]
                if t["score"] != t["max_score"]]

    assert results["correct"]["score"] == 6.0, lost("correct")
    assert results["wrong"]["score"] == 4.0, lost("wrong")
    by_number = {t["number"]: t for t in results["private_only_wrong"]["tests"]}
    assert results["private_only_wrong"]["score"] == 5.0 and by_number["1"]["status"] == "failed"
    assert "Scores of the instructor's own example" in by_number["1"]["output"] or \
        "42" in by_number["1"]["output"]
    assert results["hostile"]["score"] == 2.0  # only step5 of attack_exit_import is right


def test_the_bundled_wheel_keeps_its_dependencies_when_run_beside_a_build_leftover(tmp_path):
    """From a source checkout, a stale `attn_practice.egg-info` in the cwd shadows the install
    (`sys.path[0]` is the cwd); the wheel must still carry Requires-Dist, or setup.sh installs no click."""
    leftover = tmp_path / "attn_practice.egg-info"
    leftover.mkdir()
    (leftover / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: attn-practice\nVersion: 0.1.0\n")
    code = ("import io, zipfile\n"
            "from attn_practice.grader.staff.wheel import grader_wheel\n"
            "name, data = grader_wheel()\n"
            "z = zipfile.ZipFile(io.BytesIO(data))\n"
            "print(z.read([n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]).decode())\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    requires = [ln for ln in proc.stdout.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln]
    assert {r.split()[1].split(">")[0].split("<")[0].split("=")[0] for r in requires} >= {
        "numpy", "pytest", "hypothesis", "click", "rich", "pyyaml"}
