"""Issue 18 item 1: the hidden suites reach the whole contract, not a sample of it.

Each `tests/submissions/attack_contract_reach/<step>__<what>.py` is wrong code
that is exact on every input a narrow suite would send (slices of at most 5,
at most 6 keys or batch entries, d_k up to 1024, 3 heads, scores below 400,
masks in two shapes, `axis` by keyword only, fresh C-ordered inputs, loose
float32 tolerances). Graded by the installed console script under a secret,
every one must fail its step, while the reference and every correct variant
still pass (see also tests/test_suites_core.py for the corpus).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attn_practice.grader.catalog import load_catalog, resolve_step
from attn_practice.grader.sandbox import protocol
from attn_practice.reference.variants import variant_source, variants_for

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "submissions" / "attack_contract_reach"
CLI = Path(sys.executable).with_name("attn-practice")


def grade(folders: list[Path], tmp: Path, *extra: str, secret: str = "contract-secret") -> list[dict]:
    """`attn-practice grade FOLDERS --format json` in a subprocess, with private data and cache."""
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), XDG_CACHE_HOME=str(tmp / "cache"),
               ATTN_PRACTICE_SECRET=secret)
    env.pop("ATTN_PRACTICE_CACHE", None)
    proc = subprocess.run([str(CLI), "grade", *map(str, folders), "--format", "json", "--no-cache", *extra],
                          capture_output=True, text=True, env=env, timeout=1500, check=False)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    return data if isinstance(data, list) else [data]


def _attack_folders(tmp: Path) -> dict[str, tuple[Path, str]]:
    out = {}
    for path in sorted(ATTACKS.glob("step*__*.py")):
        sid = path.name.split("__")[0]
        folder = tmp / path.stem
        folder.mkdir(parents=True)
        shutil.copy(path, folder / resolve_step(sid).file)
        out[path.stem] = (folder, sid)
    return out


def test_every_contract_reach_attack_fails_its_step(tmp_path: Path) -> None:
    attacks = _attack_folders(tmp_path / "subs")
    assert len(attacks) >= 12
    reports = grade([f for f, _ in attacks.values()], tmp_path)
    passed = []
    for (name, (_folder, sid)), report in zip(attacks.items(), reports, strict=True):
        step = next(s for s in report["steps"] if s["id"] == sid)
        if step["status"] != "failed":
            passed.append((name, step["status"]))
    assert not passed, f"attacks not failed: {passed}"


def test_every_correct_variant_passes_every_step(tmp_path: Path) -> None:
    """No false fail: each correct variant of every step (reference/variants.py), graded under a secret."""
    folders, names = [], []
    for ex in load_catalog():
        for name, _fn in variants_for(ex.id):
            folder = tmp_path / "subs" / f"{ex.id}-{name}"
            folder.mkdir(parents=True)
            (folder / ex.file).write_text(variant_source(name, ex.id), encoding="utf-8")
            folders.append(folder)
            names.append((name, ex.id))
    reports = grade(folders, tmp_path)
    failed = []
    for (name, sid), report in zip(names, reports, strict=True):
        step = next(s for s in report["steps"] if s["id"] == sid)
        if step["status"] != "passed":
            bad = [t["message"][:300] for t in step["tests"] if t["status"] != "passed"]
            failed.append((sid, name, step["status"], bad[:2]))
    assert not failed, failed


@pytest.mark.parametrize("tag", protocol.LAYOUTS)
def test_layouts_keep_values_and_are_what_they_say(tag: str) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5
    out = protocol.lay_out(a, tag)
    assert np.array_equal(out, a) and out.dtype == a.dtype and out.shape == a.shape
    flags = {
        "c": out.flags.c_contiguous and out.flags.owndata,
        "fortran": out.flags.f_contiguous and not out.flags.c_contiguous,
        "transposed": not out.flags.c_contiguous and out.base is not None,
        "strided": not out.flags.c_contiguous and not out.flags.f_contiguous,
        "offset": out.flags.c_contiguous and not out.flags.owndata,
        "reversed": out.strides[0] < 0,
        "readonly": not out.flags.writeable,
    }
    assert flags[tag]


def test_a_read_only_input_never_fails_code_that_changes_its_input() -> None:
    """Changing an input in place earns a note, not a failure: the call runs again on writable copies."""
    def inplace(x):
        x -= x.max()
        return x

    got, used = protocol.invoke(inplace, [np.array([1.0, 3.0])], {}, ["readonly"])
    assert np.array_equal(got, [-2.0, 0.0]) and used[0].flags.writeable

    def scribble(a, b):  # right answer, then writes to both inputs: the second is read-only
        out = a + b
        a[...] = 7.0
        b[...] = -3.0
        return out

    got, _ = protocol.invoke(scribble, [np.array([1.0]), np.array([2.0])], {}, ["c", "readonly"])
    assert np.array_equal(got, [3.0])
