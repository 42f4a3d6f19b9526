"""Where a graded function really is, so reports point there and not at the prepared copy.

A step graded from a notebook, a module, a near-miss name, a `.txt`, a
subfolder or an LMS-prefixed file runs from a generated `stepN_x.py` in a
temp folder. The learner never saw that file: tracebacks are rewritten to
the learner's own file and line (a notebook's cell and line in it), and the
"reproduce it" snippet is one that runs where the code is: an import of a
module whose name Python can import, `runpy.run_path` for a file name it
cannot (dashes, spaces, `.txt`), or for a notebook the cell to run first and
the call to type in a new cell.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from attn_practice.grader.staff.intake.extract import line_map

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Origin:
    """One step's function as the learner wrote it."""

    file: str  # the learner's file, as staff can open it ("subs/ada/colab.ipynb")
    function: str  # its name there (not the contract's when graded under another name)
    rel: str = ""  # the file inside the folder graded (what annotations name)
    notebook: bool = False
    cell: int = 0  # the notebook cell that defines it
    line: int = 0  # the line of its `def` (in the cell, for a notebook)
    #: line of the generated step file -> (file or "nb.ipynb, cell N", line); empty: lines hold
    lines: dict[int, tuple[str, int]] = field(default_factory=dict)
    ipython: bool = False  # a module with IPython lines (a notebook's .py export): plain Python cannot import it

    def where(self, line: int) -> str:
        """`File "x", line N` (or `File "nb.ipynb", cell C, line N`) for a line of the generated file."""
        if not self.lines:
            return f'File "{self.file}", line {line}'
        at, real = self.lines.get(line, ("", 0))
        if not at:
            return f'File "{self.file}"'
        folder = os.path.dirname(self.file)
        name, _, cell = at.partition(", cell ")
        path = os.path.join(folder, name) if folder else name
        return f'File "{path}", cell {cell}, line {real}' if cell else f'File "{path}", line {real}'

    def repro(self, contract: str, call: str) -> str:
        """Lines that reproduce `call` where the learner's code is."""
        numpy = "import numpy as np\n" if "np." in call else ""
        rename = f"{contract} = {self.function}\n" if self.function != contract else ""
        if self.notebook:
            return (f"# in {self.file}: run cell {self.cell} (it defines {self.function}) and the cells "
                    f"above it, then this in a new cell\n{numpy}{rename}{call}")
        folder = os.path.dirname(self.file) or "."
        name = os.path.basename(self.file)
        stem = name[:-3] if name.endswith(".py") else ""
        if stem and _IDENTIFIER.match(stem):
            alias = f" as {contract}" if self.function != contract else ""
            get = f"from {stem} import {self.function}{alias}"
        else:
            get = f'from runpy import run_path; {contract} = run_path("{name}")["{self.function}"]'
        if self.ipython:  # plain Python cannot import it: IPython runs it, its `!`/`%` lines too
            get = f'get_ipython().run_cell(open("{name}", encoding="utf-8-sig").read())'
            if self.function != contract:
                get += f"\n{contract} = {self.function}"
        return f"{_where(folder, self.ipython, name)}\n{get}\n{numpy}{call}"


def _where(folder: str, ipython: bool, name: str) -> str:
    """Where to run the snippet: the folder, after unzipping every zip on the way (a zip in a zip too)."""
    run = (f"in Jupyter or IPython ({name} has IPython lines, `!pip`, `%magic` or get_ipython(), "
           "which plain Python cannot import), run this") if ipython else "run Python"
    parts = re.split(r"(?<=\.zip)/", folder)
    if len(parts) == 1 and not folder.endswith(".zip"):
        return f"# {run} in the folder {folder}"
    zips, rest = (parts, ".") if parts[-1].endswith(".zip") else (parts[:-1], parts[-1])
    steps = [f"unzip {zips[0]}", *(f"unzip {z} inside it" for z in zips[1:])]
    return f"# {', then '.join(steps)}, then {run} in its folder {rest}"


def origin_for(path: str, rel: str, function: str, text: bytes | None, *, notebook: bool,
               ipython: bool = False) -> Origin:
    """The Origin of a function graded from `path` (the learner's file; `rel` inside the folder
    graded), given the generated text (None: the learner's file was graded as it is, its lines hold)."""
    if text is None:
        return Origin(path, function, rel, ipython=ipython)
    decoded = text.decode("utf-8", "replace")
    lines = line_map(decoded)
    cell, line = 0, 0
    for number, row in enumerate(decoded.splitlines(), 1):
        if re.match(rf"^(async\s+)?def\s+{re.escape(function)}\s*\(", row):
            where, line = lines.get(number, ("", number))
            cell_text = where.partition(", cell ")[2]
            cell = int(cell_text) if cell_text.isdigit() else 0
    if not lines:  # the learner's whole file, with a line added at its end: its lines hold
        return Origin(path, function, rel, line=line, ipython=ipython)
    return Origin(path, function, rel, notebook, cell, line, ipython=ipython and not notebook, lines=lines)


_FILE_LINE = '{prefix}/([^"]+)", line (\\d+)'


def retrace(text: str, label: str, base: str, origins: dict[str, Origin]) -> str:
    """`text` with the prepared copy's `File "LABEL/stepN.py", line L` as the learner's file and line.

    `origins` maps a generated step file name to its Origin; any other file of
    the copy is the learner's own, under `base` (their folder)."""
    if not text or f'"{label}/' not in text:
        return text
    pattern = re.compile('File "' + _FILE_LINE.format(prefix=re.escape(label)))

    def fix(m: re.Match[str]) -> str:
        name, line = m.group(1), int(m.group(2))
        if name in origins:
            return origins[name].where(line)
        return f'File "{os.path.join(base, name)}", line {line}'

    text = pattern.sub(fix, text)
    # Messages that name a step file without a line ("... from 'step3_softmax' (LABEL/step3_softmax.py)").
    for name, origin in origins.items():
        text = text.replace(f"{label}/{name}", origin.file)
    return text.replace(f'"{label}/', f'"{base}/') if base != label else text


__all__ = ["Origin", "origin_for", "retrace"]
