"""A class kept in PostgreSQL: its data folder records where the class lives (never the
password), and `host export`, `host backup`, `host set-password` and `host rotate-key` on that
folder use that database or refuse with a message; none opens a new, empty SQLite class.

A real throwaway cluster (tests/pg_cluster.py) and the installed console script.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from pg_cluster import cluster_or_skip
from test_host_support import HostProcess, console_script

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install '.[host]')")
pytestmark = pytest.mark.slow

PASSWORD = "NotKeptAnywhere42"


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), *args], capture_output=True, text=True, input=input,
                          timeout=300)


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


def _with_password(url: str) -> str:
    """The URL with a password in it (the test cluster trusts local connections: it is ignored)."""
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@", 1)


def test_export_backup_and_password_use_the_recorded_database(cluster, tmp_path):
    url = _with_password(cluster.create_database("recorded"))
    data = tmp_path / "class"
    h = HostProcess(data, "--db", url)
    try:
        c, token, _ = h.join("Pat")
        assert c.post("/api/step/step1/save", json={"content": "# mine\n", "base": ""},
                      headers={"X-Attn-Token": token}).status_code == 200
    finally:
        out, err = h.stop()
    assert h.proc.returncode == 0, err
    assert PASSWORD not in out + err
    assert not (data / "class.sqlite3").exists()
    kept = "".join(p.read_text() for p in data.iterdir() if p.is_file())
    assert PASSWORD not in kept, "the data folder keeps the database password"

    r = run("host", "export", str(data), "--format", "json")  # no --db: the folder says where
    assert r.returncode == 0, r.stderr
    assert [x["submission"].split(" [")[0] for x in json.loads(r.stdout)] == ["Pat"]
    assert not (data / "class.sqlite3").exists(), "export opened a new SQLite class"

    r = run("host", "backup", str(data), str(tmp_path / "copy"))
    assert r.returncode == 2 and "PostgreSQL" in r.stderr and "pg_dump" in r.stderr
    assert "Traceback" not in r.stderr and PASSWORD not in r.stderr
    assert not (tmp_path / "copy").exists() and not (data / "class.sqlite3").exists()

    r = run("host", "set-password", str(data), input="correct horse battery\ncorrect horse battery\n")
    assert r.returncode == 0, r.stderr
    assert not (data / "class.sqlite3").exists(), "set-password opened a new SQLite class"
    hashed = cluster.psql("SELECT value FROM settings WHERE key LIKE '%password%'", database="recorded")
    assert hashed.strip(), "the password did not reach the class's database"

    r = run("host", "rotate-key", str(data))
    assert r.returncode == 0, r.stderr
    new_key = r.stdout.split("New instructor key: ", 1)[1].split()[0]
    assert not (data / "class.sqlite3").exists(), "rotate-key opened a new SQLite class"

    again = HostProcess(data)  # a restart without --db: the same class, not an empty one
    try:
        assert again.key == new_key
        c = again.client()
        page = c.get("/teach")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        assert c.post("/teach/login", data={"csrf": csrf, "password": "correct horse battery"}
                      ).status_code == 303
        names = json.dumps(c.get("/teach/api/class").json())
        assert "Pat" in names
    finally:
        again.stop()


def test_an_unreachable_recorded_database_is_refused_plainly(cluster, tmp_path):
    url = cluster.create_database("gone")
    data = tmp_path / "class"
    h = HostProcess(data, "--db", url)
    h.stop()
    cluster.psql('DROP DATABASE "gone"')
    for args in (["host", "export", str(data)], ["host", "backup", str(data), str(tmp_path / "x")]):
        r = run(*args)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr and ("PostgreSQL" in r.stderr or "database" in r.stderr)
    assert not (data / "class.sqlite3").exists()


def test_a_folder_without_a_class_is_refused_not_made_one(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (["host", "export", str(empty)], ["host", "backup", str(empty), str(tmp_path / "x")]):
        r = run(*args)
        assert r.returncode == 2 and "holds no class" in r.stderr, r.stderr
    assert list(empty.iterdir()) == []
