"""A second LMS-style class (verifier H36V), built fresh in a temp folder, different from handins_class.py.

Every hand-in is shaped the way Canvas, Moodle and Blackboard bulk downloads
and students really produce them; `EXPECTED` holds the grade a fair teacher
gives each one (written before the grader ran): total score and the status of
every core step, plus a phrase the warnings must hold where a choice was made.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

from handins_class import REFERENCE, SAME_TIME, grade

CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
FN = {"step1_scores": "dot_scores", "step2_scale": "scale_scores", "step3_softmax": "softmax",
      "step4_weighted_sum": "weighted_sum", "step5_attention": "attention"}

GOOD = {
    "dot_scores": "def dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n",
    "scale_scores": "def scale_scores(scores, d_k):\n    return scores / np.sqrt(d_k)\n",
    "softmax": ("def softmax(x, axis=-1):\n    z = x - np.max(x, axis=axis, keepdims=True)\n    e = np.exp(z)\n"
                "    return e / e.sum(axis=axis, keepdims=True)\n"),
    "weighted_sum": "def weighted_sum(weights, V):\n    return weights @ V\n",
    "attention": ("def attention(Q, K, V):\n    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
                  "    s = s - s.max(axis=-1, keepdims=True)\n    w = np.exp(s)\n    w = w / w.sum(axis=-1, keepdims=True)\n"
                  "    return w @ V\n"),
}
BAD = {
    "dot_scores": "def dot_scores(Q, K):\n    return Q @ K\n",
    "scale_scores": "def scale_scores(scores, d_k):\n    return scores / d_k\n",
    "softmax": "def softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n",
    "weighted_sum": "def weighted_sum(weights, V):\n    return V @ weights\n",
    "attention": ("def attention(Q, K, V):\n    s = Q @ np.swapaxes(K, -1, -2)\n    w = np.exp(s - s.max(axis=-1, keepdims=True))\n"
                  "    return (w / w.sum(axis=-1, keepdims=True)) @ V\n"),
}


def step(stem: str, good: bool = True, rename: str | None = None) -> str:
    src = (GOOD if good else BAD)[FN[stem]]
    if rename:
        src = src.replace(f"def {FN[stem]}(", f"def {rename}(", 1)
    return "import numpy as np\n\n\n" + src


def module(bad: tuple[str, ...] = (), renames: dict[str, str] | None = None) -> str:
    parts = ["import numpy as np\n"]
    for fn in FN.values():
        src = (BAD if fn in bad else GOOD)[fn]
        if renames and fn in renames:
            src = src.replace(f"def {fn}(", f"def {renames[fn]}(", 1)
        parts.append(src)
    return "\n\n".join(parts)


def notebook(cells: list[tuple[str, str]]) -> str:
    out = []
    for kind, text in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=1, outputs=[{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}])
        out.append(cell)
    return json.dumps({"cells": out, "metadata": {"colab": {"provenance": []}, "kernelspec": {"name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 0})


def build_file(path: Path, data: str | bytes, mtime: float = SAME_TIME) -> None:
    """Write one handed-in file (its parents made), with the download's one modification time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    os.utime(path, (mtime, mtime))


_w = build_file


def _zip(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, (2024, 5, 1, 12, 0, 0)), data)
    return buf.getvalue()


P, F, M = "passed", "failed", "missing"
ALL = (P,) * 5
#: label under the class folder -> (score, statuses of the five core steps, a phrase some warning holds)
EXPECTED: dict[str, tuple[float, tuple[str, ...], str | None]] = {}


def build(root: Path) -> Path:
    d = root / "dl"
    d.mkdir(parents=True)
    e = EXPECTED
    # 1 Canvas flat, a "-1" re-upload of step2 (later attachment id) fixes it.
    for s in CORE:
        _w(d / f"nguyenan_5001_70001_{s}.py", step(s, s != "step2_scale"))
    _w(d / "nguyenan_5001_70009_step2_scale-1.py", step("step2_scale"))
    e["nguyenan_5001"] = (5, ALL, "step2_scale-1.py")
    # 2 Canvas LATE with upper-case file names.
    for s in CORE:
        _w(d / f"parkmin_LATE_5002_70100_{s.upper()}.PY", step(s, s != "step3_softmax"))
    e["parkmin_5002"] = (4, (P, P, F, P, P), None)
    # 3 Canvas: one attention.py for everything, functions under well-known other names.
    _w(d / "olsenkari_5003_70200_attention.py", module(renames={"softmax": "stable_softmax", "attention": "attn"}))
    e["olsenkari_5003"] = (5, ALL, "stable_softmax")
    # 4 Canvas: Colab notebook, !pip, %%time, outputs, softmax defined twice (the later cell, right, wins).
    cells = [("markdown", "# Attention lab\n"), ("code", "!pip install -q numpy\n%matplotlib inline\nimport numpy as np\n"),
             ("code", GOOD["dot_scores"]), ("code", "%%time\n" + GOOD["scale_scores"]), ("code", BAD["softmax"]),
             ("code", "print(softmax(np.array([1.0, 2.0])))\n"), ("code", GOOD["softmax"]),
             ("code", BAD["weighted_sum"]), ("code", GOOD["attention"]), ("code", "np.dot?\n")]
    _w(d / "rossiluca_5004_70300_AttentionLab.ipynb", notebook(cells))
    e["rossiluca_5004"] = (4, (P, P, P, F, P), None)
    # 5 Canvas: only step5 handed in, self-contained.
    _w(d / "adamsbo_5005_70400_step5_attention.py", step("step5_attention"))
    e["adamsbo_5005"] = (1, (M, M, M, M, P), None)
    # 6 Moodle folder: step files in src/, plus an onlinetext folder for the same student.
    bea = d / "Bea Kowalski_20001_assignsubmission_file_"
    for s in CORE:
        _w(bea / "src" / f"{s}.py", step(s, s != "step4_weighted_sum"))
    _w(d / "Bea Kowalski_20001_assignsubmission_onlinetext_" / "onlinetext.html", "<p>My code is in src/</p>\n")
    e["Bea Kowalski_20001_assignsubmission_file_"] = (4, (P, P, P, F, P), None)
    # 7 Moodle folder with a zip holding a zip-free folder, __MACOSX and .DS_Store.
    chen = {f"attention_lab/{s}.py": step(s, s != "step1_scores") for s in CORE}
    chen["__MACOSX/attention_lab/._step1_scores.py"] = b"\0\x05\x16\x07"
    chen["attention_lab/.DS_Store"] = b"\0\0\0\1Bud1"
    _w(d / "Chen Wei_20002_assignsubmission_file_" / "attention_lab.zip", _zip(chen))
    e["Chen Wei_20002_assignsubmission_file_"] = (4, (F, P, P, P, P), None)
    # 8 Moodle folder: copy-style names; attention forgets the scale.
    dara = d / "Dara ONeill_20003_assignsubmission_file_"
    _w(dara / "step1_scores (1).py", step("step1_scores"))
    _w(dara / "step2_scale-2.py", step("step2_scale"))
    _w(dara / "Step 3 - softmax.py", step("step3_softmax"))
    _w(dara / "step4_weighted_sum.py", step("step4_weighted_sum"))
    _w(dara / "step5_attention.py", step("step5_attention", False))
    e["Dara ONeill_20003_assignsubmission_file_"] = (4, (P, P, P, P, F), "Step 3 - softmax.py")
    # 9 Blackboard all attempts, same mtimes: attempt 2 (later) breaks weighted_sum.
    a1, a2 = "AttnLab_bmiller_attempt_2024-05-01-10-00-00", "AttnLab_bmiller_attempt_2024-05-02-08-30-00"
    for s in CORE:
        _w(d / f"{a1}_{s}.py", step(s))
        _w(d / f"{a2}_{s}.py", step(s, s != "step4_weighted_sum"))
    _w(d / f"{a1}.txt", "Name: Bo Miller (bmiller)\n")
    _w(d / f"{a2}.txt", "Name: Bo Miller (bmiller)\n")
    e["bmiller"] = (4, (P, P, P, F, P), "2024-05-02-08-30-00")
    # 10 Blackboard single attempt, a notebook.
    nb = [("code", "import numpy as np\n" + GOOD["dot_scores"])] + [("code", GOOD[f]) for f in
                                                                     ("scale_scores", "softmax", "weighted_sum", "attention")]
    _w(d / "AttnLab_tkaur_attempt_2024-05-02-09-00-00_tkaur_attention.ipynb", notebook(nb))
    _w(d / "AttnLab_tkaur_attempt_2024-05-02-09-00-00.txt", "Name: T Kaur (tkaur)\n")
    e["tkaur"] = (5, ALL, None)
    # 11 Blackboard zip of zips.
    inner = _zip({f"{s}.py": step(s, s != "step2_scale") for s in CORE})
    _w(d / "AttnLab_zhou_attempt_2024-05-03-11-00-00_submission.zip", _zip({"zhou_steps.zip": inner}))
    e["zhou"] = (4, (P, F, P, P, P), None)
    # 12 folder with a venv and site-packages inside (a wrong softmax in it must be ignored).
    emma = d / "emma"
    for s in CORE:
        _w(emma / f"{s}.py", step(s))
    _w(emma / "venv" / "lib" / "python3.11" / "site-packages" / "mylib" / "step3_softmax.py", step("step3_softmax", False))
    _w(emma / "venv" / "pyvenv.cfg", "home = /usr/bin\n")
    e["emma"] = (5, ALL, None)
    # 13 one attention.py: BOM, CRLF, tabs.
    _w(d / "faisal" / "attention.py", b"\xef\xbb\xbf" + module(bad=("softmax",)).replace("    ", "\t").replace("\n", "\r\n").encode())
    e["faisal"] = (4, (P, P, F, P, P), None)
    # 14 a coding line with Latin-1 in a string; Latin-1 in a comment without one.
    gita = d / "gita"
    for s in CORE:
        _w(gita / f"{s}.py", step(s))
    _w(gita / "step2_scale.py", ("# -*- coding: latin-1 -*-\n" + step("step2_scale", False) + 'NOTE = "r\xe9sum\xe9"\n').encode("latin-1"))
    _w(gita / "step4_weighted_sum.py", ("# pond\xe9r\xe9e\n" + step("step4_weighted_sum")).encode("latin-1"))
    e["gita"] = (4, (P, F, P, P, P), None)
    # 15 a syntax error in one step only.
    hiro = d / "hiro"
    for s in CORE:
        _w(hiro / f"{s}.py", step(s))
    _w(hiro / "step2_scale.py", "import numpy as np\n\ndef scale_scores(scores, d_k)\n    return scores / np.sqrt(d_k)\n")
    e["hiro"] = (4, (P, "error", P, P, P), None)
    # 16 empty files for two steps.
    ines = d / "ines"
    for s in CORE[:3]:
        _w(ines / f"{s}.py", step(s))
    for s in CORE[3:]:
        _w(ines / f"{s}.py", "")
    e["ines"] = (3, (P, P, P, M, M), None)
    # 17 a PDF alone.
    _w(d / "jonas" / "report.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n%%EOF\n")
    e["jonas"] = (0, (M,) * 5, "report.pdf")
    # 18 a notebook exported as .py with # In[ ]: markers, get_ipython(), renamed attention.
    body = "\n\n".join(f"# In[{i}]:\n\n\n" + (BAD if f == "attention" else GOOD)[f] for i, f in enumerate(FN.values(), 2))
    _w(d / "kofi" / "attention_lab.py", "#!/usr/bin/env python\n# coding: utf-8\n\n# In[1]:\n\n\n"
       "get_ipython().system('pip install numpy')\nimport numpy as np\n\n\n"
       + body.replace("def attention(", "def scaled_dot_product_attention(") + "\n\n# In[ ]:\n\n\n\n")
    e["kofi"] = (4, (P, P, P, P, F), "scaled_dot_product_attention")
    # 19 a .py.txt module.
    _w(d / "lina" / "attention.py.txt", module(bad=("weighted_sum",)))
    e["lina"] = (4, (P, P, P, F, P), "attention.py.txt")
    # 20 step files, the only function in a step file under an unknown name / self_attn.
    mateo = d / "mateo"
    for s in CORE:
        _w(mateo / f"{s}.py", step(s))
    _w(mateo / "step3_softmax.py", step("step3_softmax", False, rename="row_softmax"))
    _w(mateo / "step5_attention.py", step("step5_attention", rename="self_attn"))
    e["mateo"] = (4, (P, P, F, P, P), "row_softmax")
    # 21-23 hostile zips: path traversal, bomb, symlink.
    good_zip = {f"{s}.py": step(s) for s in CORE}
    _w(d / "oscar.zip", _zip({**good_zip, "../../evil.py": "print('x')\n"}))
    e["oscar.zip"] = (0, (M,) * 5, "oscar.zip")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, t in good_zip.items():
            z.writestr(n, t)
        z.writestr("weights.npy", b"\0" * (64 << 20))
    _w(d / "pia.zip", buf.getvalue())
    e["pia.zip"] = (0, (M,) * 5, "pia.zip")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, t in good_zip.items():
            z.writestr(n, t)
        info = zipfile.ZipInfo("link.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    _w(d / "quinn.zip", buf.getvalue())
    e["quinn.zip"] = (0, (M,) * 5, "quinn.zip")
    # 24 step folders "Step 1/" ... "Step 5/".
    for i, s in enumerate(CORE, 1):
        _w(d / "ravi" / f"Step {i}" / f"{s}.py", step(s, i != 5))
    e["ravi"] = (4, (P, P, P, P, F), None)
    # 25 a notebook with its .py export of the same name.
    _w(d / "sofia" / "Attention_Lab.ipynb", notebook([("code", module())]))
    _w(d / "sofia" / "Attention_Lab.py", "# coding: utf-8\n\n# In[1]:\n\n\n" + module())
    e["sofia"] = (5, ALL, None)
    # 26 Mac litter and bytecode beside right step files.
    for s in CORE:
        _w(d / "uma" / f"{s}.py", step(s))
    _w(d / "uma" / ".DS_Store", b"\0\0\0\1Bud1")
    _w(d / "uma" / "__pycache__" / "step1_scores.cpython-311.pyc", b"\x00\x01garbage")
    _w(d / "uma" / "._step2_scale.py", b"\0\x05\x16\x07\0\x02")
    e["uma"] = (5, ALL, None)
    # 27 a notebook whose attention uses helpers and a constant from other cells.
    cells = [("code", "import numpy as np\nEPS = 0.0\n"), ("code", "def _t(K):\n    return np.swapaxes(K, -1, -2)\n"),
             ("code", "def dot_scores(Q, K):\n    return Q @ _t(K) + EPS\n"), ("code", GOOD["scale_scores"]),
             ("code", GOOD["softmax"]), ("code", "%%time\n" + GOOD["weighted_sum"]),
             ("code", "def attention(Q, K, V):\n    return weighted_sum(softmax(scale_scores(dot_scores(Q, K), Q.shape[-1])), V)\n"),
             ("code", "attention(np.eye(2), np.eye(2), np.eye(2))\n")]
    _w(d / "victor" / "lab.ipynb", notebook(cells))
    e["victor"] = (5, ALL, None)
    # 28 upper-case extension, main-guard tests, cross-step imports.
    wen = d / "wen"
    for s in CORE[:4]:
        _w(wen / f"{s}.py", step(s) + '\n\nif __name__ == "__main__":\n    print("testing")\n')
    _w(wen / "step5_attention.py", "import numpy as np\nfrom step1_scores import dot_scores\nfrom step2_scale import "
       "scale_scores\nfrom step3_softmax import softmax\nfrom step4_weighted_sum import weighted_sum\n\n\n"
       "def attention(Q, K, V):\n    return weighted_sum(softmax(scale_scores(dot_scores(Q, K), Q.shape[-1])), V)\n")
    e["wen"] = (5, ALL, None)
    # 29 two wrong steps.
    for s in CORE:
        _w(d / "zara" / f"{s}.py", step(s, s not in ("step1_scores", "step2_scale")))
    e["zara"] = (3, (F, F, P, P, P), None)
    # 30 a bare .py at class level, a whole module with prints at import.
    _w(d / "yusuf_attention.py", module() + "\nprint(softmax(np.array([1.0, 2.0])))\n")
    e["yusuf_attention.py"] = (5, ALL, None)
    # 31 a Moodle folder with one .ipynb whose function is defined twice, the earlier right, the later wrong.
    cells = [("code", "import numpy as np\n" + GOOD["dot_scores"]), ("code", GOOD["scale_scores"]),
             ("code", GOOD["softmax"]), ("code", GOOD["weighted_sum"]), ("code", GOOD["attention"]),
             ("code", "# try without the scale\n" + BAD["attention"])]
    _w(d / "Eve Tan_20004_assignsubmission_file_" / "Lab.ipynb", notebook(cells))
    e["Eve Tan_20004_assignsubmission_file_"] = (4, (P, P, P, P, F), None)
    # 32 a zip at class level with a top folder and step files in src/.
    _w(d / "xu.zip", _zip({f"xu-main/src/{s}.py": step(s, s != "step3_softmax") for s in CORE}
                          | {"xu-main/README.md": "# lab\n"}))
    e["xu.zip"] = (4, (P, P, F, P, P), None)
    # 33 Moodle: a student who pasted the code as online text only (no file folder) is still a student.
    _w(d / "Fay Quinn_20005_assignsubmission_onlinetext_" / "onlinetext.html", "<p>def softmax(x): ...</p>\n")
    e["Fay Quinn_20005_assignsubmission_onlinetext_"] = (0, (M,) * 5, "onlinetext.html")
    # LMS litter: no student.
    _w(d / "index.html", "<html></html>\n")
    return d




_HEADER = re.compile(r"^─+ (.+?) ─+$")
_NOT_RUNNABLE = ("ModuleNotFoundError", "ImportError", "NameError", "FileNotFoundError", "SyntaxError", "KeyError")
#: What Jupyter does with a cell: IPython lines (`!pip`, `%magic`) run as IPython, the rest as Python.
_FAKE_IPYTHON = '''import re, __main__
class _IP:
    def system(self, c): pass
    def run_line_magic(self, *a): pass
    def run_cell(self, src):
        lines = ("pass" if re.match(r"\\s*[!%]", x) else x for x in src.splitlines())
        exec(compile("\\n".join(lines), "cell", "exec"), __main__.__dict__)
def get_ipython():
    return _IP()
'''


def reproduce_blocks(report: str) -> list[tuple[str, str, list[str]]]:
    """(submission, heading, snippet lines) of every "Reproduce it" on a terminal report."""
    lines, label, out, i = report.splitlines(), "", [], 0
    while i < len(lines):
        m = _HEADER.match(lines[i])
        label = m.group(1) if m else label
        if "Reproduce it" in lines[i]:
            head, body = lines[i], []
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].startswith("  "):
                body.append(lines[i])
                i += 1
            out.append((label, head, body))
            continue
        i += 1
    return out


def _notebook_prefix(nb: Path, cells: int) -> str:
    """The code of a notebook's first `cells` cells, as a learner running them in Jupyter would."""
    code = []
    for cell in json.loads(nb.read_text())["cells"][:cells]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"]).splitlines()
        src = src[1:] if src and src[0].startswith("%%") else src
        code.append("\n".join(x for x in src if not x.lstrip().startswith(("!", "%")) and not x.endswith("?")))
    return "\n".join(code) + "\n"


def _where(base: Path, label: str, head: str, first: str, scratch: Path) -> tuple[Path | None, str]:
    """The folder a learner runs the snippet in (unzipping as told) and the code to run before it."""
    if m := re.match(r"# in (.+?): run cell (\d+) ", first):
        return (base / m.group(1)).parent, _notebook_prefix(base / m.group(1), int(m.group(2)))
    if m := re.match(r"# (unzip .+), then (?:run Python|in Jupyter.*run this) in its folder (.+)$", first):
        steps = m.group(1).split(", then ")
        zipfile.ZipFile(base / steps[0].removeprefix("unzip ")).extractall(scratch)
        for inner in steps[1:]:
            zipfile.ZipFile(scratch / inner.removeprefix("unzip ").removesuffix(" inside it")).extractall(scratch)
        return scratch / m.group(2), ""
    if m := re.match(r"# .*in the folder (.+)$", first):
        return base / m.group(1), ""
    if m := re.search(r"run Python in the folder that holds (.+?)\)", head):
        hits = sorted((base / label).rglob(m.group(1))) if (base / label).is_dir() else []
        return (hits[0].parent if hits else None), ""
    return None, ""


def unrunnable_reproduce_lines(report: str, base: Path, scratch: Path) -> list[str]:
    """Every reproduce snippet on `report` run as a learner would; the ones that do not import and call."""
    bad = []
    for n, (label, head, body) in enumerate(reproduce_blocks(report)):
        cwd, pre = _where(base, label, head, body[0] if body else "", scratch / str(n))
        snippet = "\n".join(x for x in body if not x.startswith("#"))
        if "get_ipython()" in snippet:
            pre = _FAKE_IPYTHON + pre
        if cwd is None or not cwd.is_dir():
            bad.append(f"{label}: no folder to run {body[:1]} in")
            continue
        r = subprocess.run([sys.executable, "-c", pre + snippet], cwd=cwd, capture_output=True, text=True,
                           timeout=120)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        if last.startswith(_NOT_RUNNABLE):
            bad.append(f"{label}: {body[:2]} -> {last}")
    return bad


__all__ = ["CORE", "EXPECTED", "REFERENCE", "build", "build_file", "grade", "module", "step", "reproduce_blocks", "unrunnable_reproduce_lines"]
