"""A Jupyter notebook's code cells as plain Python text, read as data and never run.

Only the JSON is read (nbformat 4 `cells`, or nbformat 3 `worksheets`).
IPython syntax is not Python: line magics (`%timeit f(x)`), shell escapes
(`!pip install numpy`, `files = !ls`) and help lines (`np.dot?`) become a
`pass` at the same indent (line numbers and blocks stay as they were), so
nothing of them can run; a `%%time`-style cell magic loses its first line,
and any other cell magic (`%%bash`, `%%writefile`, `%%html`) drops the cell.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from attn_practice.grader.sandbox.submission import read_regular_file

MAX_NOTEBOOK_BYTES = 32 << 20  # outputs (plots) make notebooks large; the code is small
#: Cell magics whose body is still Python.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy"})
_IPYTHON_LINE = re.compile(r"^(\s*)(?:[%!?]|[\w.\[\], ]+=\s*[%!]|[\w.\[\]()]+\?{1,2}\s*$)")


class NotebookError(ValueError):
    """The file is not a notebook this grader can read; the message says why."""


@dataclass(frozen=True)
class Cell:
    index: int  # 1-based among all cells, as Jupyter shows them
    source: str  # Python text, IPython lines neutralised (for `writes`: the file's text as written)
    writes: str = ""  # a `%%writefile NAME` cell: the file it writes (never run, read as that file)
    append: bool = False  # `%%writefile -a NAME`


def read_cells(path: Path) -> list[Cell]:
    data = read_regular_file(str(path), MAX_NOTEBOOK_BYTES)
    if data is None:
        raise NotebookError(f"not a readable regular file under {MAX_NOTEBOOK_BYTES >> 20} MiB")
    return parse_cells(data)


def parse_cells(data: bytes) -> list[Cell]:
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"broken notebook JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"broken notebook JSON ({type(exc).__name__})") from None
    if not isinstance(nb, dict):
        raise NotebookError("not a notebook (the JSON is not an object)")
    raw = nb.get("cells")
    key = "source"
    if raw is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        raw = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells") or []]
        key = "input"
    if not isinstance(raw, list):
        raise NotebookError("not a notebook (no list of cells)")
    cells = []
    for i, cell in enumerate(raw, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get(key, cell.get("source", ""))
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            continue
        written = _written_file(src)
        if written is not None:
            cells.append(Cell(i, written[2], writes=written[0], append=written[1]))
            continue
        text = python_text(src)
        if text is not None:
            cells.append(Cell(i, text))
    return cells


def _written_file(source: str) -> tuple[str, bool, str] | None:
    """(name, append, body) for a `%%writefile [-a] NAME` cell with a plain top-level name; else None."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return None
    words = lines[first].split()
    if not words or words[0] != "%%writefile":
        return None
    append = "-a" in words[1:] or "--append" in words[1:]
    names = [w for w in words[1:] if not w.startswith("-")]
    if len(names) != 1:
        return None
    name = names[0].strip("'\"")
    if "/" in name or "\\" in name or name.startswith(".") or not name:
        return None
    return name, append, "\n".join(lines[first + 1:])


def python_text(source: str) -> str | None:
    """The cell as Python: IPython-only lines turned into `pass`; None for a non-Python cell."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in PYTHON_CELL_MAGICS:
            return None
        lines[first] = ""
    out = []
    for line in lines:
        m = _IPYTHON_LINE.match(line)
        out.append(f"{m.group(1)}pass" if m else line)
    return "\n".join(out) + "\n"


__all__ = ["Cell", "NotebookError", "parse_cells", "python_text", "read_cells"]
