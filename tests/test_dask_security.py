"""Dask with authentication (issue 18 item 5): `--dask local` lets no other local user in.

The LocalCluster that `grade --dask local` starts runs on mutual TLS with
throwaway credentials; another local user (a uid of its own, run through setpriv as
the attack corpus does) who tries to reach the scheduler — in plain TCP, in
TLS without a certificate, or with a certificate of their own — is refused
and runs nothing, and cannot read the credentials. `--dask ADDRESS` takes a
`--dask-security` file, checked before any connection.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.staff import distributed as dist
from attn_practice.grader.staff.dask_security import (
    SecurityError,
    load_security,
    temporary_security,
    write_credentials,
)

pytest.importorskip("distributed")
pytest.importorskip("cryptography")


def test_throwaway_credentials_are_private_and_removed_afterwards():
    with temporary_security() as sec:
        folder = Path(sec.tls_ca_file).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert folder.stat().st_uid == os.geteuid()
        for name in ("ca.pem", "cert.pem", "key.pem"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
        assert sec.require_encryption
        assert sec.tls_client_key == sec.tls_scheduler_key == sec.tls_worker_key == str(folder / "key.pem")
    assert not folder.exists()


def test_each_run_has_its_own_ca(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(mode=0o700)
    b.mkdir(mode=0o700)
    assert write_credentials(a).ca.read_bytes() != write_credentials(b).ca.read_bytes()
    assert b"PRIVATE KEY" in (a / "key.pem").read_bytes() and not list(a.glob("*ca*key*"))


#: Runs as another uid while the grader's LocalCluster is up: every way in must fail.
_INTRUDER = textwrap.dedent(r'''
    import json, os, socket, sys
    address, key, marker = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {"uid": os.getuid()}
    try:
        open(key, "rb").read()
        out["read_key"] = True
    except OSError as exc:
        out["read_key"] = type(exc).__name__
    host, port = address.split("://")[1].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    s.settimeout(5)
    try:  # plain bytes instead of a TLS handshake: the server hangs up
        s.sendall(b"\x00" * 64)
        out["raw"] = repr(s.recv(100))
    except OSError as exc:
        out["raw"] = type(exc).__name__
    s.close()
    import distributed

    def touch(path):
        open(path, "w").write("got in")
        return "in"

    attempts = {"tcp": (address.replace("tls://", "tcp://"), None),
                "tls-no-cert": (address, None),
                "tls-own-cert": (address, distributed.Security.temporary())}
    def attempt(name, addr, sec):
        try:
            kw = {"security": sec} if sec is not None else {}
            with distributed.Client(addr, timeout="4s", **kw) as c:
                out[name] = c.submit(touch, marker, pure=False).result(timeout=10)
        except BaseException as exc:
            out[name] = "refused: " + type(exc).__name__

    import threading
    for name, (addr, sec) in attempts.items():
        # A client whose handshake the scheduler refused may wait on it past its own timeout
        # (seen with a self-made certificate as another uid): no answer is no way in.
        t = threading.Thread(target=attempt, args=(name, addr, sec), daemon=True)
        t.start()
        t.join(30)
        out.setdefault(name, "refused: no answer in 30 s")
    print("RESULT=" + json.dumps(out), flush=True)
    os._exit(0)  # a client still waiting on a refused handshake must not hold the process
''')


def test_another_local_user_is_refused_by_the_local_cluster(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a second user")
    from test_attacks import RUN_AS, _unprivileged_command

    stage = tmp_path / "home"
    stage.mkdir()
    cmd = _unprivileged_command(stage / ".stage", RUN_AS["dask"])
    if cmd is None:
        pytest.skip("cannot run Python as another user here (setpriv/unshare missing)")
    os.chmod(stage, 0o777)
    marker = tmp_path / "open" / "intruder-was-here"
    marker.parent.mkdir()
    os.chmod(marker.parent, 0o777)  # an intruder could write here: only the handshake stops it
    with dist._connect("local", None, 1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2], pure=False).result(timeout=60) == 3  # the grader gets in
        key = client.security.tls_client_key
        env = {"PATH": "/usr/bin:/bin", "HOME": str(stage), "LANG": "C.UTF-8", "TMPDIR": "/tmp",
               "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run([*cmd, sys.executable, "-c", _INTRUDER, address, key, str(marker)], env=env,
                              cwd=str(stage), capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT=")), None)
    if line is None and "No module named" in proc.stderr:
        pytest.skip(f"Python or Dask is not usable as another user: {proc.stderr[-300:]}")
    assert line is not None, proc.stderr[-3000:]
    out = json.loads(line.removeprefix("RESULT="))
    assert out["uid"] == RUN_AS["dask"]
    assert out["read_key"] == "PermissionError"
    for name in ("tcp", "tls-no-cert", "tls-own-cert"):
        assert str(out[name]).startswith("refused"), out
    assert not marker.exists()
    assert not Path(key).parent.exists()  # the credentials went with the cluster


def test_security_file_for_an_address(tmp_path):
    folder = tmp_path / "creds"
    folder.mkdir(mode=0o700)
    write_credentials(folder)
    conf = tmp_path / "dask-security.yaml"
    conf.write_text("tls_ca_file: creds/ca.pem\ntls_client_cert: creds/cert.pem\n"
                    "tls_client_key: creds/key.pem\nrequire_encryption: true\n")
    sec = load_security(conf)
    assert sec.tls_client_key == str(folder / "key.pem") and sec.require_encryption
    os.chmod(folder / "key.pem", 0o644)
    with pytest.raises(SecurityError, match="readable by others"):
        load_security(conf)
    conf.write_text("tls_ca_file: creds/ca.pem\nscheduler_password: x\n")
    with pytest.raises(SecurityError, match="unknown setting"):
        load_security(conf)


def test_cli_dask_security_is_checked_before_grading(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "step1_scores.py").write_text("def dot_scores(Q, K):\n    return Q @ K.T\n")
    conf = tmp_path / "sec.yaml"
    conf.write_text("tls_ca_file: nowhere.pem\n")
    r = CliRunner().invoke(cli, ["grade", str(sub), "--dask", "tls://127.0.0.1:1", "--dask-security",
                                 str(conf), "--no-cache", "--format", "json"])
    assert r.exit_code == 2 and "nowhere.pem" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["grade", str(sub), "--dask", "local", "--dask-security", str(conf),
                                 "--no-cache", "--format", "json"])
    assert r.exit_code == 2 and "throwaway" in r.output
    r = CliRunner().invoke(cli, ["grade", str(sub), "--dask-security", str(conf), "--format", "json"])
    assert r.exit_code == 2 and "--dask ADDRESS" in r.output
