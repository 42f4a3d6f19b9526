"""Hostile submissions against the grader (CONTRACT §4, last paragraph).

Each `tests/submissions/attack_<name>/` folder holds step files (usually the
attack in some steps and correct solutions in the others) and an
`expected.yaml`:

    steps:                      # every step present in the folder
      step1: passed | failed | error | timeout | missing | not-passed
      step2: {status: ..., message: "..." (or a list: any of them), note: "...", output_has: "...",
              output_lacks: "...", tests_lack: "..."}
    cwd: submission             # grade with the submission as current directory
    marker_files: [...]         # files learner code would create if it got out
    marker_env: NAME            # variable it would set if it ran in the grader
    requires: hidden-package | landlock | landlock-net | signal-isolation | cgroup
    slow: true

For every attack the grade must match, and afterwards the grader must be
alive, no process may remain (neither a descendant of the fork server nor
anything running under a sandbox uid), and neither the submission nor the
installed package may have changed. Grading twice gives the same JSON, and
a correct submission graded before and after all attacks gets the same,
full marks.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

import attn_practice
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport, without_timings
from attn_practice.grader.sandbox.launcher import SANDBOX_UID_BASE, Limits

HERE = Path(__file__).resolve().parent
SUBMISSIONS = HERE / "submissions"
PACKAGE = Path(attn_practice.__file__).resolve().parent
ATTACKS = sorted(p.name for p in SUBMISSIONS.glob("attack_*") if (p / "expected.yaml").is_file())
MARKER = b"ATTN-ATTACK"
#: Short limits keep the suite fast; the memory limit is what learner code may add.
LIMITS = Limits(call_timeout=1.0, load_timeout=2.0, memory=256 * 1024**2, max_timeouts=1, max_deaths=2)
OPTIONS = RunOptions(max_examples=5, limits=LIMITS, diagnose=False)
#: Attacks graded a second time to check the JSON is identical.
DETERMINISM = ("attack_exit_call", "attack_fork_storm", "attack_output_flood", "attack_forged_replies",
               "attack_daemon", "attack_memory", "attack_lying_objects", "attack_mutate_inputs")
STATUSES = {"passed", "failed", "error", "timeout", "missing", "not-passed"}

_FIRST_GRADES: dict[str, dict[str, Any]] = {}


def _spec(name: str) -> dict[str, Any]:
    return yaml.safe_load((SUBMISSIONS / name / "expected.yaml").read_text(encoding="utf-8"))


def _params() -> list[Any]:
    out = []
    for name in ATTACKS:
        marks = [pytest.mark.slow] if _spec(name).get("slow") else []
        out.append(pytest.param(name, marks=marks, id=name.removeprefix("attack_")))
    return out


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def engine():
    with Engine(OPTIONS) as e:
        yield e


@pytest.fixture(scope="module")
def jail(engine: Engine) -> dict[str, Any]:
    return engine.launcher.info()


CORRECT = {
    "step1_scores.py": "def dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n",
    "step2_scale.py": "def scale_scores(scores, d_k):\n    return scores / np.sqrt(d_k)\n",
    "step3_softmax.py": "def softmax(x, axis=-1):\n    m = np.max(x, axis=axis, keepdims=True)\n"
                        "    e = np.exp(x - np.where(np.isfinite(m), m, 0.0))\n"
                        "    return e / np.sum(e, axis=axis, keepdims=True)\n",
    "step4_weighted_sum.py": "def weighted_sum(weights, V):\n    return weights @ V\n",
    "step5_attention.py": "from step3_softmax import softmax\n\n\ndef attention(Q, K, V):\n"
                          "    return softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])) @ V\n",
}


@pytest.fixture(scope="module")
def control(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A correct submission, graded before any attack runs."""
    root = tmp_path_factory.mktemp("control")
    for name, body in CORRECT.items():
        (root / name).write_text("import numpy as np\n\n" + body, encoding="utf-8")
    report = engine.grade(root, label="control")
    assert report.passed, _summary(report)
    return root, _plain(report)


# ---------------------------------------------------------------- helpers
def _plain(report: GradeReport) -> dict[str, Any]:
    return without_timings(json.loads(report.to_json()))


def _summary(report: GradeReport) -> str:
    lines = []
    for s in report.steps:
        bad = [t.message for t in s.tests if t.status.value != "passed"]
        lines.append(f"{s.id}: {s.status.value} {s.error or (bad[0] if bad else '')}"[:300])
    return "\n".join(lines)


def _processes() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (uid, ppid, cmdline) for every process we can see."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            ppid = int(data[data.rfind(b")") + 2:].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = (uid, ppid, cmd)
    return out


def _status_uids(pid: int) -> tuple[int, ...]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return tuple(int(x) for x in line.split()[1:])
    except OSError:
        pass
    return ()


def leftovers(before: set[int], zygote: int | None, *, wait: float = 2.0) -> list[str]:
    """New processes that descend from our fork server or run under a sandbox uid.

    Sandbox uids of *other* fork servers (another grader running on this
    machine) are not ours to judge.
    """
    deadline = time.monotonic() + wait
    while True:
        procs = _processes()
        # Any fork server (this entry module or an older one: other checkouts run here too).
        others = {p for p, (_, _, cmd) in procs.items()
                  if b"attn_practice.grader.sandbox." in cmd and b"\x00zygote\x00" in cmd and p != zygote}

        def chain(pid: int, procs: dict[int, tuple[int, int, bytes]] = procs) -> set[int]:
            seen: set[int] = set()
            while pid in procs and pid not in seen and pid > 1:
                seen.add(pid)
                pid = procs[pid][1]
            return seen

        bad = []
        for pid, (uid, _ppid, cmd) in procs.items():
            if pid in before or pid == zygote:
                continue
            ancestors = chain(pid)
            sandbox_uid = uid >= SANDBOX_UID_BASE or any(u >= SANDBOX_UID_BASE for u in _status_uids(pid))
            if (zygote is not None and zygote in ancestors - {pid}) or (sandbox_uid and not ancestors & others):
                bad.append(f"pid {pid} uid {uid}: {cmd[:80]!r}")
        if not bad or time.monotonic() > deadline:
            return bad
        time.sleep(0.05)


def kernel_objects(jail: dict[str, Any], uids: set[int] | None = None) -> set[str]:
    """What a sandbox could leave behind besides processes and files of the package.

    SysV IPC objects visible here (as an ordinary user the fork server shares
    our IPC namespace), keys of sandbox uids (`/proc/key-users` is global),
    sandbox temp folders in the fork server's root, and its cgroups. With `uids`, keys
    count only for those sandbox uids (the ones our launcher used): other graders on a
    busy machine have sandboxes of their own.
    """
    out: set[str] = set()
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        out.update(f"SysV {kind} key {r.split()[0]} id {r.split()[1]}" for r in rows if len(r.split()) > 2)
    try:
        with open("/proc/key-users") as f:
            for line in f:
                uid = int(line.split(":")[0])
                if uid >= SANDBOX_UID_BASE and (uids is None or uid in uids):
                    out.add(f"keys of sandbox uid {uid}")
    except (OSError, ValueError):
        pass
    if jail.get("root"):
        out.update(f"temp folder {p}" for p in glob.glob(os.path.join(glob.escape(jail["root"]), "s-*")))
    for parent in jail.get("cgroup_dirs", []):
        pattern = os.path.join(glob.escape(parent), glob.escape(jail.get("cgroup_prefix", "")) + "*")
        out.update(f"cgroup {p}" for p in glob.glob(pattern))
    return out


def new_kernel_objects(before: set[str], jail: dict[str, Any], *, wait: float = 10.0,
                       uids: set[int] | None = None) -> list[str]:
    """`kernel_objects` that were not there before (given a moment for the kernel to collect keys)."""
    deadline = time.monotonic() + wait
    while True:
        new = sorted(kernel_objects(jail, uids) - before)
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.05)


_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".ruff_cache", ".hypothesis", ".mypy_cache", "tests",
              "attn_practice.egg-info", ".venv", "bench"}


def digest(root: Path, skip: set[str] = frozenset()) -> dict[str, tuple[str, int]]:
    """path -> (sha256, owner uid) of every file under `root`."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
                if os.path.islink(p):
                    data = os.readlink(p).encode()
                else:
                    with open(p, "rb") as f:
                        data = f.read()
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (hashlib.sha256(data).hexdigest(), st.st_uid)
    return out


def package_changes(before: dict[str, tuple[str, int]], root: Path) -> list[str]:
    """Changed files of the installed package that learner code could have caused.

    Other people may edit the package while the suite runs: a change is the
    attack's doing when the file carries the attacks' marker, is named after
    it, or belongs to a sandbox uid; any other change is only a warning.
    """
    after = digest(root, _SKIP_DIRS)
    changed = sorted({k for k in before.keys() | after.keys() if before.get(k) != after.get(k)})
    blamed = []
    for rel in changed:
        p = root / rel
        try:
            data = p.read_bytes() if p.is_file() else b""
        except OSError:
            data = b""
        owner = after.get(rel, ("", 0))[1]
        if MARKER in data or "ATTN-ATTACK" in rel.upper() or "attn_attack" in rel or owner >= SANDBOX_UID_BASE:
            blamed.append(rel)
    if changed and not blamed:
        warnings.warn(f"package files changed during the attack (not by it?): {changed[:5]}", stacklevel=2)
    return blamed


def _requirement_met(req: str | None, jail: dict[str, Any]) -> bool:
    abi = int(jail.get("landlock_abi", 0))
    if req is None:
        return True
    if req == "hidden-package":
        return bool(jail.get("package_hidden"))
    if req == "landlock":
        return abi >= 1
    if req == "landlock-net":
        return abi >= 4 or (abi >= 1 and bool(jail.get("network_namespace")))
    if req == "cgroup":
        return int(jail.get("cgroup", 0)) > 0
    if req == "signal-isolation":
        return bool(jail.get("uid_drop")) or abi >= 6 or bool(jail.get("seccomp"))
    raise AssertionError(f"unknown requirement {req!r}")


def check_grade(name: str, report: GradeReport | dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Every way the grade differs from `spec` (empty when it matches)."""
    plain = report if isinstance(report, dict) else json.loads(report.to_json())
    steps = {s["id"]: s for s in plain["steps"]}
    problems = []
    if plain.get("error"):
        problems.append(f"the whole submission errored: {plain['error']}")
    expected = spec["steps"]
    for sid, s in steps.items():
        if sid not in expected and s["status"] != "missing":
            problems.append(f"{sid} was graded ({s['status']}) but expected.yaml does not mention it")
    for sid, want in expected.items():
        want = want if isinstance(want, dict) else {"status": want}
        status = want["status"]
        assert status in STATUSES, f"{name}: bad status {status!r} in expected.yaml"
        got = steps.get(sid)
        if got is None:
            problems.append(f"{sid} was not graded")
            continue
        texts = " | ".join([got.get("error", "")] + [t.get("message", "") for t in got.get("tests", [])])
        ok = got["status"] != "passed" if status == "not-passed" else got["status"] == status
        if not ok:
            problems.append(f"{sid}: expected {status}, got {got['status']} ({texts[:300]})")
        if status != "passed" and got["score"] != 0:
            problems.append(f"{sid}: scored {got['score']} without passing")
        wanted = want.get("message")
        if wanted is not None and not any(m in texts for m in ([wanted] if isinstance(wanted, str) else wanted)):
            problems.append(f"{sid}: no message containing {wanted!r} in {texts[:300]!r}")
        if "note" in want and not any(want["note"] in n for n in got.get("notes", [])):
            problems.append(f"{sid}: no note containing {want['note']!r} in {got.get('notes')}")
        if "output_has" in want and want["output_has"] not in got.get("output", ""):
            problems.append(f"{sid}: output lacks {want['output_has']!r}")
        if "output_lacks" in want and want["output_lacks"] in got.get("output", ""):
            problems.append(f"{sid}: output shows {want['output_lacks']!r}: {got['output'][:300]!r}")
        if "tests_lack" in want and any(want["tests_lack"] in t.get("name", "") for t in got.get("tests", [])):
            problems.append(f"{sid}: a test from the submission ran: {[t['name'] for t in got['tests']]}")
        if len(got.get("output", "")) > 20_000:
            problems.append(f"{sid}: {len(got['output'])} characters of output kept (unbounded?)")
    return problems


# ---------------------------------------------------------------- the attacks
@pytest.mark.parametrize("name", _params())
def test_attack(name: str, engine: Engine, jail: dict[str, Any], control: Any,
                monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(name)
    if not _requirement_met(spec.get("requires"), jail):
        pytest.skip(f"this machine cannot give sandboxes {spec['requires']!r} ({jail})")
    sub = SUBMISSIONS / name
    for marker in spec.get("marker_files", []):
        Path(marker).unlink(missing_ok=True)
    env_marker = spec.get("marker_env")
    if env_marker:
        monkeypatch.delenv(env_marker, raising=False)
    if spec.get("cwd") == "submission":
        monkeypatch.chdir(sub)
    submission_before = digest(sub)
    package_before = digest(PACKAGE, _SKIP_DIRS)
    before = set(_processes())
    objects_before = kernel_objects(jail)

    t0 = time.monotonic()
    report = engine.grade(sub)
    elapsed = time.monotonic() - t0
    _FIRST_GRADES[name] = _plain(report)

    problems = check_grade(name, report, spec)
    assert not problems, f"{name}:\n" + "\n".join(problems) + "\n" + _summary(report)
    assert len(report.to_json()) < 1_000_000
    # The grader survived and is bounded in time.
    assert engine.launcher.pid is not None and os.path.exists(f"/proc/{engine.launcher.pid}")
    assert elapsed < 60, f"{name} took {elapsed:.0f} s"
    # Nothing left behind, nothing written where it should not be.
    assert leftovers(before, engine.launcher.pid) == []
    assert new_kernel_objects(objects_before, jail, uids=engine.launcher.sandbox_uids) == [], "left behind"
    assert digest(sub) == submission_before, "the submission folder changed"
    assert package_changes(package_before, PACKAGE) == []
    for marker in spec.get("marker_files", []):
        assert not os.path.exists(marker), f"learner code created {marker}"
    if env_marker:
        assert env_marker not in os.environ, "learner code ran in the grading process"


@pytest.mark.parametrize("name", [n for n in DETERMINISM if n in ATTACKS])
def test_attack_grades_are_deterministic(name: str, engine: Engine) -> None:
    first = _FIRST_GRADES.get(name) or _plain(engine.grade(SUBMISSIONS / name))
    second = _plain(engine.grade(SUBMISSIONS / name))
    assert second == first


def test_grader_module_state_untouched() -> None:
    """Learner code never ran here: NumPy, builtins and pytest are the real ones."""
    import builtins

    import numpy as np

    assert np.allclose(1.0, 2.0) is False
    assert not np.isclose(1.0, 2.0)
    assert builtins.abs(-2) == 2 and builtins.all([False]) is False
    assert "step1_scores" not in sys.modules
    assert not any(str(SUBMISSIONS) in str(p) for p in sys.path)
    assert "ATTN_ATTACK_CONFTEST" not in os.environ and "ATTN_ATTACK_SHADOW" not in os.environ


@pytest.mark.slow
def test_cli_json_is_only_the_report(tmp_path: Path) -> None:
    """A learner printing fake JSON/pytest lines cannot get into `grade --format json` output."""
    proc = subprocess.run(
        [sys.executable, "-m", "attn_practice", "grade", str(SUBMISSIONS / "attack_fake_output"),
         "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = json.loads(proc.stdout)  # exactly one JSON document, nothing else
    steps = {s["id"]: s["status"] for s in report["steps"]}
    assert steps["step1"] == "failed" and steps["step2"] == "passed"
    assert report["score"] == 1.0


@pytest.mark.slow
def test_cli_run_inside_a_submission_with_shadow_modules() -> None:
    """`python -m attn_practice grade .` from inside a submission holding numpy.py, pytest.py, ..."""
    sub = SUBMISSIONS / "attack_shadow_modules"
    env = {k: v for k, v in os.environ.items() if k != "ATTN_ATTACK_SHADOW"}
    proc = subprocess.run([sys.executable, "-m", "attn_practice", "grade", ".", "--format", "json"],
                          cwd=sub, capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)
    assert "ATTN-ATTACK" not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert {s["id"]: s["status"] for s in report["steps"]}["step1"] == "passed"


# ---------------------------------------------------------------- as an ordinary user
#: Every attack runs as an ordinary user too (as root; unprivileged, the whole suite already does).
UNPRIVILEGED = tuple(ATTACKS)

#: The uid each test that runs as an ordinary user becomes: one of its own, with no account, since
#: test files run side by side (the PostgreSQL tests' cluster runs as 65534) and "nothing of that
#: user is left" can only be checked for a user nobody else is running as at the same time.
RUN_AS = {"attacks": 65501, "layouts": 65502, "cli": 65503, "dask": 65504, "poison": 65505}

_RUNNER = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, os.environ["ATTACK_TESTS"])
    import test_attacks as T
    from attn_practice.grader.engine.engine import Engine
    out = {"uid": os.getuid()}
    with Engine(T.OPTIONS) as e:
        out["jail"] = e.launcher.info()
        out["grades"] = {}
        out["leftovers"] = {}
        out["markers"] = {}
        home = os.getcwd()
        for name in sys.argv[1:]:
            spec = T._spec(name)
            os.chdir(T.SUBMISSIONS / name if spec.get("cwd") == "submission" else home)
            before = set(T._processes())
            objects = T.kernel_objects(out["jail"])
            out["grades"][name] = json.loads(e.grade(T.SUBMISSIONS / name).to_json())
            out["leftovers"][name] = T.leftovers(before, e.launcher.pid) + T.new_kernel_objects(
                objects, out["jail"], uids=e.launcher.sandbox_uids)
            marker = spec.get("marker_env")
            out["markers"][name] = [m for m in spec.get("marker_files", []) if os.path.exists(m)] + (
                [marker] if marker and marker in os.environ else [])
    print("RESULT=" + json.dumps(out))
''')


def _unprivileged_command(stage: Path, uid: int) -> list[str] | None:
    """Run Python as `uid`, exposing the interpreter if it lives under a private home."""
    setpriv, unshare = shutil.which("setpriv"), shutil.which("unshare")
    if os.geteuid() != 0 or not setpriv:
        return None
    needed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
                                             str(PACKAGE), str(HERE))}
    blocked: dict[str, list[str]] = {}
    for path in sorted(needed):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            anc = "/" + "/".join(parts[:i])
            if not os.stat(anc).st_mode & 0o001:
                blocked.setdefault(anc, []).append(path)
                break
    drop = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
    if not blocked:
        return drop
    if not unshare:
        return None
    script = ["set -e"]
    for i, (anc, paths) in enumerate(blocked.items()):
        for j, p in enumerate(sorted(set(paths))):
            script.append(f"mkdir -p '{stage}/{i}-{j}' && mount --bind '{p}' '{stage}/{i}-{j}'")
        script.append(f"mount -t tmpfs -o mode=0711 tmpfs '{anc}'")
        for j, p in enumerate(sorted(set(paths))):
            script.append(f"mkdir -p '{p}' && mount --move '{stage}/{i}-{j}' '{p}'")
    script.append('exec "$@"')
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", "\n".join(script), "sh", *drop]


@pytest.mark.slow
def test_attacks_as_unprivileged_user() -> None:
    """The non-root path: no uid drop, Landlock (where the kernel has it) does the confining."""
    if os.geteuid() != 0:
        pytest.skip("the whole suite already runs unprivileged")
    home = Path(tempfile.mkdtemp(prefix="attnp-unpriv-home-"))
    try:
        uid = RUN_AS["attacks"]
        cmd = _unprivileged_command(home / ".stage", uid)
        if cmd is None:
            pytest.skip("cannot run Python as an unprivileged user here (setpriv/unshare missing)")
        os.chmod(home, 0o777)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "ATTACK_TESTS": str(HERE), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp"}
        # The probe also looks up the uid's keyrings, as every fork server does (`keyrings_available`):
        # since Linux 5.3 the kernel keeps a uid's user and user-session keyrings for good once
        # looked up, so on a freshly booted machine they would count as left by the run.
        probe = subprocess.run([*cmd, sys.executable, "-c", _PROBE], env=env,
                               cwd=str(home), capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
        if probe.returncode != 0:
            pytest.skip(f"Python or the package is not usable as uid {uid}: {probe.stderr[-300:]}")
        names = [n for n in UNPRIVILEGED if n in ATTACKS]
        for name in names:
            for marker in _spec(name).get("marker_files", []):
                Path(marker).unlink(missing_ok=True)
        before = {p for p, (owner, _, _) in _processes().items() if owner == uid}
        traces_before = _traces_of(uid)
        proc = subprocess.run([*cmd, sys.executable, "-c", _RUNNER, *names], env=env, cwd=str(home),
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT=")]
    assert lines, f"rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    out = json.loads(lines[-1].removeprefix("RESULT="))
    assert out["uid"] == uid
    jail = out["jail"]
    assert not jail["uid_drop"]
    for name in names:
        spec = _spec(name)
        if not _requirement_met(spec.get("requires"), jail):
            continue
        problems = check_grade(name, out["grades"][name], spec)
        assert not problems, f"{name} (unprivileged):\n" + "\n".join(problems)
        assert out["leftovers"][name] == [], name
        assert out["markers"][name] == [], f"{name}: learner code got out as uid {uid}"
    after = {p for p, (owner, _, _) in _processes().items() if owner == uid}
    assert after - before == set(), "processes of the unprivileged user remain"
    deadline = time.monotonic() + 60  # a ceiling on a loaded machine, not a timing target
    while _traces_of(uid) - traces_before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _traces_of(uid) - traces_before == set(), "IPC objects, keys or temp files of the run remain"


_PROBE = ("import attn_practice.grader.engine.engine\n"
          "from attn_practice.grader.sandbox.jail import keyrings_available, load_libc\n"
          "keyrings_available(load_libc())\n")


def _traces_of(uid: int) -> set[str]:
    """SysV IPC objects, kernel keys and temp folders belonging to `uid`."""
    out = set()
    for kind, uid_col in (("shm", 7), ("msg", 7), ("sem", 4)):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header, *rows = f.read().splitlines()
        except OSError:
            continue
        col = header.split().index("uid") if "uid" in header.split() else uid_col
        out.update(f"SysV {kind} {r.split()[1]}" for r in rows if len(r.split()) > col and r.split()[col] == str(uid))
    try:
        with open("/proc/key-users") as f:
            out.update(f"keys: {ln.strip()}" for ln in f if ln.split(":")[0].strip() == str(uid))
    except OSError:
        pass
    for p in glob.glob(os.path.join(tempfile.gettempdir(), "attnp-*")):
        try:
            if os.stat(p).st_uid == uid:
                out.add(f"temp {p}")
        except OSError:
            pass
    return out


# ---------------------------------------------------------------- last: nothing leaked across
def test_other_submissions_unaffected(engine: Engine, control: tuple[Path, dict[str, Any]]) -> None:
    """After every attack, the same engine grades a correct submission exactly as before."""
    root, first = control
    before = set(_processes())
    again = engine.grade(root, label="control")
    assert again.passed, _summary(again)
    assert _plain(again) == first
    assert leftovers(before, engine.launcher.pid) == []
