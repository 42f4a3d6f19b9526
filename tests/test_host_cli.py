"""`attn-practice host` as an instructor meets it: the installed console script in a subprocess.

The §7 first lines, the class kept across restarts, the warning off
loopback, a kill -9 with saves in flight losing none that was acknowledged,
the export read back by `attn-practice report`, a backup taken while the
class runs, the instructor's password.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import subprocess
import threading
import time

import pytest
from test_host_support import HostProcess, console_script, hosted_class, implementation, resume

pytestmark = pytest.mark.slow


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), *args], capture_output=True, text=True, input=input,
                          timeout=300)


def test_first_lines_health_and_a_clean_stop(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c = h.client()
        assert c.get("/healthz").status_code == 200
        assert c.get("/readyz").status_code == 200
        r = c.get(f"/teach?key={h.key}")
        assert r.status_code == 303 and "attnp_teach=" in r.headers["set-cookie"]
        assert c.get("/metrics").status_code == 200  # the instructor cookie
    finally:
        out, err = h.stop()
    assert h.proc.returncode == 0, err
    assert "Stopped hosting" in err
    assert h.key not in err  # the key is printed once, on stdout


def test_the_class_and_its_links_survive_a_restart(tmp_path):
    h = HostProcess(tmp_path / "class")
    c, token, link = h.join("Restarted")
    r = c.post("/api/step/step1/save", json={"content": "# kept\n", "base": ""},
               headers={"X-Attn-Token": token})
    assert r.status_code == 200
    h.stop()
    again = HostProcess(tmp_path / "class")
    try:
        assert (again.key, again.join_code) == (h.key, h.join_code)
        c2 = again.client()
        assert resume(c2, link.replace(h.base, "")).status_code == 303
        assert c2.get("/api/step/step1").json()["content"] == "# kept\n"
    finally:
        again.stop()


@pytest.mark.parametrize("when", ["right after the links", "after a check"])
def test_ctrl_c_in_the_terminal_stops_the_class_cleanly(tmp_path, when):
    """Ctrl-C reaches every process of the terminal's group, the checking workers too: the
    server alone stops them, with no worker's traceback, nothing left running, exit 0."""
    h = HostProcess(tmp_path / "class")
    try:
        if when == "after a check":
            c, token, _ = h.join("Ann")
            headers = {"X-Attn-Token": token}
            assert c.post("/api/step/step1/save", json={"content": implementation("step1", "correct_einsum"),
                                                        "base": ""}, headers=headers).status_code == 200
            r = c.post("/api/step/step1/check", json={}, headers=headers)
            assert r.json().get("status") == "passed", r.text
    finally:  # whatever failed above, the class is stopped the way under test, never left running
        out, err = h.ctrl_c()
    assert h.proc.returncode == 0, err
    assert "Stopped hosting" in err
    assert "Traceback" not in err and "Error" not in err, err
    assert h.group_alive() == []


def test_binding_beyond_loopback_warns_to_use_tls(tmp_path):
    import subprocess as sp

    proc = sp.Popen([console_script(), "host", str(tmp_path / "c"), "--bind", "0.0.0.0", "--port", "0",
                     "--jobs", "1"], stdout=sp.PIPE, stderr=sp.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("Hosting attn-practice class at http://0.0.0.0:")
        deadline = time.monotonic() + 30
        err = ""
        while "TLS" not in err and time.monotonic() < deadline:
            err += proc.stderr.readline()
        assert "warning" in err and "reverse proxy" in err
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_kill_9_with_saves_in_flight_loses_no_acknowledged_save(tmp_path):
    h = HostProcess(tmp_path / "class")
    acked: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()
    learners = [h.join(f"L{i}") for i in range(3)]

    def saver(i: int) -> None:
        c, token, _ = learners[i]
        n = 0
        while not stop.is_set():
            text = f"# learner {i} save {n}\n" + "x = 1\n" * (n % 50)
            try:
                r = c.post(f"/api/step/step{1 + n % 3}/save", json={"content": text, "base": None},
                           headers={"X-Attn-Token": token})
            except Exception:  # noqa: BLE001 - the server was killed mid-request
                return
            if r.status_code == 200:
                with lock:
                    acked.append((r.json()["version"], text))
            n += 1

    threads = [threading.Thread(target=saver, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    h.kill9()
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert len(acked) >= 60
    again = HostProcess(tmp_path / "class")
    try:
        for i, (_, _, link) in enumerate(learners):
            c = again.client()
            assert resume(c, link.replace(h.base, "")).status_code == 303
            mine = [(v, text) for v, text in acked if text.startswith(f"# learner {i} ")]
            for vid, text in mine:
                r = c.get(f"/api/version/{vid}")
                assert r.status_code == 200, (vid, r.text)
                assert r.json()["content"] == text
    finally:
        again.stop()


def test_the_export_is_read_by_report_and_scored_by_the_course(tmp_path):
    data = tmp_path / "class"
    with hosted_class(data) as hosted:
        a = hosted.browser().join("Ann", student_id=None)
        b = hosted.browser().join("Ben")
        a.save("step1", implementation("step1", "correct_einsum"), base="")
        assert a.check("step1").json()["passed"]
        b.save("step2", implementation("step2", "wrong_scale_by_dk"), base="")
        assert "scale-by-dk" in b.check("step2").json()["diagnoses"]
    out = tmp_path / "class.json"
    r = run("host", "export", str(data), "--format", "json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    reports = json.loads(out.read_text())
    assert len(reports) == 2 and {x["schema"] for x in reports} == {reports[0]["schema"]}
    ann = next(x for x in reports if x["submission"].startswith("Ann"))
    assert ann["score"] == 1.0 and ann["max_score"] == 5.0  # the default course: 5 core steps
    assert {s["id"]: s["status"] for s in ann["steps"]}["step2"] == "missing"
    r = run("report", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    agg = json.loads(r.stdout)
    assert "scale-by-dk" in json.dumps(agg)
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1, step2]\npoints: {step1: 3}\n")
    r = run("host", "export", str(data), "--format", "csv", "--course", str(course))
    assert r.returncode == 0, r.stderr
    rows = {row["submission"].split(" [")[0]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert set(rows) == {"Ann", "Ben"}
    assert (rows["Ann"]["score"], rows["Ann"]["max_score"], rows["Ann"]["step1"]) == ("3", "4", "3")
    assert rows["Ben"]["diagnoses"] == "step2:scale-by-dk"


def test_a_backup_while_the_class_runs_is_a_consistent_copy(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, token, _ = h.join("Backed up")
        c.post("/api/step/step1/save", json={"content": "# 1\n"}, headers={"X-Attn-Token": token})
        r = run("host", "backup", str(tmp_path / "class"), str(tmp_path / "copy.sqlite3"))
        assert r.returncode == 0, r.stderr
        db = sqlite3.connect(tmp_path / "copy.sqlite3")
        assert db.execute("SELECT display_name FROM learners").fetchall() == [("Backed up",)]
        assert db.execute("SELECT content FROM versions").fetchall() == [("# 1\n",)]
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()
        again = run("host", "backup", str(tmp_path / "class"), str(tmp_path / "copy.sqlite3"))
        assert again.returncode != 0 and "exists" in again.stderr
    finally:
        h.stop()


def test_the_instructor_can_sign_in_with_a_password(tmp_path):
    data = tmp_path / "class"
    r = run("host", "set-password", str(data), input="short\nshort\n")
    assert r.returncode != 0 and "at least" in r.stderr
    r = run("host", "set-password", str(data), input="correct horse battery\ncorrect horse battery\n")
    assert r.returncode == 0, r.stderr
    h = HostProcess(data)
    try:
        c = h.client()
        page = c.get("/teach")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        assert c.post("/teach/login", data={"csrf": csrf, "password": "wrong"}).status_code == 403
        r = c.post("/teach/login", data={"csrf": csrf, "password": "correct horse battery"})
        assert r.status_code == 303
        assert c.get("/teach/api/class").status_code == 200
    finally:
        h.stop()


def test_a_save_reaches_the_instructors_stream_and_the_learners_other_tab(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        teach = h.client()
        assert teach.get(f"/teach?key={h.key}").status_code == 303
        c, token, link = h.join("Live")
        other_tab = h.client()
        resume(other_tab, link.replace(h.base, ""))
        got: dict[str, list[str]] = {"teach": [], "tab": []}

        def listen(name: str, client, path: str) -> None:
            with client.stream("GET", path, timeout=30) as r:
                for line in r.iter_lines():
                    got[name].append(line)
                    if line.startswith("data:") and "step3" in line:
                        return

        threads = [threading.Thread(target=listen, args=("teach", teach, "/teach/api/events"), daemon=True),
                   threading.Thread(target=listen, args=("tab", other_tab, "/api/events"), daemon=True)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # both streams open
        r = c.post("/api/step/step3/save", json={"content": "# live\n"}, headers={"X-Attn-Token": token})
        assert r.status_code == 200
        for t in threads:
            t.join(timeout=10)
        assert "event: class" in got["teach"]
        assert "event: file-changed" in got["tab"]
        assert any(r.json()["version"] in line for line in got["tab"])
    finally:
        h.stop()


def test_unusable_parts_are_said_plainly_not_as_bugs(tmp_path):
    r = run("host", str(tmp_path / "c"), "--port", "0", "--db", "mysql://nowhere")
    assert r.returncode == 2 and "postgresql://" in r.stderr and "bug" not in r.stderr
    bad = tmp_path / "course.yaml"
    bad.write_text("steps: [step1, step1]\n")
    r = run("host", "export", str(tmp_path / "c"), "--course", str(bad))
    assert r.returncode == 2 and "course.yaml" in r.stderr and "bug" not in r.stderr
    r = run("host", "backup", str(tmp_path / "missing"), str(tmp_path / "x"))
    assert r.returncode == 2


def test_a_course_that_asks_for_student_ids_gets_them_on_joining(tmp_path):
    """`student_id: true` in the course file makes the join form ask for (and require) one."""
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1, step2, step3, step4, step5]\nstudent_id: true\n", encoding="utf-8")
    proc = HostProcess(tmp_path / "class", "--course", str(course))
    try:
        c = proc.client()
        page = c.get(f"/join/{proc.join_code}")
        assert 'name="student_id"' in page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        refused = c.post(f"/join/{proc.join_code}", data={"csrf": csrf, "display_name": "Ann"})
        assert 'id="resume-link"' not in refused.text  # no id, no learner
        csrf = re.search(r'name="csrf" value="([^"]+)"', refused.text or page.text)
        csrf = csrf.group(1) if csrf else re.search(r'name="csrf" value="([^"]+)"',
                                                     c.get(f"/join/{proc.join_code}").text).group(1)
        joined = c.post(f"/join/{proc.join_code}",
                        data={"csrf": csrf, "display_name": "Ann", "student_id": "s1234"})
        assert 'id="resume-link"' in joined.text
    finally:
        proc.stop()
