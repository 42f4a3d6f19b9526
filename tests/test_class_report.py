"""The class report (CONTRACT §6): aggregates, the page, the CSV, and bad input.

The known class is `tests/data/class/*.json`: eight real submissions
(`class_fixture.py` says what each learner did) graded by the real grader.
The hand counts below were made by reading those two files.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.staff.class_report import aggregate, load_members

DATA = Path(__file__).parent / "data" / "class"
SECTIONS = [DATA / "section-a.json", DATA / "section-b.json"]
HEIDI = "<b>heidi</b>"


# ------------------------------------------------------------------ helpers
class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self, tag: str | None = None, **attrs: str):
        for c in self.children:
            if isinstance(c, Node):
                if (tag is None or c.tag == tag) and all(
                        c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                    yield c
                yield from c.iter(tag, **attrs)

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = next(self.iter(tag, **attrs), None)
        assert found is not None, f"no <{tag} {attrs}>"
        return found

    def cls(self, name: str) -> Node:
        found = next((n for n in self.iter() if name in (n.attrs.get("class") or "").split()), None)
        assert found is not None, f"no element of class {name!r} in <{self.tag}>"
        return found


VOID = {"meta", "br", "input", "img", "hr", "link", "rect", "line"}


class Tree(HTMLParser):
    """A strict little DOM: every non-void element must be closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.cur.tag == tag, f"</{tag}> closes <{self.cur.tag}>"
        self.cur = self.cur.parent  # type: ignore[assignment]

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)
        if self.cur.tag == "script":
            self.scripts.append(data)


def parse(page: str) -> Tree:
    tree = Tree()
    tree.feed(page)
    tree.close()
    assert tree.cur is tree.root, f"<{tree.cur.tag}> never closed"
    return tree


def invoke(*args: str) -> Any:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False, env={"NO_COLOR": "1"})
    return res


def pct(rate: float) -> str:
    return f"{round(rate * 100, 1):g}%"


def num(x: float) -> str:
    x = round(float(x), 4)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def raw_reports(paths: list[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in paths:
        data = json.loads(p.read_text(encoding="utf-8"))
        out += data if isinstance(data, list) else [data]
    return out


@pytest.fixture(scope="module")
def agg() -> dict[str, Any]:
    members, warnings = load_members(SECTIONS)
    assert warnings == []
    return aggregate(members)


# ------------------------------------------------------------------ the numbers
def test_headline_and_histogram_equal_hand_counts(agg: dict[str, Any]) -> None:
    # scores: alice 5, bob 3, carol 2, dave 2, erin 2, frank 3, grace 3, heidi 3
    assert agg["headline"] == {"submissions": 8, "median_score": 3.0, "mean_score": 2.88,
                               "max_score": 5.0, "completed_core": 1, "completed_counted": 1,
                               "graded_with_warnings": 0, "nothing_recognised": 0, "not_graded": 0}
    assert [(b["low"], b["count"]) for b in agg["score_histogram"]] == [
        (0, 0), (1, 0), (2, 3), (3, 4), (4, 0), (5, 1)]


def test_step_pass_rates_equal_hand_counts(agg: dict[str, Any]) -> None:
    got = {s["id"]: (s["passed"], s["graded"], s["pass_rate"]) for s in agg["steps"]}
    assert got == {"step1": (5, 8, 0.625), "step2": (6, 8, 0.75), "step3": (5, 8, 0.625),
                   "step4": (6, 8, 0.75), "step5": (1, 8, 0.125)}
    step5 = agg["steps"][4]["statuses"]
    assert step5 == {"passed": 1, "failed": 5, "error": 1, "timeout": 0, "missing": 1}


def test_misconception_table_equals_hand_counts(agg: dict[str, Any]) -> None:
    got = {(d["step"], d["id"]): d["submissions"] for d in agg["diagnoses"]}
    assert got == {
        ("step1", "transpose-all-axes"): ["bob"],
        ("step2", "no-scale"): ["carol"],
        ("step3", "softmax-unstable"): ["carol", "dave"],
        ("step4", "weights-transposed"): ["dave"],
        ("step5", "no-scale"): ["carol"],
        ("step5", "transpose-all-axes"): ["bob"],
        ("step5", "weights-transposed"): ["dave"],
    }
    unstable = next(d for d in agg["diagnoses"] if d["id"] == "softmax-unstable")
    assert (unstable["count"], unstable["share"]) == (2, 0.25)
    # the words come from the catalogue of known mistakes
    from attn_practice.reference.mistakes import MISTAKES

    assert unstable["title"] == MISTAKES["softmax-unstable"].title
    assert unstable["explanation"] == MISTAKES["softmax-unstable"].explanation
    assert [t["id"] for t in agg["top_mistakes"]][0] == "softmax-unstable"
    assert agg["top_mistakes"][0]["count"] == 2


def test_every_id_count_and_list_equal_the_per_submission_reports(agg: dict[str, Any]) -> None:
    """The held-out check: recount straight from the raw report objects."""
    expected: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in raw_reports(SECTIONS):
        for s in r["steps"]:
            for i in s["diagnoses"]:
                expected[(s["id"], i)].append(r["submission"])
    got = {(d["step"], d["id"]): (d["count"], d["submissions"]) for d in agg["diagnoses"]}
    assert got == {k: (len(v), v) for k, v in expected.items()}


def test_undiagnosed_failures_grouped_by_signature(agg: dict[str, Any]) -> None:
    groups = agg["undiagnosed"]
    # erin and frank both negated their scores: one group of two, listed first
    first = groups[0]
    assert (first["step"], first["kind"], first["submissions"]) == ("step1", "value", ["erin", "frank"])
    assert first["test"].startswith("The lesson's worked example")
    assert "-2 but should be 2" in first["example"]
    assert [g["count"] for g in groups] == sorted((g["count"] for g in groups), reverse=True)
    sigs = {(g["step"], g["kind"], tuple(g["submissions"])) for g in groups}
    assert sigs == {("step1", "value", ("erin", "frank")), ("step2", "syntax", ("grace",)),
                    ("step3", "value", ("erin",)), ("step4", "exception", (HEIDI,)),
                    ("step5", "exception", (HEIDI,)), ("step5", "value", ("erin",)),
                    ("step5", "syntax", ("grace",))}
    # no diagnosed step is in a group, and no missing step either (frank's step5)
    assert all("frank" not in g["submissions"] for g in groups if g["step"] == "step5")


def test_test_failure_rates_hardest_first(agg: dict[str, Any]) -> None:
    rates = [t["failure_rate"] for t in agg["tests"]]
    assert rates == sorted(rates, reverse=True)
    loads = [t for t in agg["tests"] if t["name"] == "loads and defines the function"]
    # grace's syntax error: 1 of the 8 that handed step2 in, 1 of the 7 that handed in step5
    assert {(t["step"], t["failed"], t["out_of"]) for t in loads} == {("step2", 1, 8), ("step5", 1, 7)}
    worked = next(t for t in agg["tests"] if t["step"] == "step1" and "worked example" in t["name"])
    assert (worked["failed"], worked["out_of"]) == (2, 8)  # erin, frank


# ------------------------------------------------------------------ the CLI and the page
def test_report_json_is_the_aggregates(agg: dict[str, Any]) -> None:
    res = invoke("report", *map(str, SECTIONS), "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == json.loads(json.dumps(agg))


def test_html_parses_and_every_number_matches_json(tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    res = invoke("report", *map(str, SECTIONS), "--out", str(out))
    assert res.exit_code == 0, res.output
    data = json.loads(invoke("report", *map(str, SECTIONS), "--format", "json").stdout)
    page = out.read_text(encoding="utf-8")
    doc = parse(page).root
    h = data["headline"]
    cards = {c.attrs["data-key"]: c.cls("v").text() for c in doc.find(id="headline").iter("div")
             if c.attrs.get("data-key")}
    assert cards == {"submissions": str(h["submissions"]), "median_score": num(h["median_score"]),
                     "mean_score": num(h["mean_score"]), "completed_core": str(h["completed_core"]),
                     "completed_counted": str(h["completed_counted"])}
    hist = {tr.attrs["data-bin"]: tr.cls("count").text() for tr in doc.find(id="histogram").iter("tr")
            if tr.attrs.get("data-bin")}
    assert hist == {num(b["low"]): str(b["count"]) for b in data["score_histogram"]}
    steps = {tr.attrs["data-step"]: (tr.cls("passed").text(), tr.cls("graded").text(),
                                     tr.cls("rate").text())
             for tr in doc.find(id="step-rates").iter("tr") if tr.attrs.get("data-step")}
    assert steps == {s["id"]: (str(s["passed"]), str(s["graded"]), pct(s["pass_rate"]))
                     for s in data["steps"]}
    rows = {(tr.attrs["data-step"], tr.attrs["data-id"]): (
        tr.cls("count").text(), tr.cls("share").text(), [li.text() for li in tr.iter("li")])
        for tr in doc.find(id="misconceptions").iter("tr") if tr.attrs.get("data-id")}
    assert rows == {(d["step"], d["id"]): (str(d["count"]), pct(d["share"]), d["submissions"])
                    for d in data["diagnoses"]}
    groups = [(tr.attrs["data-step"], tr.attrs["data-test"], tr.attrs["data-kind"],
               tr.cls("count").text(), [li.text() for li in tr.iter("li")])
              for tr in doc.find(id="undiagnosed").iter("tr") if tr.attrs.get("data-kind")]
    assert groups == [(g["step"], g["test"], g["kind"], str(g["count"]), g["submissions"])
                      for g in data["undiagnosed"]]
    tests = [(tr.attrs["data-step"], tr.attrs["data-test"], tr.cls("failed").text(),
              tr.cls("out_of").text(), tr.cls("rate").text())
             for tr in doc.find(id="tests").iter("tr") if tr.attrs.get("data-test")]
    assert tests == [(t["step"], t["name"], str(t["failed"]), str(t["out_of"]),
                      pct(t["failure_rate"])) for t in data["tests"]]
    subs = {d.attrs["data-submission"]: d.cls("score").text()
            for d in doc.find(id="submissions").iter("details") if d.attrs.get("data-submission")}
    assert subs == {s["submission"]: f"{num(s['score'])} / {num(s['max_score'])}"
                    for s in data["submissions"]}
    top = [(li.attrs["data-id"], li.cls("count").text()) for li in doc.find(id="top-mistakes")
           .parent.iter("li") if li.attrs.get("data-id")]
    assert top == [(t["id"], str(t["count"])) for t in data["top_mistakes"]]
    # the section order the issue asks for
    order = [m.group(1) for m in re.finditer(r'<section id="([a-z-]+)"', page)]
    assert order == ["headline", "charts", "misconceptions", "undiagnosed", "tests", "submissions"]


def test_page_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    assert invoke("report", *map(str, SECTIONS), "--out", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    # nothing is fetched: no src/href/url() at all, the only URL is SVG's namespace name
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "url(" not in page and "@import" not in page
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "<svg" in page and "@media print" in page


def test_labels_and_messages_are_escaped(tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    assert invoke("report", *map(str, SECTIONS), "--out", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    tree = parse(page)
    # heidi's exception message carries </script><script>; her folder name carries <b>
    assert "<script>alert" not in page and "<b>heidi" not in page
    assert page.count("<script>") == 1 and len(tree.scripts) == 1
    assert "alert" not in tree.scripts[0]
    assert not any(n.tag == "b" and n.text() == "heidi" for n in tree.root.iter("b"))
    text = tree.root.text()
    assert HEIDI in text and "</script><script>alert('x')</script>" in text


def test_csv_is_the_misconception_table(agg: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "mistakes.csv"
    res = invoke("report", *map(str, SECTIONS), "--format", "csv", "--out", str(out))
    assert res.exit_code == 0
    raw = out.read_bytes().decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    assert [(r["step"], r["id"], int(r["count"]), r["submissions"].split("; ")) for r in rows] == [
        (d["step"], d["id"], d["count"], d["submissions"]) for d in agg["diagnoses"]]
    assert all(float(r["share"]) == d["share"] for r, d in zip(rows, agg["diagnoses"], strict=True))
    assert raw.endswith("\r\n") and "\r\n" in raw[:80]  # RFC 4180 line ends


def test_html_goes_to_stdout_only_when_asked() -> None:
    # `--out -` pipes the page; without --out it goes to a file (tests/test_host_export_report.py)
    res = invoke("report", *map(str, SECTIONS), "--out", "-")
    assert res.exit_code == 0 and res.stdout.startswith("<!DOCTYPE html>")
