"""Where sandbox folders live: in memory (/dev/shm) only where cgroups cap what they hold.

Copying a submission into a fresh folder for every step, and removing it, is
several milliseconds of a disk file system's time per step; tmpfs does it
for a twentieth. tmpfs is memory, so `prestart._base` puts the fork server's
root there only when each sandbox's cgroup counts its pages against its
memory cap: a sandbox filling its folder is stopped like one filling its heap.
The temp folders stay hidden from learner code wherever the root lies.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from attn_practice.grader.sandbox import prestart
from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner, LearnerError

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def launcher():
    with Launcher() as launcher:
        launcher.warm()
        yield launcher


def _learner(launcher: Launcher, folder: Path, source: str, memory: int = 256 * MiB) -> Learner:
    folder.mkdir()
    (folder / "probe.py").write_text(source)
    return Learner(launcher, folder, step_id="step1", module="probe", function="f", params=("x",),
                   limits=Limits(call_timeout=10.0, memory=memory))


def test_the_root_is_in_memory_exactly_when_sandboxes_have_cgroups(launcher):
    info = launcher.info()
    in_shm = str(launcher.root).startswith(prestart.SHM + "/")
    assert in_shm == bool(info["cgroup"] and prestart._shm_usable())
    hidden = set(info["hidden"])
    # the root, the folder holding it, the system temp dirs and the grader's own temp dir
    assert {str(launcher.root), os.path.dirname(str(launcher.root)), "/tmp"} <= hidden
    assert os.path.realpath(tempfile.gettempdir()) in hidden
    assert not any(k.startswith(prestart.GRADER_TMP_ENV) for k in os.environ)


def test_learner_code_sees_no_temp_folder(launcher, tmp_path):
    lr = _learner(launcher, tmp_path / "peek", f"""
import os

def f(x):
    seen = 0
    for d in ("/tmp", "/dev/shm", {str(Path(launcher.root).parent)!r}, {str(launcher.root)!r}):
        try:
            seen += len(os.listdir(d))
        except OSError:
            pass
    return x + seen
""")
    try:
        info = launcher.info()
        if not info["landlock_abi"] and not info["uid_drop"]:
            pytest.skip("neither Landlock nor a uid of its own here: the README says what holds")
        assert float(lr(np.zeros(1))[0]) == 0.0
    finally:
        lr.close()


def test_a_sandbox_filling_its_folder_meets_its_memory_cap(launcher, tmp_path):
    if not launcher.info()["cgroup"]:
        pytest.skip("no cgroups here: the folder is on disk, bounded per file")
    lr = _learner(launcher, tmp_path / "fill", """
import os

def f(x):
    block = b"x" * (4 * 1024 * 1024)
    for i in range(64):  # 256 MiB in files of 4 MiB (each under the file-size limit)
        with open(f"fill{i}.bin", "wb") as out:
            out.write(block)
    return x
""", memory=96 * MiB)
    try:
        with pytest.raises(LearnerError) as info:
            lr(np.zeros(1))
        # Landlock lets nothing be written there at all; without it the cgroup stops it.
        failure = info.value.failure
        assert info.value.kind in ("memory", "crash") or "Permission denied" in failure.summary, failure
    finally:
        lr.close()
