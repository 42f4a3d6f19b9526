"""Generated CI files keep every value a value (issue 18.7), and the secret keeps to its own name.

A course file named with a newline once injected a step into the GitHub
workflow. Here every value a user chooses (the course file's name, the
package spec, the private repository) carries newlines, `#`, quotes and YAML
indicators; the files are parsed back with yaml, must hold exactly the steps
and commands they should, and pass actionlint and GitLab's schema. A value
GitHub would evaluate as an expression is refused. `secret_env` may not name
a variable the loader, a shell, Python or the CI runner reads.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_ci_setup import PRIVATE_TEST, actionlint, gitlab_schema

from attn_practice.cli import cli
from attn_practice.grader.commands.ci import ci
from attn_practice.grader.staff import ci_setup

NASTY_NAME = 'co#urse: "x\' &a *b !c |d >e %f @g `h\n- name: evil\n  run: echo pwned # [1, {2}].yaml'
NASTY_PACKAGE = ("attn-practice @ git+https://example.org/x/a.git@v1#egg=attn-practice ; "
                 "python_version >= '3' # : - [a] {b} & * ! | > % @ \"q\"")
NASTY_REPO = "my-org/#x:&*!|>%@,[]"


def _course(tmp_path: Path, name: str = NASTY_NAME) -> Path:
    folder = tmp_path / "course"
    (folder / "private").mkdir(parents=True)
    (folder / "private" / "test_p.py").write_text(PRIVATE_TEST)
    course = folder / name
    course.write_text("extra_suites: [private/]\n")
    return course


def _steps(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["jobs"]["run-autograding-tests"]["steps"]


def test_github_workflow_keeps_hostile_values_as_values(tmp_path):
    repo = tmp_path / "repo"
    res = CliRunner().invoke(ci, ["github", str(repo), "--course", str(_course(tmp_path)),
                                  "--private-repo", NASTY_REPO, "--package", NASTY_PACKAGE])
    assert res.exit_code == 0, res.output
    path = repo / ci_setup.GITHUB_WORKFLOW
    lint = actionlint(path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    steps = _steps(path)
    assert [s["name"] for s in steps] == ["Checkout code", "Check out the private tests", "Set up Python",
                                         "Install attn-practice", "Grade with attn-practice",
                                         "Autograding Reporter"]
    assert steps[1]["with"]["repository"] == NASTY_REPO
    assert shlex.split(steps[3]["run"]) == ["python", "-m", "pip", "install", NASTY_PACKAGE]
    grade = shlex.split(steps[4]["run"])
    assert grade[:5] == ["attn-practice", "grade", ".", "--format", "github"]
    assert grade[-2:] == ["--course", f".attn-practice-private/{NASTY_NAME}"]
    assert "pwned" not in yaml.safe_dump(steps[:4]) and "evil" not in [s["name"] for s in steps]


def test_gitlab_ci_keeps_hostile_values_as_values(tmp_path):
    repo = tmp_path / "repo"
    res = CliRunner().invoke(ci, ["gitlab", str(repo), "--course", str(_course(tmp_path)),
                                  "--package", NASTY_PACKAGE])
    assert res.exit_code == 0, res.output
    path = repo / ".gitlab-ci.yml"
    check = gitlab_schema(path)
    assert check.returncode == 0, check.stdout + check.stderr
    data = yaml.safe_load(path.read_text())
    assert list(data) == ["attn-practice"]
    script = data["attn-practice"]["script"]
    assert len(script) == 3
    assert shlex.split(script[0]) == ["python", "-m", "pip", "install", NASTY_PACKAGE]
    assert shlex.split(script[2])[-2:] == ["--course", f".attn-practice-private/{NASTY_NAME}"]


def test_quoting_holds_for_every_character_class():
    """yaml_quote round-trips any text yaml can hold: each value is one scalar."""
    from attn_practice.grader.staff.yaml_values import yaml_quote

    for text in (NASTY_NAME, NASTY_PACKAGE, "a\r\nb\tc\x00d\x1b[2J\u2028e\u00e9\U0001f600", "'", '"',
                 "- x", "? y", "key: value", "# c", "&anchor", "*alias", "!tag", "|", ">", "%YAML", "@",
                 "`", "{a: 1}", "[1, 2]", "", " lead", "trail ", "yes", "null", "~", "0x10", "1e3"):
        assert yaml.safe_load(f"k: {yaml_quote(text)}\n") == {"k": text}


@pytest.mark.parametrize("command", ["github", "gitlab"])
def test_a_newline_in_the_package_spec_is_refused(tmp_path, command):
    res = CliRunner().invoke(ci, [command, str(tmp_path / "repo"), "--package", "a\n- run: evil"])
    assert res.exit_code == 2 and not (tmp_path / "repo").exists()


def test_a_value_github_would_evaluate_is_refused(tmp_path):
    course = _course(tmp_path, "course-${{ secrets.GITHUB_TOKEN }}.yaml")
    res = CliRunner().invoke(ci, ["github", str(tmp_path / "repo"), "--course", str(course)])
    assert res.exit_code == 2, res.output
    assert "expression" in res.output
    assert not (tmp_path / "repo" / ci_setup.GITHUB_WORKFLOW).exists()


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "BASH_ENV", "PYTHONPATH", "IFS", "HOME",
                                  "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONSTARTUP", "PYTHONHOME",
                                  "SHELLOPTS", "PS4", "ENV", "BASH_FUNC_x", "BASHOPTS", "GCONV_PATH",
                                  "PIP_INDEX_URL", "GITHUB_TOKEN", "CI_JOB_TOKEN", "TMPDIR", "LC_ALL",
                                  "path", "Ld_Preload"])
def test_secret_env_may_not_name_a_variable_others_read(tmp_path, name):
    course = tmp_path / "course.yaml"
    course.write_text(f"secret_env: {name}\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    res = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json"])
    assert res.exit_code == 2, res.output
    assert "secret_env" in res.output and "line 1" in res.output


def test_secret_env_of_its_own_is_accepted(tmp_path):
    from attn_practice.grader.course import load_course

    course = tmp_path / "course.yaml"
    course.write_text("secret_env: MY_COURSE_SECRET\n")
    assert load_course(course).secret_env == "MY_COURSE_SECRET"
