"""CONTRACT §4.1: one class, one total, in every format.

A class of mixed submissions (complete, partial, missing files, untouched
stubs, extra bonus files) is graded through the CLI under the default course
and under a course with `points: {step5: 2, step6: 0.5}`; every format's
totals are parsed back with its consumer's parser and compared with the
totals the course defines.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
XSD = ROOT / "tests" / "data" / "junit.xsd"

# name -> (default-course score, points-course score)
EXPECTED = {
    "complete": (5.0, 6.0),
    "partial": (3.0, 3.0),
    "only_step1": (1.0, 1.0),
    "fresh_stubs": (0.0, 0.0),
    "core_and_stubs": (5.0, 6.0),
    "core_and_step6": (5.0, 6.5),
}
MAX = (5.0, 6.5)


def _write(folder: Path, stems: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        (folder / f"{stem}.py").write_text(REFERENCE)


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("klass")
    subs = {name: root / name for name in EXPECTED}
    _write(subs["complete"], CORE)
    _write(subs["partial"], ["step1_scores", "step2_scale", "step4_weighted_sum"])
    shutil.copy(ROOT / "tests" / "implementations" / "step5" / "wrong_no_scale.py",
                subs["partial"] / "step5_attention.py")
    _write(subs["only_step1"], ["step1_scores"])
    for name in ("fresh_stubs", "core_and_stubs"):
        res = CliRunner().invoke(cli, ["start", str(subs[name])])
        assert res.exit_code == 0, res.output
    _write(subs["core_and_stubs"], CORE)
    _write(subs["core_and_step6"], [*CORE, "step6_masked"])
    (root / "points.yaml").write_text("points: {step5: 2, step6: 0.5}\n")
    return {**subs, "_root": root}


def _grade(klass: dict[str, Path], course: int, *args: str, env: dict[str, str] | None = None):
    cmd = ["grade", *args, "--cache-dir", str(klass["_root"] / "cache")]
    if course:
        cmd += ["--course", str(klass["_root"] / "points.yaml")]
    res = CliRunner().invoke(cli, cmd, env=env)
    assert "Traceback" not in res.output, res.output
    assert res.exit_code in (0, 1), res.output
    return res


@pytest.mark.slow
@pytest.mark.parametrize("course", [0, 1], ids=["default", "points"])
def test_every_format_reports_the_course_total(klass, course, tmp_path):
    names = list(EXPECTED)
    paths = [str(klass[n]) for n in names]
    want = {str(klass[n]): EXPECTED[n][course] for n in names}
    top = MAX[course]

    data = json.loads(_grade(klass, course, *paths, "--format", "json").output)
    assert [d["submission"] for d in data] == paths
    for d in data:
        assert d["max_score"] == top, d["submission"]
        assert d["score"] == want[d["submission"]], d["submission"]
        counted = [s for s in d["steps"] if s["counted"]]
        assert sum(s["max_score"] for s in counted) == top
        assert [s["id"] for s in counted] == (["step1", "step2", "step3", "step4", "step5"]
                                             + (["step6"] if course else []))
        for s in d["steps"]:
            if not s["counted"]:
                assert s["bonus"] is True and not course or s["id"] in ("step7", "step8")
    by = {d["submission"]: d for d in data}
    six = [s for s in by[str(klass["core_and_step6"])]["steps"] if s["id"] == "step6"][0]
    assert six["status"] == "passed" and six["bonus"] is True and six["counted"] is bool(course)
    stub7 = [s for s in by[str(klass["core_and_stubs"])]["steps"] if s["id"] == "step7"][0]
    assert stub7["counted"] is False and stub7["status"] != "passed"  # graded, never a penalty
    missing = [s for s in by[str(klass["only_step1"])]["steps"] if s["id"] == "step5"][0]
    assert missing["status"] == "missing" and missing["max_score"] == (2.0 if course else 1.0)

    rows = list(csv.DictReader(io.StringIO(_grade(klass, course, *paths, "--format", "csv").output)))
    assert [r["submission"] for r in rows] == paths
    for r in rows:
        assert float(r["max_score"]) == top and float(r["score"]) == want[r["submission"]]

    xml = _grade(klass, course, *paths, "--format", "junit").output
    import xmlschema

    xmlschema.XMLSchema(str(XSD)).validate(xml)
    root = ET.fromstring(xml)
    for p in paths:
        suites = [s for s in root if s.get("name").startswith(p + ":")]
        counted = [s for s in suites if s.find("./properties/property[@name='counted']") is None]
        assert len(counted) == (6 if course else 5), p
    only = [s for s in root if s.get("name") == f"{klass['only_step1']}:step4"][0]
    assert only.find("./testcase/failure").get("message") == "not handed in"
    stub7 = [s for s in root if s.get("name") == f"{klass['core_and_stubs']}:step7"][0]
    assert stub7.find(".//failure") is None and stub7.find(".//error") is None  # no penalty shown
    assert stub7.find(".//skipped").get("type") == "not-counted"

    rich = _grade(klass, course, *paths, "--format", "rich").output
    totals = [float(x) for x in re.findall(r"Score: ([\d.]+) / ([\d.]+)", rich) for x in x]
    assert totals[1::2] == [top] * len(paths)
    assert totals[0::2] == [want[p] for p in paths]

    for p in paths:
        gs = json.loads(_grade(klass, course, p, "--format", "gradescope").output)
        assert gs["score"] == want[p]
        assert sum(t["max_score"] for t in gs["tests"]) == top
        assert sum(t["score"] for t in gs["tests"]) == want[p]

        out = tmp_path / f"gh_{Path(p).name}"
        _grade(klass, course, p, "--format", "github", env={"GITHUB_OUTPUT": str(out)})
        obj = json.loads(base64.b64decode(out.read_text().strip().removeprefix("result=")))
        assert obj["max_score"] == top
        assert sum(t["score"] for t in obj["tests"]) == pytest.approx(want[p])
        assert all(t["name"].split(":")[0].split(" ")[0] in
                   ("step1", "step2", "step3", "step4", "step5", "step6") for t in obj["tests"])


def test_an_uncounted_bonus_step_never_costs_the_exit_status(klass):
    res = _grade(klass, 0, str(klass["core_and_stubs"]), "--format", "json")
    data = json.loads(res.output)
    assert data["score"] == data["max_score"] == 5.0 and data["passed"] is True
    assert res.exit_code == 0
