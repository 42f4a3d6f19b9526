"""The sandbox machinery itself: wire format, the jail a learner module runs in, killing, timeouts.

`tests/test_attacks.py` grades whole hostile submissions; these tests pin
the pieces underneath, each on a tiny learner module passed as `files=`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attn_practice
from attn_practice.grader.sandbox import protocol
from attn_practice.grader.sandbox.failures import clean_reply as _clean_reply
from attn_practice.grader.sandbox.launcher import SANDBOX_UID_BASE, Launcher
from attn_practice.grader.sandbox.learner import Budget, Learner, LearnerError, Limits
from attn_practice.grader.sandbox.submission import copy_submission

PACKAGE = Path(attn_practice.__file__).resolve().parent
LIMITS = Limits(call_timeout=1.0, load_timeout=3.0, memory=256 * 1024**2)


@pytest.fixture(scope="module")
def launcher():
    with Launcher() as la:
        yield la


@pytest.fixture(scope="module")
def jail(launcher: Launcher) -> dict[str, Any]:
    return launcher.info()


def learner(launcher: Launcher, source: str, *, function: str = "f", params: tuple[str, ...] = ("x",),
            limits: Limits = LIMITS, **kw: Any) -> Learner:
    return Learner(launcher, Path("probe-dir"), step_id="step1", module="probe", function=function,
                   params=params, limits=limits, display_dir="probe-dir", files={"probe.py": source.encode()},
                   **kw)


def run_probe(launcher: Launcher, body: str) -> dict[str, Any]:
    """Run `body` (which fills a dict `out`) inside a sandbox; return that dict.

    `body` may call `attempt(fn)`: "ok", or the name of the exception `fn()` raised.
    """
    source = ("import json, os, sys\nimport numpy as np\n\n\n"
              "def attempt(fn):\n    try:\n        fn()\n        return 'ok'\n"
              "    except BaseException as exc:\n        return type(exc).__name__\n\n\n"
              "def f(x):\n    out = {}\n")
    source += "".join(f"    {line}\n" for line in body.strip().splitlines())
    source += "    print('PROBE=' + json.dumps(out))\n    return x\n"
    lr = learner(launcher, source)
    try:
        result = lr.call(np.zeros(1))
    finally:
        lr.close()
    line = [ln for ln in result.output.splitlines() if ln.startswith("PROBE=")][-1]
    return json.loads(line.removeprefix("PROBE="))


# ---------------------------------------------------------------- protocol
def test_protocol_round_trip() -> None:
    values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True), np.arange(3, dtype=np.int16),
              np.zeros((0, 4)), 3, 2.5, True, None, np.float64(1.5)]
    blobs: list[bytes] = []
    specs = protocol.pack_values(values, blobs)
    back = protocol.unpack_values(json.loads(json.dumps(specs)), blobs)
    for a, b in zip(values, back, strict=True):
        if isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and b.dtype == a.dtype and np.array_equal(a, b)
            assert b.flags.writeable and b.base is None  # a copy, never a view of the buffer
        else:
            assert b == a


@pytest.mark.parametrize("desc,data", [
    ({"d": "|O", "s": [1]}, b"\0" * 8),  # objects: would mean unpickling
    ({"d": "<c16", "s": [1]}, b"\0" * 16),  # complex: not a number we judge
    ({"d": "|V8", "s": [1]}, b"\0" * 8),
    ({"d": "f8,i4", "s": [1]}, b"\0" * 12),  # structured
    ({"d": "(2,)<f8", "s": [1]}, b"\0" * 16),  # sub-array
    ({"d": "<f8", "s": [2]}, b"\0" * 8),  # size does not match the shape
    ({"d": "<f8", "s": [-1]}, b""),
    ({"d": "<f8", "s": [True]}, b"\0" * 8),
    ({"d": "<f8", "s": "12"}, b"\0" * 8),
    ({"d": "<f8", "s": [1.0]}, b"\0" * 8),
    ({"d": "<f8", "s": [1] * 65}, b"\0" * 8),
    ({"d": "<f8", "s": [1 << 62, 0]}, b""),
    ({"d": "<f8", "s": [0, 1 << 39, 1 << 39]}, b""),  # empty, yet "too big" for NumPy
    ({"d": ["<f8"], "s": [1]}, b"\0" * 8),
])
def test_protocol_refuses_anything_but_plain_numbers(desc: dict[str, Any], data: bytes) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_array(desc, data)


@pytest.mark.parametrize("specs", [
    "not a list", [1], [{"t": "x"}], [{"t": "a", "i": 3, "d": "<f8", "s": []}],
    [{"t": "i", "v": "7"}], [{"t": "f", "v": [1]}], [{"t": "a", "i": True, "d": "<f8", "s": []}],
])
def test_protocol_refuses_bad_value_specs(specs: Any) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.unpack_values(specs, [b"\0" * 8])


def _raw(header: bytes, blob: bytes = b"", total: int | None = None) -> bytes:
    return struct.pack("!II", len(header), len(blob) if total is None else total) + header + blob


@pytest.mark.parametrize("message", [
    _raw(b"[" * 200_000 + b"]" * 200_000),  # deep nesting: RecursionError inside json
    _raw(b"[1, 2]"),  # not an object
    _raw(b"{not json"),
    _raw(json.dumps({"blobs": [4, -4]}).encode()),
    _raw(json.dumps({"blobs": ["8"]}).encode(), b"\0" * 8),
    _raw(json.dumps({"blobs": [8]}).encode(), b"\0" * 8, total=1 << 30),  # claims too much
])
def test_protocol_refuses_malformed_messages(message: bytes) -> None:
    a, b = socket.socketpair()
    with a, b:
        threading.Thread(target=lambda: (a.sendall(message), a.close()), daemon=True).start()
        with pytest.raises(protocol.ProtocolError):
            protocol.recv(b, max_bytes=1 << 20, deadline=time.monotonic() + 5)


def test_protocol_deadline_bounds_a_trickling_peer() -> None:
    """A peer sending one byte at a time never stretches a wait past its deadline."""
    a, b = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        msg = _raw(json.dumps({"ok": True, "pad": "x" * 600}).encode())  # ~30 s of trickle
        for byte in msg:
            if stop.is_set():
                return
            try:
                a.send(bytes([byte]))
            except OSError:
                return
            time.sleep(0.05)

    threading.Thread(target=trickle, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        protocol.recv(b, deadline=t0 + 0.5)
    assert time.monotonic() - t0 < 15.0  # far short of the trickle, however loaded the machine
    stop.set()
    a.close()
    b.close()


def test_protocol_peer_closed() -> None:
    a, b = socket.socketpair()
    a.close()
    with b, pytest.raises(protocol.PeerClosed):
        protocol.recv(b, deadline=time.monotonic() + 5)


def test_reply_fields_are_cleaned() -> None:
    reply = _clean_reply({"ok": 1, "line": "7", "seconds": "slow", "mutated": [0, "1", -1, 2.0],
                          "output": "\x1b[2J\rfake PASSED\x07\n", "imported_steps": "abc",
                          "message": ["not", "text"], "signature": "f(x)\x00"})
    assert reply["ok"] is False  # only the JSON literal true counts
    assert reply["line"] == 0 and reply["seconds"] == 0.0 and reply["mutated"] == [0]
    assert reply["imported_steps"] == [] and reply["message"] == ""
    assert "\x1b" not in reply["output"] and "\r" not in reply["output"] and "\x07" not in reply["output"]
    assert reply["output"].endswith("fake PASSED\ufffd\n")
    assert "\x00" not in reply["signature"]


# ---------------------------------------------------------------- the jail
def test_sandbox_process_is_locked_down(launcher: Launcher, jail: dict[str, Any]) -> None:
    facts = run_probe(launcher, """
import ctypes, resource, stat
out["uid"] = os.getuid(); out["euid"] = os.geteuid(); out["gid"] = os.getgid()
out["groups"] = os.getgroups()
out["nnp"] = str(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))  # PR_GET_NO_NEW_PRIVS
out["sid_is_pid"] = os.getsid(0) == os.getpid()
out["stdin"] = sys.stdin.read() + os.read(0, 10).decode()
out["fds"] = []
out["fd_targets"] = []  # /proc is unreadable in the sandbox: describe fds by fstat instead
for fd in range(1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    out["fds"].append(fd)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 0 and st.st_size > 0:
        out["fd_targets"].append(f"regular file {fd}")
try:
    open("/proc/self/status").read()
    out["proc"] = "readable"
except OSError:
    out["proc"] = "hidden"
out["limits"] = {name: resource.getrlimit(getattr(resource, name))[0] for name in
                 ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE")}
out["env"] = sorted(os.environ)
out["path0"] = sys.path[0]
out["cwd"] = os.getcwd()
out["numpy"] = np.__file__
out["attn"] = [m for m in sys.modules if m.startswith("attn_practice")]
""")
    if os.geteuid() == 0:
        assert facts["uid"] >= SANDBOX_UID_BASE and facts["euid"] == facts["uid"] == facts["gid"]
        assert facts["groups"] == []
    assert facts["nnp"] == "1"
    assert facts["sid_is_pid"]
    assert facts["stdin"] == ""
    # stdio, the socket, the (unlinked) output file and sys.stdin: no inherited regular files
    assert facts["fd_targets"] == [], facts["fd_targets"]
    assert len(facts["fds"]) <= 8, facts["fds"]
    if jail.get("landlock_abi"):
        assert facts["proc"] == "hidden"  # e.g. /proc/<grader>/mem and environ stay out of reach
    lim = facts["limits"]
    assert lim["RLIMIT_CPU"] == LIMITS.cpu and lim["RLIMIT_CORE"] == 0
    assert lim["RLIMIT_FSIZE"] == LIMITS.file_size and lim["RLIMIT_NOFILE"] == LIMITS.open_files
    assert LIMITS.memory < lim["RLIMIT_AS"] < LIMITS.memory + 2 * 1024**3
    if os.geteuid() == 0:
        assert lim["RLIMIT_NPROC"] == LIMITS.processes
    assert not any(k.startswith(("PYTHONPATH", "PYTHONSTARTUP", "ATTNP_CANARY", "PYTEST")) for k in facts["env"])
    assert facts["path0"] == facts["cwd"] and not facts["numpy"].startswith(facts["cwd"])
    assert facts["attn"] == []


def test_grader_environment_does_not_reach_the_sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Variables of the grader's environment (e.g. PYTHONPATH) never shape the sandbox interpreter."""
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "sitecustomize.py").write_text("import os\nos.environ['ATTNP_CANARY'] = 'ran'\n")
    monkeypatch.setenv("PYTHONPATH", str(evil))
    monkeypatch.setenv("PYTHONSTARTUP", str(evil / "sitecustomize.py"))
    monkeypatch.setenv("PYTHONINSPECT", "1")
    monkeypatch.setenv("ATTNP_CANARY", "secret")
    with Launcher() as la:
        facts = run_probe(la, "out['env'] = dict(os.environ)\nout['path'] = sys.path")
    assert "ATTNP_CANARY" not in facts["env"]
    assert not any(str(evil) in p for p in facts["path"])


def test_grader_package_is_hidden(launcher: Launcher, jail: dict[str, Any]) -> None:
    if not jail["package_hidden"]:
        pytest.skip(f"no way to hide the package here: {jail}")
    reference = PACKAGE / "reference" / "attention.py"
    facts = run_probe(launcher, f"""
out["read"] = attempt(lambda: open({str(reference)!r}).read())
out["list"] = attempt(lambda: os.listdir({str(PACKAGE)!r}))
out["import"] = attempt(lambda: __import__("attn_practice.reference.attention"))
sys.meta_path[:] = [f for f in sys.meta_path if "Blocker" not in type(f).__name__]
out["unblocked"] = attempt(lambda: __import__("attn_practice.reference.attention"))
out["numpy_file"] = attempt(lambda: open(np.__file__).read())
""")
    assert facts["read"] != "ok" and facts["import"] != "ok" and facts["unblocked"] != "ok"
    assert facts["numpy_file"] == "ok"  # the rest of the Python installation stays readable


def test_landlock_blocks_writes_network_and_signals(launcher: Launcher, jail: dict[str, Any]) -> None:
    if jail["landlock_abi"] < 1:
        pytest.skip("no Landlock on this kernel")
    facts = run_probe(launcher, """
import socket, signal
out["tmp"] = attempt(lambda: open("/tmp/attnp-sandbox-probe", "w").close())
out["cwd"] = attempt(lambda: open("written.txt", "w").close())
out["devnull"] = attempt(lambda: open(os.devnull, "w").write("x"))
out["tcp"] = attempt(lambda: socket.create_connection(("127.0.0.1", 9), timeout=0.2))
out["zygote"] = attempt(lambda: os.kill(os.getppid(), 0))
out["tty"] = attempt(lambda: open("/dev/pts/ptmx", "rb").close())
out["urandom"] = attempt(lambda: open("/dev/urandom", "rb").read(4))
out["home"] = attempt(lambda: os.listdir(os.path.expanduser("~" + __import__("pwd").getpwuid(0).pw_name)))
""")
    assert facts["tmp"] != "ok" and facts["cwd"] != "ok"
    assert facts["tty"] != "ok" and facts["urandom"] == "ok"
    if os.geteuid() == 0:
        assert facts["home"] != "ok"  # the grading user's home (keys, tokens) stays private
    assert facts["devnull"] == "ok"
    if jail["landlock_abi"] >= 4 or jail["network_namespace"]:
        assert facts["tcp"] != "ok"
    if jail["landlock_abi"] >= 6 or jail["uid_drop"]:
        assert facts["zygote"] == "PermissionError"
    assert not os.path.exists("/tmp/attnp-sandbox-probe")


def test_sandbox_can_signal_only_itself(launcher: Launcher, jail: dict[str, Any]) -> None:
    """Whatever the uid: no signal reaches the fork server, the grader or anyone else."""
    if not (jail["seccomp"] or jail["uid_drop"] or jail["landlock_abi"] >= 6):
        pytest.skip(f"no signal isolation available here: {jail}")
    facts = run_probe(launcher, """
import signal, threading
out["self"] = attempt(lambda: os.kill(os.getpid(), 0))
out["group"] = attempt(lambda: os.kill(0, 0))
out["zygote"] = attempt(lambda: os.kill(os.getppid(), 0))
out["everyone"] = attempt(lambda: os.kill(-1, 0))
import socket
out["socket"] = attempt(lambda: socket.socket(socket.AF_UNIX).close())
out["socketpair"] = attempt(lambda: socket.socketpair())
out["init"] = attempt(lambda: os.kill(1, 0))
t = threading.Thread(target=lambda: None)
t.start()
t.join()
out["thread"] = "ok"
""")
    assert facts["self"] == facts["group"] == facts["thread"] == "ok"
    assert facts["zygote"] == facts["init"] == "PermissionError"
    assert facts["everyone"] != "ok"
    if jail["seccomp"]:
        assert facts["socket"] == facts["socketpair"] == "PermissionError"


def test_readable_paths_nest(tmp_path: Path) -> None:
    """Only needed paths are readable; hidden ones inside them switch reading off again."""
    from attn_practice.grader.sandbox.landlock import (
        readable_everything_but as _readable_everything_but,
    )

    root = tmp_path.resolve()
    for p in ("home/u/.ssh", "home/u/repo/.venv/site/attn_practice/reference", "home/u/repo/.venv/site/numpy",
              "home/v", "opt/py", "tmp/x"):
        (root / p).mkdir(parents=True)
    hidden = [root / "home/u", root / "home/u/repo/.venv/site/attn_practice", root / "tmp"]
    rules = _readable_everything_but([str(h) for h in hidden], [str(root / "home/u/repo/.venv")])
    mine = sorted(os.path.relpath(r, root) for r in rules if r.startswith(str(root) + "/"))
    # Not "home/v" or "opt": another checkout or another user's files stay unreadable.
    assert mine == ["home/u/repo/.venv/site/numpy"]


def test_python_and_scipy_importable_in_sandbox(launcher: Launcher) -> None:
    """Modules not preloaded (stdlib, SciPy) import fine, even with Python under a private home."""
    pytest.importorskip("scipy.special")
    facts = run_probe(launcher, """
import statistics, fractions, decimal, scipy.special
out["softmax"] = float(scipy.special.softmax([0.0, 0.0])[0])
out["mean"] = statistics.mean([1, 2])
""")
    assert facts == {"softmax": 0.5, "mean": 1.5}


# ---------------------------------------------------------------- output
def test_output_is_bounded_per_call_and_cleaned(launcher: Launcher) -> None:
    lr = learner(launcher, """
import sys
n = [0]


def f(x):
    n[0] += 1
    if n[0] == 1:
        try:
            sys.stdout.write("y" * (9 << 20))  # beyond the 8 MiB file-size limit
        except OSError:
            pass
        return x
    print("\\x1b[2J\\rcall", n[0], __file__)
    return x
""")
    try:
        first = lr.call(np.zeros(1)).output
        second = lr.call(np.zeros(1)).output
    finally:
        lr.close()
    assert len(first) < 5000 and "more bytes of output not shown" in first
    assert "call 2" in second and len(second) < 200  # the capture starts afresh every call
    assert "\x1b" not in second and "\r" not in second
    assert "probe-dir/probe.py" in second and "attnp-" not in second  # the learner's path, not ours


# ---------------------------------------------------------------- killing and timeouts
def test_trickling_reply_cannot_stretch_the_call_timeout(launcher: Launcher) -> None:
    """Learner code writing to its socket a byte at a time still times out on time."""
    lr = learner(launcher, """
import os, stat, time


def f(x):
    fd = next(fd for fd in range(3, 64) if _is_sock(fd))
    for byte in (b"\\x00\\x00\\x00\\x40\\x00\\x00\\x00\\x00" + b"{" * 200):
        os.write(fd, bytes([byte]))
        time.sleep(0.2)
    return x


def _is_sock(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False
""")
    t0 = time.monotonic()
    try:
        with pytest.raises(LearnerError) as info:
            lr.call(np.zeros(1))
    finally:
        lr.close()
    # Stopped at its limit either way: by the grader's deadline (timeout), or by the
    # sandbox's own clock, whose reply then lands after the learner's bytes (a malformed answer).
    assert info.value.kind in ("timeout", "crash")
    assert time.monotonic() - t0 < LIMITS.call_timeout + 20.0


def test_submission_budget_stops_a_slow_submission(launcher: Launcher) -> None:
    budget = Budget(1.0)
    source = "import time\n\n\ndef f(x):\n    time.sleep(0.3)\n    return x\n"
    first, second = learner(launcher, source, budget=budget), learner(launcher, source, budget=budget)
    kinds = []
    try:
        for lr in (first, second, first, second, first, second):
            try:
                lr.call(np.zeros(1))
                kinds.append("ok")
            except LearnerError as exc:
                kinds.append(exc.kind)
                assert "submission" in exc.failure.summary
    finally:
        first.close()
        second.close()
    assert kinds[:3] == ["ok", "ok", "ok"] and kinds[-1] == "timeout"
    assert budget.used < 2.0


def test_memory_message_names_the_limit(launcher: Launcher) -> None:
    lr = learner(launcher, "import numpy as np\n\n\ndef f(x):\n    return np.ones(1 << 40)\n")
    try:
        with pytest.raises(LearnerError) as info:
            lr.call(np.zeros(1))
    finally:
        lr.close()
    assert "ran out of memory (it may use at most 256 MiB)" in info.value.failure.summary


def test_reap_kills_the_whole_tree(launcher: Launcher) -> None:
    lr = learner(launcher, """
import os, signal, time


def f(x):
    for _ in range(3):
        try:
            if os.fork() == 0:
                os.setsid()
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                if os.fork() == 0:
                    while True:
                        time.sleep(1)
                os._exit(0)
        except OSError:
            pass
    return x
""")
    lr.call(np.zeros(1))
    assert lr.sandbox is not None
    zygote = launcher.pid
    time.sleep(0.2)
    lr.close()
    left = [p for p in _descendants(zygote)]
    assert left == []


def _descendants(root: int | None) -> list[int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                data = open(f"/proc/{name}/stat", "rb").read()
                parents[int(name)] = int(data[data.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out = []
    for pid in parents:
        p = pid
        while p in parents and p > 1:
            p = parents[p]
            if p == root:
                out.append(pid)
                break
    return out


def test_death_messages_say_what_happened(launcher: Launcher) -> None:
    cases = {
        "import os\n\n\ndef f(x):\n    os._exit(3)\n": "exit code 3",
        "import os, signal\n\n\ndef f(x):\n    os.kill(os.getpid(), signal.SIGSEGV)\n": "segmentation fault",
        "import os, stat\n\n\ndef f(x):\n    for fd in range(3, 64):\n        try:\n"
        "            if stat.S_ISSOCK(os.fstat(fd).st_mode):\n                os.close(fd)\n"
        "        except OSError:\n            pass\n    while True:\n        pass\n":
            "stopped talking to the grader",
    }
    for source, words in cases.items():
        lr = learner(launcher, source)
        try:
            with pytest.raises(LearnerError) as info:
                lr.call(np.zeros(1))
        finally:
            lr.close()
        assert info.value.kind in ("crash", "timeout")
        assert words in info.value.failure.summary


def test_launcher_restarts_a_dead_fork_server() -> None:
    with Launcher() as la:
        lr = learner(la, "def f(x):\n    return x\n")
        lr.call(np.zeros(1))
        old = la.pid
        assert old is not None
        os.kill(old, signal.SIGKILL)
        time.sleep(0.1)
        with pytest.raises(LearnerError):
            lr.call(np.zeros(1))  # its sandbox died with the fork server
        lr.close()
        again = learner(la, "def f(x):\n    return x + 1\n")
        try:
            assert again.call(np.zeros(1)).value.tolist() == [1.0]
        finally:
            again.close()
        assert la.pid != old


# ---------------------------------------------------------------- copying the submission
def test_copy_skips_fifos_links_and_outsiders(tmp_path: Path) -> None:
    src = tmp_path / "sub"
    src.mkdir()
    (src / "step1_scores.py").write_text("x = 1\n")
    os.mkfifo(src / "step2_scale.py")  # opening it to read would block forever
    os.mkfifo(src / "helper.py")
    os.symlink(PACKAGE / "reference" / "attention.py", src / "step3_softmax.py")
    pkg = src / "pkg"
    pkg.mkdir()
    os.mkfifo(pkg / "__init__.py")
    (src / "notes.txt").write_text("not python")
    dst = tmp_path / "dst"
    t0 = time.monotonic()
    copy_submission(src, dst, first=["step2_scale.py", "step1_scores.py"])
    assert time.monotonic() - t0 < 5
    assert sorted(p.name for p in dst.iterdir()) == ["step1_scores.py"]
    assert not any(stat.S_ISFIFO(p.lstat().st_mode) or p.is_symlink() for p in dst.rglob("*"))


def test_fifo_step_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.engine.engine import Engine, RunOptions

    os.mkfifo(tmp_path / "step1_scores.py")
    step1 = [e for e in load_catalog() if e.id == "step1"]
    t0 = time.monotonic()
    with Engine(RunOptions(max_examples=2, limits=LIMITS)) as engine:
        report = engine.grade(tmp_path, step1)
    assert time.monotonic() - t0 < 30
    assert report.steps[0].status.value == "error"


def test_call_overhead_stays_small(launcher: Launcher) -> None:
    lr = learner(launcher, "def f(x):\n    return x\n")
    x = np.ones((4, 4))
    try:
        lr.call(x)
        t0 = time.perf_counter()
        for _ in range(200):
            lr.call(x)
        per_call = (time.perf_counter() - t0) / 200
    finally:
        lr.close()
    assert per_call < 0.02, f"{per_call * 1000:.2f} ms per call"
