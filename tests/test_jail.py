"""The jail's newer walls, tested the way learners and graders meet them (issue 12, sandbox side).

* the seccomp filter assembles for every architecture it knows;
* a grader inside a session keyring holding a secret: the sandbox can
  neither read nor list it, nor plant keys (subprocess with its own keyring);
* the grader's package is unreadable and unimportable from the sandbox in
  every install layout (site-packages of a venv under the temp folder, an
  editable checkout with its venv inside or beside it, a plain sys.path
  directory), graded for real from a Python set up that way; and the
  Landlock allowlist logic for a venv under the home folder;
* step files in Latin-1 with a coding line, with a BOM, with CRLF import;
  object arrays of numbers are results like lists; other objects are not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import attn_practice
from attn_practice.grader.engine.engine import Engine
from attn_practice.grader.sandbox import seccomp
from attn_practice.grader.sandbox.landlock import readable_everything_but, under
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.sandbox.learner import LearnerError

HERE = Path(__file__).resolve().parent
SUBMISSIONS = HERE / "submissions"
PACKAGE = Path(attn_practice.__file__).resolve().parent
sys.path.insert(0, str(HERE))
import test_attacks as T  # noqa: E402
from test_sandbox import LIMITS, learner  # noqa: E402


# ---------------------------------------------------------------- seccomp
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_seccomp_program_assembles(arch: str) -> None:
    code = seccomp.program(4242, arch)
    assert len(code) % 8 == 0 and 20 < len(code) // 8 < 4096  # the kernel's BPF_MAXINSNS


# ---------------------------------------------------------------- keyrings
_KEYRING_RUNNER = textwrap.dedent('''
    import ctypes, json, os, platform, sys
    sys.path.insert(0, os.environ["ATTACK_TESTS"])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ADD_KEY, _, KEYCTL = {"aarch64": (217, 218, 219)}.get(platform.machine(), (248, 249, 250))
    def keyctl(*a):
        return libc.syscall(ctypes.c_long(KEYCTL), *[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    # A session keyring of our own, holding a secret, as a CI runner might.
    assert keyctl(1, b"attn-test-session") >= 0, "cannot join a session keyring"
    secret = libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"attn-secret", b"s3cret", ctypes.c_size_t(6),
                          ctypes.c_long(-3))
    assert secret >= 0
    import test_attacks as T
    from attn_practice.grader.engine.engine import Engine
    with Engine(T.OPTIONS) as e:
        report = json.loads(e.grade(T.SUBMISSIONS / "attack_keyring").to_json())
    buf = ctypes.create_string_buffer(4096)
    n = keyctl(11, -3, buf, 4096)  # the session keyring's key ids, after grading
    ids = list(ctypes.cast(buf, ctypes.POINTER(ctypes.c_int32))[: max(n, 0) // 4])
    planted = [k for ring in (-3, -4) for k in [keyctl(10, ring, b"user", b"attn-planted", 0)] if k >= 0]
    n = keyctl(11, secret, buf, 4096)
    print("RESULT=" + json.dumps({"report": report, "ids": ids, "secret": secret, "planted": planted,
                                  "payload": buf.raw[:max(n, 0)].decode()}))
''')


@pytest.mark.slow
def test_keyring_secret_out_of_reach() -> None:
    """Graded inside a session keyring holding a secret: not readable, not listable, nothing planted."""
    env = {**os.environ, "ATTACK_TESTS": str(HERE)}
    proc = subprocess.run([sys.executable, "-c", _KEYRING_RUNNER], env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT=")]
    if not lines and "cannot join a session keyring" in proc.stderr:
        pytest.skip("this kernel has no keyrings")
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT="))
    problems = T.check_grade("attack_keyring", out["report"], T._spec("attack_keyring"))
    assert not problems, problems
    assert out["planted"] == [], "the sandbox planted a key in the grader's keyrings"
    assert out["ids"] == [out["secret"]], "the grader's session keyring changed"
    assert out["payload"] == "s3cret"


# ---------------------------------------------------------------- the package, in every layout
def test_landlock_hides_the_package_inside_a_venv_under_home(tmp_path: Path) -> None:
    """The hide list keeps the package as a mark of its own under a hidden home (issue 12, item 6)."""
    home = tmp_path / "home"
    site = home / "venv" / "lib" / "python3" / "site-packages"
    pkg = site / "attn_practice"
    (pkg / "reference").mkdir(parents=True)
    (pkg / "reference" / "attention.py").write_text("SECRET = 1\n")
    (site / "numpy").mkdir()
    (home / ".ssh").mkdir()
    allowed = readable_everything_but([str(home), str(pkg), str(tmp_path / "root")], [str(site)])
    assert any(under(str(site / "numpy"), a) for a in allowed)
    for secret in (pkg / "reference" / "attention.py", home / ".ssh"):
        assert not any(under(str(secret), a) for a in allowed), (secret, allowed)
    # The package dir itself on sys.path (needed) stays hidden too.
    allowed = readable_everything_but([str(home), str(pkg)], [str(site), str(pkg)])
    assert not any(under(str(pkg / "reference" / "attention.py"), a) for a in allowed)
    # A symlink into the package, or to a directory holding it (a venv's lib64 -> lib), is no way in.
    (site / "link").symlink_to(pkg)
    (home / "venv" / "lib64").symlink_to("lib")
    (site / "loop").symlink_to(".")
    venv = str(home / "venv")
    for needed in ([str(site / "link"), str(site)], [venv]):
        allowed = readable_everything_but([str(pkg)], needed)
        assert any(under(str(site / "numpy"), a) for a in allowed)
        for a in allowed:
            real = os.path.realpath(a)
            assert not under(real, str(pkg)) and not under(str(pkg), real), (a, allowed)


_PROBE_STEP = '''
import numpy as np

LEAKS = []
for path in {paths!r}:
    try:
        with open(path) as f:
            LEAKS.append("read " + path + ": " + f.read(40))
    except OSError:
        pass
try:
    import attn_practice  # noqa: F401
    LEAKS.append("imported attn_practice")
except ImportError:
    pass


def dot_scores(Q, K):
    if LEAKS:
        print("LEAKED", LEAKS)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
'''

_LAYOUT_RUNNER = textwrap.dedent('''
    import json, os, sys
    sys.path.insert(0, os.environ["ATTACK_TESTS"])
    import attn_practice
    import test_attacks as T
    from attn_practice.grader.engine.engine import Engine
    out = {"package": os.path.dirname(os.path.realpath(attn_practice.__file__)), "grades": {}}
    with Engine(T.OPTIONS) as e:
        out["jail"] = e.launcher.info()
        for sub in sys.argv[1:]:
            out["grades"][sub] = json.loads(e.grade(sub).to_json())
    print("RESULT=" + json.dumps(out))
''')

_SKIP_COPY = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache",
                                    "*.egg-info", "build")


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _venv(venv: Path) -> Path:
    """A venv whose dependencies come from ours (a .pth line), holding no attn_practice yet."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    deps = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    (_site_packages(venv) / "attnp_test_deps.pth").write_text("\n".join(deps) + "\n")
    return venv / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *args],
                   check=True, timeout=300, capture_output=True)


def _layout(kind: str, top: Path) -> Path:
    """Python of a fresh install of this checkout in layout `kind`, under `top`."""
    repo = top / "checkout"
    shutil.copytree(PACKAGE, repo, ignore=_SKIP_COPY)
    if kind == "venv-site-packages":
        python = _venv(top / "venv")
        _pip(python, str(repo))
    elif kind == "editable-venv-inside":
        python = _venv(repo / ".venv")
        _pip(python, "-e", str(repo))
    elif kind == "editable-venv-beside":
        python = _venv(top / "venv")
        _pip(python, "-e", str(repo))
    elif kind == "plain-path-dir":  # like a system dist-packages: a directory on sys.path, outside the venv
        python = _venv(top / "venv")
        shutil.copytree(repo, top / "dist-packages" / "attn_practice")
        (_site_packages(top / "venv") / "attnp_test_dist.pth").write_text(str(top / "dist-packages") + "\n")
    else:
        raise AssertionError(kind)
    return python


LAYOUTS = ["venv-site-packages", "editable-venv-inside", "editable-venv-beside", "plain-path-dir"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", LAYOUTS)
def test_package_hidden_in_every_layout(kind: str) -> None:
    """Installed that way (as an ordinary user when we are root), the sandbox can neither read nor import it."""
    top = Path(tempfile.mkdtemp(prefix=f"attnp-layout-{kind}-"))
    try:
        os.chmod(top, 0o755)
        python = _layout(kind, top)
        for root, dirs, files in os.walk(top):  # readable by whoever grades
            for name in dirs + files:
                p = os.path.join(root, name)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode | 0o755 if name in dirs else os.stat(p).st_mode | 0o444)
        probe = top / "probe"
        probe.mkdir(mode=0o755)
        candidates = [str(p / "reference" / "attention.py") for p in
                      (top / "checkout", _site_packages(top / "venv") / "attn_practice",
                       top / "dist-packages" / "attn_practice", PACKAGE)]
        (probe / "step1_scores.py").write_text(_PROBE_STEP.format(paths=candidates))
        prefix: list[str] = []
        if os.geteuid() == 0:
            cmd = T._unprivileged_command(top / ".stage", T.RUN_AS["layouts"])
            if cmd is None:
                pytest.skip("cannot run Python as an unprivileged user here")
            prefix = cmd
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(top), "LANG": "C.UTF-8",
               "ATTACK_TESTS": str(HERE), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp"}
        proc = subprocess.run([*prefix, str(python), "-c", _LAYOUT_RUNNER, str(probe),
                               str(SUBMISSIONS / "attack_import_grader")], env=env, cwd=str(top),
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT=")]
    assert lines, f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    out = json.loads(lines[-1].removeprefix("RESULT="))
    assert out["package"].startswith(str(top)), f"the layout's own copy was not the one imported: {out['package']}"
    if not out["jail"]["package_hidden"]:
        pytest.skip(f"no Landlock and no mount namespace here: the package cannot be hidden ({out['jail']})")
    steps = {s["id"]: s for s in out["grades"][str(probe)]["steps"]}
    assert steps["step1"]["status"] == "passed", (steps["step1"].get("output", "")[:2000], out["jail"])
    assert "LEAKED" not in steps["step1"].get("output", "")
    problems = T.check_grade("attack_import_grader", out["grades"][str(SUBMISSIONS / "attack_import_grader")],
                             T._spec("attack_import_grader"))
    assert not problems, problems


# ---------------------------------------------------------------- honest files and results
@pytest.fixture(scope="module")
def launcher():
    with Launcher() as la:
        yield la


def test_object_array_of_numbers_is_a_result(launcher: Launcher) -> None:
    lr = learner(launcher, "import numpy as np\n\ndef f(x):\n    return np.array([[1.5, 2], [3, 4]], dtype=object)\n")
    try:
        result = lr.call(np.zeros(1))
    finally:
        lr.close()
    assert result.value.dtype.kind == "f" and np.array_equal(result.value, [[1.5, 2], [3, 4]])


@pytest.mark.parametrize("body", [
    "np.array([object(), object()], dtype=object)",
    "np.array(['a', 'b'], dtype=object)",
    "np.array([[1, 2], [3]], dtype=object)",  # ragged
    "np.array([1 + 2j], dtype=object)",
])
def test_object_array_of_non_numbers_is_refused(launcher: Launcher, body: str) -> None:
    lr = learner(launcher, f"import numpy as np\n\ndef f(x):\n    return {body}\n", limits=LIMITS)
    try:
        with pytest.raises(LearnerError) as info:
            lr.call(np.zeros(1))
    finally:
        lr.close()
    assert "not an array of numbers" in str(info.value.failure.summary)


SOFTMAX = ("def softmax(x, axis=-1):\n    # é: written in {enc}\n    m = np.max(x, axis=axis, keepdims=True)\n"
           "    e = np.exp(x - np.where(np.isfinite(m), m, 0.0))\n    return e / np.sum(e, axis=axis, keepdims=True)\n")


@pytest.mark.parametrize("variant", ["latin-1", "bom", "crlf", "cp1252-crlf"])
def test_step_files_in_other_encodings_import(tmp_path: Path, variant: str) -> None:
    """A file Python imports is graded like any other: coding line, BOM, CRLF (issue 13, item 4)."""
    text = "import numpy as np\n\n\n" + SOFTMAX.format(enc=variant)
    if variant == "latin-1":
        data = ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")
    elif variant == "bom":
        data = b"\xef\xbb\xbf" + text.encode("utf-8")
    elif variant == "crlf":
        data = text.replace("\n", "\r\n").encode("utf-8")
    else:
        data = ("# coding: cp1252\n" + text).replace("\n", "\r\n").encode("cp1252")
    (tmp_path / "step3_softmax.py").write_bytes(data)
    with Engine(T.OPTIONS) as e:
        report = e.grade(tmp_path)
    step = {s.id: s for s in report.steps}["step3"]
    assert step.status.value == "passed", (step.error, [t.message for t in step.tests][:3])


@pytest.mark.parametrize("data,message", [
    # CPython's tokenizer passes a non-UTF-8 byte inside a comment (issue 36): it imports, so it is graded
    (b"import numpy as np\n# caf\xe9\n", ""),
    (b"import numpy as np\n\n\n# caf\xe9\n", ""),
    # in a string literal it is a SyntaxError under import: refused, with its line
    (b"import numpy as np\nx = 'caf\xe9'\n", "step3_softmax.py is not valid UTF-8 text (line 2)"),
    (b"import numpy as np\n\n\nx = 'caf\xe9'\n", "step3_softmax.py is not valid UTF-8 text (line 4)"),
    (b"# -*- coding: latin-1 -*-\n# caf\xe9 \x81\n", ""),  # every byte is Latin-1: imports
    (b"# -*- coding: klingon -*-\n", "step3_softmax.py declares an encoding Python does not know"),
])
def test_undecodable_step_file_still_explained(tmp_path: Path, data: bytes, message: str) -> None:
    (tmp_path / "step3_softmax.py").write_bytes(data + b"import numpy as np\n" + SOFTMAX.format(enc="?").encode())
    with Engine(T.OPTIONS) as e:
        report = e.grade(tmp_path)
    step = {s.id: s for s in report.steps}["step3"]
    if not message:
        assert step.status.value == "passed", step.error
        return
    assert step.status.value != "passed"
    assert message in (step.error or "")


_OOM_SOURCE = '''import mmap, os, time
def f(x):
    r, w = os.pipe()
    if os.fork() == 0:  # a child holding 60 MiB, then the sandbox itself takes 250 MiB more
        m = mmap.mmap(-1, 60 << 20)
        for i in range(0, 60 << 20, 4096):
            m[i] = 1
        os.write(w, b"1")
        time.sleep(30)  # it holds the sandbox's socket too: the grader notices at the timeout
        os._exit(0)
    os.read(r, 1)
    keep = []
    for _ in range(25):
        m = mmap.mmap(-1, 10 << 20)
        for i in range(0, 10 << 20, 4096):
            m[i] = 1
        keep.append(m)
    return x
'''


@pytest.mark.slow
def test_cgroup_caps_the_sandbox_as_a_whole(launcher: Launcher) -> None:
    """Sandbox + child past the cap together (each under its rlimit): killed, and the reap says why."""
    info = launcher.info()
    if not info.get("cgroup"):
        pytest.skip(f"the grader cannot create cgroups here ({info})")
    from dataclasses import replace

    lr = learner(launcher, _OOM_SOURCE, limits=replace(LIMITS, call_timeout=5.0))
    try:
        with pytest.raises(LearnerError):
            lr.call(np.zeros(1))
        assert lr.sandbox is not None and lr.sandbox.exit_info is not None
        assert lr.sandbox.exit_info.get("oom") is True, lr.sandbox.exit_info
    finally:
        lr.close()
    left = [p for d in info["cgroup_dirs"] for p in Path(d).glob(info["cgroup_prefix"] + "*")]
    assert left == [], "the sandbox's cgroup was not removed"


# ---------------------------------------------------------------- `attn-practice grade` as an ordinary user
CLI_ATTACKS = ("attack_keyring", "attack_sysv_ipc", "attack_same_user", "attack_signal_owner",
               "attack_kernel_levers", "attack_import_grader", "attack_escape", "attack_signals",
               "attack_daemon", "attack_fork_storm", "attack_fake_files", "attack_exit_call")


@pytest.mark.slow
def test_cli_grade_as_an_unprivileged_user() -> None:
    """A venv that an ordinary user can read, its `attn-practice grade --jobs 2`, the hostile folders:
    the expected grades, and nothing of that user left behind (processes, IPC, keys, temp folders)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user (run unprivileged, the whole suite already is)")
    uid = T.RUN_AS["cli"]
    top = Path(tempfile.mkdtemp(prefix="attnp-cli-unpriv-"))
    try:
        os.chmod(top, 0o755)
        _layout("venv-site-packages", top)
        script = top / "venv" / "bin" / "attn-practice"
        assert script.is_file(), "pip did not install the console script"
        home = top / "home"
        home.mkdir()
        os.chown(home, uid, uid)
        cmd = T._unprivileged_command(top / ".stage", uid)
        if cmd is None:
            pytest.skip("cannot run Python as an unprivileged user here")
        env = {"PATH": f"{top / 'venv' / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", "COLUMNS": "100"}
        info = subprocess.run([*cmd, str(top / "venv" / "bin" / "python"), "-c",
                               "import json; from attn_practice.grader.sandbox.launcher import Launcher\n"
                               "with Launcher() as la: print(json.dumps(la.info()))"],
                              env=env, cwd=str(home), capture_output=True, text=True, timeout=120)
        jail = json.loads(info.stdout.splitlines()[-1])
        names = [n for n in CLI_ATTACKS if n in T.ATTACKS and T._requirement_met(T._spec(n).get("requires"), jail)]
        before = {p for p, (owner, _, _) in T._processes().items() if owner == uid}
        traces_before = T._traces_of(uid)
        proc = subprocess.run([*cmd, str(script), "grade", *[str(SUBMISSIONS / n) for n in names],
                               "--format", "json", "--jobs", "2"], env=env, cwd=str(home),
                              capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert proc.returncode in (0, 1), f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    reports = json.loads(proc.stdout)
    assert [r["submission"] for r in reports] == [str(SUBMISSIONS / n) for n in names]
    for name, report in zip(names, reports, strict=True):
        problems = T.check_grade(name, report, T._spec(name))
        assert not problems, f"{name} (uid {uid}, CLI):\n" + "\n".join(problems)
    deadline = time.monotonic() + 60  # a ceiling on a loaded machine, not a timing target
    while time.monotonic() < deadline:
        after = {p for p, (owner, _, _) in T._processes().items() if owner == uid} - before
        traces = T._traces_of(uid) - traces_before
        if not after and not traces:
            break
        time.sleep(0.1)
    assert after == set(), f"processes of uid {uid} remain"
    assert traces == set(), f"left behind: {sorted(traces)}"


def test_sandbox_side_imports_only_what_it_may() -> None:
    """The fork server's interpreter holds stdlib, NumPy, `protocol`, `paths` and the jail modules only."""
    code = ("import sys, json\nimport attn_practice.grader.sandbox.zygote\n"
            "print(json.dumps(sorted(m for m in sys.modules if '.' not in m or m.startswith('attn_practice'))))")
    proc = subprocess.run([sys.executable, "-s", "-c", code], capture_output=True, text=True, timeout=120,
                          cwd="/")
    mods = set(json.loads(proc.stdout))
    ours = {m for m in mods if m.startswith("attn_practice")}
    allowed = {"attn_practice", "attn_practice.grader", "attn_practice.grader.paths",
               "attn_practice.grader.sandbox"} | {
        f"attn_practice.grader.sandbox.{m}" for m in ("protocol", "zygote", "jail", "landlock", "seccomp",
                                                      "cgroup", "server")}
    assert ours <= allowed, ours - allowed
    assert not mods & {"pytest", "hypothesis", "_pytest", "click", "rich", "yaml"}, mods
