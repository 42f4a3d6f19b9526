"""`attn-practice ci ...`: the generated CI files parse and run what they should."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
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


# -- GitHub Classroom ------------------------------------------------------------


@pytest.mark.parametrize("package", [ci_setup.DEFAULT_PACKAGE, ODD_PACKAGE, "./dist/attn practice.whl"])
def test_github_workflow_parses_and_grades(package):
    wf = yaml.safe_load(ci_setup.github_workflow(package))
    assert wf["name"] == "Autograding Tests"
    assert "push" in wf["on"]
    steps = _steps(wf)
    assert steps[0]["uses"].startswith("actions/checkout@")
    py = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert py["with"]["python-version"] == "3.11"
    install = next(s for s in steps if "pip install" in s.get("run", ""))
    assert ["python", "-m", "pip", "install", package] in _commands(install["run"])

    grade = next(s for s in steps if s.get("id") == "attn-practice")
    assert _commands(grade["run"]) == [["attn-practice", "grade", ".", "--format", "github"]]
    reporter = steps[-1]
    assert reporter["uses"] == "education/autograding-grading-reporter@v1"
    runners = [r.strip() for r in reporter["with"]["runners"].split(",")]
    assert runners == ["attn-practice"]
    # The reporter reads `${runner.toUpperCase()}_RESULTS`.
    assert reporter["env"] == {"ATTN-PRACTICE_RESULTS": "${{steps.attn-practice.outputs.result}}"}
    assert "!cancelled()" in reporter["if"]  # runs although grading exited 1


def test_package_spec_must_be_one_line():
    for bad in ("", "  ", "attn-practice\nrm -rf /", "x\x1b[2J"):
        with pytest.raises(ValueError):
            ci_setup.github_workflow(bad)


# -- GitLab -------------------------------------------------------------------------


@pytest.mark.parametrize("package", [ci_setup.DEFAULT_PACKAGE, ODD_PACKAGE])
def test_gitlab_ci_parses_and_reports_junit(package):
    data = yaml.safe_load(ci_setup.gitlab_ci(package))
    job = data["attn-practice"]
    assert job["image"].startswith("python:3")
    script = [shlex.split(line) for line in job["script"]]
    assert ["python", "-m", "pip", "install", package] in script
    grade = script[-1]
    assert grade[:3] == ["attn-practice", "grade", "."]
    assert grade[grade.index("--format") + 1] == "junit"
    out = grade[grade.index("--out") + 1]
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == out == "report.xml"


# -- Gradescope ------------------------------------------------------------------------


def _mode(info: zipfile.ZipInfo) -> int:
    return (info.external_attr >> 16) & 0o7777


def test_gradescope_zip_layout_and_modes(tmp_path):
    data = ci_setup.gradescope_zip()
    assert data == ci_setup.gradescope_zip()  # reproducible
    path = tmp_path / "autograder.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert set(names) == {"setup.sh", "run_autograder"}
        for name in names:
            assert _mode(zf.getinfo(name)) == 0o755
            assert stat.S_ISREG(zf.getinfo(name).external_attr >> 16)
        run = zf.read("run_autograder").decode()
        setup = zf.read("setup.sh").decode()
    for text in (run, setup):
        assert text.startswith("#!/usr/bin/env bash\n") and "\r" not in text
    assert '"${AUTOGRADER_ROOT:-/autograder}/submission"' in run
    assert '--out "${AUTOGRADER_ROOT:-/autograder}/results/results.json"' in run
    assert "--format gradescope" in run and "--course" not in run
    assert run.rstrip().endswith("exit 0")
    assert "pip install attn-practice" in setup


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gradescope_scripts_are_valid_bash(tmp_path):
    for text in (ci_setup.gradescope_setup(ODD_PACKAGE), ci_setup.gradescope_run(course=True)):
        script = tmp_path / "s.sh"
        script.write_text(text)
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_gradescope_zip_with_course_and_bundled_wheel(tmp_path):
    course = tmp_path / "my course.yml"
    course.write_text("steps: [step1, step2]\n")
    wheel = tmp_path / "attn_practice-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK fake wheel")
    with zipfile.ZipFile(__import__("io").BytesIO(ci_setup.gradescope_zip(str(wheel), course))) as zf:
        assert set(zf.namelist()) == {"setup.sh", "run_autograder", "course.yaml", wheel.name}
        assert zf.read("course.yaml") == course.read_bytes()
        assert _mode(zf.getinfo("course.yaml")) == 0o644
        run = zf.read("run_autograder").decode()
        setup = zf.read("setup.sh").decode()
    assert '--course "${AUTOGRADER_ROOT:-/autograder}/source/course.yaml"' in run
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
    for body in ("echo boom >&2; exit 3",
                 'echo \'{"score": 99, "tests": []}\' > "$6"; exit 3'):  # a file it left: not trusted
        _fake_grader(tmp_path / "bin", body)
        proc = _run_autograder(tmp_path, tmp_path / "bin")
        assert proc.returncode == 0
        data = json.loads(results.read_text())
        assert data["score"] == 0 and "status 3" in data["output"]


# -- the Click group ---------------------------------------------------------------------


def test_cli_never_overwrites_without_force(tmp_path):
    runner = CliRunner()
    target = tmp_path / ".github" / "workflows" / "classroom.yml"
    first = runner.invoke(ci, ["github", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert target.read_text() == ci_setup.github_workflow()
    again = runner.invoke(ci, ["github", str(tmp_path)])
    assert again.exit_code == 0 and "up to date" in again.output

    target.write_text("# the instructor's own workflow\n")
    refused = runner.invoke(ci, ["github", str(tmp_path), "--package", ODD_PACKAGE])
    assert refused.exit_code == 1 and "--force" in refused.output
    assert target.read_text() == "# the instructor's own workflow\n"

    forced = runner.invoke(ci, ["github", str(tmp_path), "--package", ODD_PACKAGE, "--force"])
    assert forced.exit_code == 0, forced.output
    assert (target.parent / "classroom.yml.bak").read_text() == "# the instructor's own workflow\n"
    assert ODD_PACKAGE in target.read_text()
    target.write_text("# edited again\n")
    runner.invoke(ci, ["github", str(tmp_path), "--force"])
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
