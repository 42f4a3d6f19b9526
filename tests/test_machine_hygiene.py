"""The suite and the grader leave the machine as they found it (issue 18.8, 18.7).

As root, an atomic write pointed at a device replaced it for the whole
machine (`--out /dev/null`, `--out /dev/stdout`): atomic writes now refuse
anything but a regular file or a link, and user-named outputs are written
through. `.ci/machine_check.py` notices a device, mount, cgroup or user the
suite changed. The suite's own waits hold on a machine kept busy. Checked on
private look-alikes (a device node in a temp folder), never on /dev itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from attn_practice.grader.atomic import NotRegularFile, write_atomic, write_output

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = str(Path(sys.executable).with_name("attn-practice"))
CHECK = ROOT / ".ci" / "machine_check.py"


def _null_lookalike(tmp_path: Path) -> Path:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("making a device node needs root")
    return node


def test_atomic_writes_refuse_devices_fifos_and_folders(tmp_path):
    null = _null_lookalike(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    for target in (null, fifo, folder):
        with pytest.raises(NotRegularFile):
            write_atomic(target, "x")
    assert stat.S_ISCHR(os.lstat(null).st_mode) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert folder.is_dir() and not any(tmp_path.glob(".*.tmp"))


def test_an_atomic_write_to_a_link_replaces_the_link_never_its_target(tmp_path):
    null = _null_lookalike(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(null)
    write_atomic(link, "report\n")
    assert link.read_text() == "report\n" and not link.is_symlink()
    assert stat.S_ISCHR(os.lstat(null).st_mode)


def test_write_output_writes_through_a_device_and_a_link(tmp_path):
    null = _null_lookalike(tmp_path)
    write_output(null, "into the void\n")
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    real = tmp_path / "real.txt"
    real.write_text("old, longer content\n")
    link = tmp_path / "out"
    link.symlink_to(real)
    write_output(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    with pytest.raises(OSError):
        write_output(tmp_path, "x")


def test_deep_json_to_report_is_a_clean_usage_error(tmp_path):
    for name, text in (("brackets.json", "[" * 100_000 + "]" * 100_000),
                       ("objects.json", '{"a":' * 5_000 + "1" + "}" * 5_000),
                       ("inside.json", json.dumps({"schema": "attn-practice.grade/1", "submission": "s",
                                                   "steps": [], "extra": [[[[[[[[[[[]]]]]]]]]]]})[:-1]
                        .replace("[]", "[" * 900 + "]" * 900) + "}")):
        path = tmp_path / name
        path.write_text(text)
        res = subprocess.run([SCRIPT, "report", str(path), "--format", "json"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 2, (name, res.stderr[-500:])
        assert "nested" in res.stderr and "Traceback" not in res.stderr and "internal" not in res.stderr


# ------------------------------------------------------------------ .ci/machine_check.py
def _checker():
    spec = importlib.util.spec_from_file_location("machine_check", CHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_machine_check_passes_on_an_unchanged_machine(tmp_path):
    """Snapshot, then compare at once. Other test files run beside this one and their sandboxes
    (each with a cgroup) come and go between the two, so a few tries are allowed: on a machine
    nothing changed between them, one comparison passes."""
    before = tmp_path / "before.json"
    outputs = []
    for _ in range(10):
        with open(before, "w") as f:
            subprocess.run([sys.executable, str(CHECK), "snapshot"], stdout=f, check=True, timeout=60)
        res = subprocess.run([sys.executable, str(CHECK), "compare", str(before)], capture_output=True,
                             text=True, timeout=60)
        if res.returncode == 0:
            return
        outputs.append(res.stdout)
    raise AssertionError("\n".join(outputs[-3:]))


def test_machine_check_names_a_replaced_device_and_what_was_left_behind():
    check = _checker()
    before = check.snapshot()
    after = json.loads(json.dumps(before))
    after["devices"]["/dev/null"] = "regular file"
    after["devices"]["/dev/stdout"] = "regular file"
    after["mounts"].append("/tmp/attnp-left-mounted")
    after["cgroups"].append("/sys/fs/cgroup/attnp-1-2")
    after["users"].append("attnp-sandbox")
    found = "\n".join(check.problems(before, after))
    assert "/dev/null is no longer a character device" in found
    assert "/dev/stdout changed" in found
    for left in ("/tmp/attnp-left-mounted", "/sys/fs/cgroup/attnp-1-2", "attnp-sandbox"):
        assert left in found


def test_machine_check_sees_a_real_mount_left_behind(tmp_path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount")
    before = tmp_path / "before.json"
    with open(before, "w") as f:
        subprocess.run([sys.executable, str(CHECK), "snapshot"], stdout=f, check=True, timeout=60)
    target = tmp_path / "mnt"
    target.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(target)], capture_output=True).returncode:
        pytest.skip("cannot mount here")
    try:
        res = subprocess.run([sys.executable, str(CHECK), "compare", str(before)], capture_output=True,
                             text=True, timeout=60)
    finally:
        subprocess.run(["umount", str(target)], check=True)
    assert res.returncode == 1 and str(target) in res.stdout


# ------------------------------------------------------------------ under load
@pytest.mark.slow
def test_suite_files_pass_beside_a_cpu_hog(tmp_path):
    """Suite files whose waits once expired on a busy machine, run with every CPU kept busy
    by another process: they wait on events, with ceilings, and pass. (The whole suite now
    runs three files at a time on two cores, itself a loaded machine: this keeps the two
    tests whose waits are tightest.)"""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(max(2, os.cpu_count() or 1))]
    try:
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "c"), XDG_DATA_HOME=str(tmp_path / "d"))
        res = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-n", "0",
             "tests/test_sandbox.py::test_protocol_deadline_bounds_a_trickling_peer",
             "tests/test_cache_security.py::test_bytes_swapped_during_a_batch_never_file_a_grade_under_another_content",
             "-m", "not slow"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
