"""What one folder holds for each step, and which source is graded (the documented rule).

For each step, candidates come in tiers; the first tier with any wins:

1. files NAMED for the step: the exact name, or a near miss (`names`);
2. CODE that defines the step's function: any other top-level `.py` module
   or `.ipynb` notebook in the folder (the function is taken out by name,
   with the imports and helpers it uses: `extract`). A file named for a
   step is that step's only: a helper `softmax` inside `step5_attention.py`
   never stands in for step 3.

Within a tier, several candidates (two versions of a step) are ordered by
the rule users are told: a file that defines the function, and not as the
untouched stub, first; then the NEWEST MODIFICATION TIME, then the SHORTEST
PATH (then the name), and one is graded with a warning naming both. Before
times, the ATTEMPT an LMS wrote into the names (`lms`: Blackboard's attempt
date, Canvas's upload id) decides: the later attempt wins, whatever the
files' times say (an "all attempts" download gives every file one time).
A file named `.txt` (`step3_softmax.py.txt`, `attention.txt`: some LMSs
refuse `.py` uploads) counts as Python when it parses as Python. A step's
own file without the step's function has its well-known alias or only
compatible function graded (`aliases`). When the
only files named for a step hold the untouched stub (a `start` workspace)
and a module or notebook defines the function, that is graded instead, with
a warning. Only the exact name with no rival is silent. Everything is read
as bytes and parsed; nothing here runs.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.sandbox.submission import Entry, EntryKind, read_regular_file, walk
from attn_practice.grader.staff.intake.aliases import guess, signature_text
from attn_practice.grader.staff.intake.extract import (
    Chunk,
    Parsed,
    defines,
    extract,
    is_stub,
    mentions_def,
    parse,
    python_source,
)
from attn_practice.grader.staff.intake.lms import parse_name
from attn_practice.grader.staff.intake.names import (
    function_key,
    is_notebook,
    python_stem,
    step_for_name,
)
from attn_practice.grader.staff.intake.notebook import NotebookError, python_text, read_cells

MAX_SOURCE_BYTES = 1 << 20  # the engine's own cap on a step file
MAX_CODE_FILES = 100  # modules and notebooks parsed per folder
MAX_FOUND_LISTED = 12
RULE = "newest modification time, then shortest path"  # after "defines it, not as the stub"


class SourceKind(str, enum.Enum):
    EXACT = "exact"  # the step's own file name: graded as it is
    NAMED = "named"  # a near-miss name: copied under the step's name
    MODULE = "module"  # taken by name out of a .py module
    NOTEBOOK = "notebook"  # taken by name out of a notebook's code cells


@dataclass
class Source:
    kind: SourceKind
    entry: Entry
    defines: bool  # the file's own code defines the function
    text: bytes | None = None  # what to write as the step file (None: the file's bytes)
    mtime: float = 0.0
    taken: str = ""  # the function's name in the learner's code, when not the contract's
    stub: bool = False  # the function is still the stub (`raise NotImplementedError`)
    origin: str = ""  # how to name it in a warning, when not its file name
    attempt: tuple[int, ...] = ()  # the LMS's attempt, from the file's name (larger: later)
    attempt_text: str = ""  # "Blackboard attempt 2024-03-04-22-10-45"
    why_taken: str = ""  # why `taken` was graded for the step's function

    def rank(self) -> tuple[bool, bool, float, int, str]:
        return (not self.defines, self.stub, -self.mtime, len(self.entry.rel), self.entry.rel)


@dataclass
class Code:
    """One parsed module or notebook."""

    entry: Entry
    kind: SourceKind
    parsed: Parsed | None
    problem: str = ""  # why it cannot be read ("broken notebook JSON ...")
    written: dict[str, str] = field(default_factory=dict)  # a notebook's `%%writefile` files
    ipython: str = ""  # a module with IPython lines (a notebook's .py export): the text with them as `pass`
    attempt: tuple[tuple[int, ...], str] = ((), "")  # the LMS attempt its name carries, and as text


@dataclass
class Recognised:
    folder: Path
    chosen: dict[str, Source] = field(default_factory=dict)  # step id -> graded source
    warnings: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)  # top-level entries, annotated
    zips: list[Entry] = field(default_factory=list)
    parsed: int = 0  # modules and notebooks parsed (a budget across many folders)
    spread: bool = False  # the steps come from several folders (see `locate`): always copied
    helper_folders: list[Path] = field(default_factory=list)  # their importable files go along
    #: helper modules a notebook writes with `%%writefile` (step files written so are in `chosen`)
    extra_files: dict[str, bytes] = field(default_factory=dict)
    lms_named: list[tuple[str, str, str]] = field(default_factory=list)  # (LMS, its file name, step file)
    blank: list[str] = field(default_factory=list)  # empty step files: left out of the graded copy

    @property
    def anything(self) -> bool:
        return bool(self.chosen)

    @property
    def in_place(self) -> bool:
        """Every graded source is the step's own file: grade the folder as it is."""
        return not self.spread and not self.blank and all(s.kind is SourceKind.EXACT and s.text is None
                                       for s in self.chosen.values())

    def newest(self) -> float:
        return max((s.mtime for s in self.chosen.values()), default=0.0)

    def found_text(self) -> str:
        shown = self.found[:MAX_FOUND_LISTED]
        more = len(self.found) - len(shown)
        return (", ".join(shown) + (f" and {more} more" if more > 0 else "")) if shown else "nothing (empty folder)"


def recognise(folder: Path, catalog: tuple[Exercise, ...] | None = None, *,
              max_code: int = MAX_CODE_FILES) -> Recognised:
    """What `folder`'s top level holds for each step; at most `max_code` modules/notebooks parsed."""
    catalog = catalog or load_catalog()
    out = Recognised(folder)
    entries = walk(folder, descend=lambda e: False, max_depth=0).entries
    codes: list[Code] = []
    named: dict[str, list[Source]] = {}
    step_files: list[tuple[Source, Exercise]] = []  # parsed only where the choice needs it (below)
    for entry in entries:
        if entry.name.startswith("."):
            continue
        note = ""
        lms = parse_name(entry.name) if entry.kind is EntryKind.FILE else None
        if lms is not None and lms.receipt:
            out.found.append(f"{entry.name} ({lms.lms.value}'s receipt for {lms.attempt_text})")
            continue
        name = lms.original if lms is not None and lms.original else entry.name
        attempt = (lms.attempt, f"{lms.lms.value} {lms.attempt_text}") if lms is not None and lms.attempt else ((), "")
        text_only = entry.kind is EntryKind.FILE and _plain_text(name)
        ex = step_for_name(name[:-4] + ".py" if text_only else name, catalog)
        if text_only and (ex is not None or len(codes) < max_code):
            code = _code(entry, SourceKind.MODULE)
            if code.parsed is None or code.parsed.unparsable or not code.parsed.statements:
                ex = None  # text that is not Python: listed, never graded
                note = "text, not Python" if code.parsed is not None and code.parsed.unparsable else ""
            elif ex is None:
                code.attempt = attempt
                codes.append(code)
        if ex is not None and entry.kind is EntryKind.FILE and _blank(entry):
            ex, note = None, "empty"  # an empty step file hands nothing in: the step is missing, not an error
            out.blank.append(entry.rel)
        if ex is not None and (entry.kind is EntryKind.FILE or entry.name == ex.file):
            # A step's file is graded as that step only (never mined for another step's function).
            kind = SourceKind.EXACT if entry.name == ex.file else SourceKind.NAMED
            source = Source(kind, entry, defines=True, mtime=_mtime(entry), attempt=attempt[0],
                            attempt_text=attempt[1])
            named.setdefault(ex.id, []).append(source)
            if entry.kind is EntryKind.FILE:
                step_files.append((source, ex))
        elif text_only or note == "empty":
            pass
        elif entry.kind is EntryKind.FILE and (python_stem(name) is not None or is_notebook(name)):
            if len(codes) < max_code:
                kind = SourceKind.NOTEBOOK if is_notebook(name) else SourceKind.MODULE
                code = _code(entry, kind)
                code.attempt = attempt
                codes.append(code)
                note = code.problem
        elif entry.kind is EntryKind.FILE and name.lower().endswith(".zip"):
            out.zips.append(entry)
        shown = entry.name + ("/" if entry.kind is EntryKind.DIR else "")
        out.found.append(f"{shown} ({note})" if note else shown)
    out.parsed = len(codes)
    everything = bool(codes) or any(len(tier) > 1 for tier in named.values())
    for source, ex in step_files:
        # Whether a step file defines its function, or is still the stub, only decides between
        # sources: one file per step, naming its function, and no other code (most of a class)
        # is graded unparsed.
        if not everything and _names_function(source.entry, ex.function) and not _has_ipython(source.entry):
            continue
        code = _code(source.entry, SourceKind.MODULE)
        parsed = code.parsed
        if code.ipython:  # graded without its IPython lines (as `pass`: its lines hold)
            source.text = code.ipython.encode()
            out.warnings.append(f"{ex.id}: {source.entry.rel} has IPython lines ({_ipython_lines(code)}: "
                                "`!pip`, `%magic`), which are not Python; graded with them skipped")
        source.defines = parsed is not None and defines(parsed, ex.function)
        source.stub = parsed is not None and is_stub(parsed, ex.function)
        if parsed is not None and not source.defines and not parsed.unparsable:
            _other_name(out, source, ex, parsed)
    _written(codes, named, out, catalog)
    for ex in catalog:
        tier = named.get(ex.id) or _by_code(codes, ex)
        both = [*named.get(ex.id, ()), *_by_code(codes, ex)] if named.get(ex.id) and codes else []
        if both and len(both) > len(tier) and all(s.attempt for s in both):
            tier = both  # LMS attempts: the latest wins, a step file or not (each attempt is a whole hand-in)
        if tier and all(s.stub for s in tier):
            # Only the untouched stub under the step's name: the work is likely elsewhere (a notebook).
            real = sorted((s for s in _by_code(codes, ex) if not s.stub), key=Source.rank)
            if real:
                out.warnings.append(f"{ex.id}: {tier[0].entry.rel} is still the stub; graded {ex.function} "
                                    f"from {real[0].entry.rel} instead")
                tier = real
        if not tier:
            _several_meant(out, codes, ex)
            continue
        _order(tier)
        best = tier[0]
        out.chosen[ex.id] = best
        _explain(out, ex, best, tier[1:])
    _explain_taken(out, catalog)
    for code in codes:
        if code.ipython and any(src.entry.rel == code.entry.rel for src in out.chosen.values()):
            out.warnings.append(f"{code.entry.rel} has IPython lines ({_ipython_lines(code)}: `!pip`, "
                                "`%magic`, as in a notebook's .py export), which are not Python; they were skipped")
    if out.lms_named:
        systems = " and ".join(dict.fromkeys(lms for lms, _, _ in out.lms_named))
        listed = ", ".join(f"{name} as {file}" for _, name, file in out.lms_named)
        out.warnings.insert(0, f"graded the files as {systems} named them in its download: {listed}")
    used = {src.entry.rel for src in out.chosen.values()}
    for code in codes:  # the learner's own code that Python cannot read: say where, whatever was graded
        for chunk, err in (code.parsed.unparsable if code.parsed is not None else ()):
            graded = " (graded as it is, so the error shows)" if code.entry.rel in used else ""
            out.warnings.append(f"{chunk.where} is not valid Python ({err}){graded}")
    return out


def _code(entry: Entry, kind: SourceKind) -> Code:
    if kind is SourceKind.NOTEBOOK:
        try:
            cells = read_cells(Path(entry.path))
        except NotebookError as exc:
            return Code(entry, kind, None, f"unreadable: {exc}")
        chunks = [Chunk(f"{entry.name}, cell {c.index}", c.source) for c in cells if not c.writes]
        written: dict[str, str] = {}
        for c in cells:
            if c.writes:
                written[c.writes] = (written.get(c.writes, "") if c.append else "") + c.source
        parsed = parse(chunks)
        bad = [c.where.rsplit("cell ", 1)[-1] for c, _ in parsed.unparsable]
        note = f"cell{'s' if len(bad) > 1 else ''} {', '.join(bad)} not Python" if bad else ""
        return Code(entry, kind, parsed, note, written)
    data = read_regular_file(entry.path, MAX_SOURCE_BYTES)
    if data is None:
        return Code(entry, kind, None, "unreadable or over 1 MiB")
    text, problem = python_source(data, entry.name)
    if problem:  # Python would refuse the bytes: say where, as it would
        return Code(entry, kind, Parsed([], [(Chunk(entry.name, text), problem)]), "not valid in any encoding")
    parsed = parse([Chunk(entry.name, text)])
    if parsed.unparsable and _IPYTHON.search(data):  # `!pip install`, `%matplotlib`: a notebook's export
        neutral = python_text(text)
        again = parse([Chunk(entry.name, neutral)]) if neutral is not None else parsed
        if not again.unparsable:
            return Code(entry, kind, again, "", ipython=neutral or "")
    return Code(entry, kind, parsed, "does not parse" if parsed.unparsable else "")


_IPYTHON = re.compile(rb"^[ \t]*[!%]", re.MULTILINE)


def _plain_text(name: str) -> bool:
    """`attention.txt`, `step3_softmax.txt`: maybe Python an LMS made into text (`.py.txt` is Python already)."""
    low = name.lower()
    return low.endswith(".txt") and python_stem(name) is None and not is_notebook(name)


def _blank(entry: Entry) -> bool:
    """A file with nothing but whitespace in it (an upload that lost its content, a placeholder)."""
    data = read_regular_file(entry.path, 4096)
    return data is not None and not data.lstrip(b"\xef\xbb\xbf").strip()


def needs_ipython(entry: Entry) -> bool:
    """A module plain Python cannot import: `!`/`%` lines, or a notebook export's get_ipython() at its top level."""
    data = read_regular_file(entry.path, MAX_SOURCE_BYTES)
    if data is None:
        return False
    if re.search(rb"^get_ipython\(\)", data, re.MULTILINE):
        return True
    if _IPYTHON.search(data) is None:
        return False
    try:  # a `%` or `!` at a line's start can be Python (inside a string, a continued expression)
        compile(data, entry.name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    return False


def _has_ipython(entry: Entry) -> bool:
    data = read_regular_file(entry.path, MAX_SOURCE_BYTES)
    return data is not None and _IPYTHON.search(data) is not None


def _ipython_lines(code: Code) -> str:
    data = read_regular_file(code.entry.path, MAX_SOURCE_BYTES) or b""
    lines = [str(i) for i, row in enumerate(data.splitlines(), 1) if _IPYTHON.match(row)]
    return "line" + ("s " if len(lines) > 1 else " ") + ", ".join(lines[:5]) + (" ..." if len(lines) > 5 else "")


def _names_function(entry: Entry, function: str) -> bool:
    """Whether the file's bytes mention the function at all (if not, it is looked for under another name)."""
    import re

    data = read_regular_file(entry.path, MAX_SOURCE_BYTES)
    return data is None or re.search(rb"\b" + function.encode() + rb"\b", data) is not None


def _other_name(out: Recognised, source: Source, ex: Exercise, parsed: Parsed) -> None:
    """A step's own file without the step's function: its alias or only compatible function, if one."""
    found = guess(parsed, ex.function, own_file=True)
    if found.chosen:
        data = read_regular_file(source.entry.path, MAX_SOURCE_BYTES) or b""
        text, _ = python_source(data, source.entry.name)
        alias = f"\n{ex.function} = {found.chosen}  # attn-practice: the contract's name\n"
        source.text = (text if text.endswith("\n") or not text else text + "\n").encode() + alias.encode()
        source.taken, source.defines = found.chosen, True
        source.origin = source.origin or ""
        source.why_taken = f"{signature_text(parsed, found.chosen)} is {found.why}"
    elif found.rivals:
        listed = ", ".join(signature_text(parsed, n) for n in found.rivals)
        out.warnings.append(f"{ex.id}: {source.entry.rel} has no function named {ex.function}, and "
                            f"{len(found.rivals)} could be meant ({listed}); none was graded: rename "
                            f"the one you mean {ex.function}")


def _by_code(codes: list[Code], ex: Exercise) -> list[Source]:
    """Modules and notebooks whose code defines the step's function (tier 2)."""
    found = []
    for code in codes:
        if code.parsed is None:
            continue
        name = ex.function if defines(code.parsed, ex.function) else _near_function(code.parsed, ex.function)
        if name is None:
            name = guess(code.parsed, ex.function, own_file=False).chosen or None
        if name is not None:
            text = extract(code.parsed, name)
            if text is not None:
                header = (f"# Generated by attn-practice for {ex.id}: {name} and what it uses, "
                          f"taken from {code.entry.name}. Nothing else of that file runs.\n")
                alias = f"\n{ex.function} = {name}  # the contract's name\n" if name != ex.function else ""
                found.append(Source(code.kind, code.entry, True, (header + text + alias).encode(),
                                    _mtime(code.entry), taken=name if name != ex.function else "",
                                    stub=is_stub(code.parsed, name), attempt=code.attempt[0],
                                    attempt_text=code.attempt[1]))
            continue
        # Code that does not parse but has the `def`: graded, so the learner sees the syntax error.
        for chunk, err in code.parsed.unparsable:
            if mentions_def(chunk.source, ex.function):
                raw = code.kind is SourceKind.MODULE and "not valid in any encoding" in err  # refused as Python would
                text = (read_regular_file(code.entry.path, MAX_SOURCE_BYTES) if raw else None) or chunk.source.encode()
                found.append(Source(code.kind, code.entry, True, text, _mtime(code.entry)))
                break
    return found


def _several_meant(out: Recognised, codes: list[Code], ex: Exercise) -> None:
    """A module or notebook with several well-known names for the step's function: none is graded; say which."""
    for code in codes:
        if code.parsed is not None:
            rivals = guess(code.parsed, ex.function, own_file=False).rivals
            if rivals:
                listed = ", ".join(signature_text(code.parsed, n) for n in rivals)
                out.warnings.append(f"{ex.id}: {code.entry.rel} has no function named {ex.function}, and "
                                    f"{len(rivals)} could be meant ({listed}); none was graded: rename the "
                                    f"one you mean {ex.function}")


def _near_function(parsed: Parsed, function: str) -> str | None:
    """A function the code defines under a near-miss name (`Softmax`, `soft_max`), if exactly one."""
    key = function_key(function)
    names = sorted({b for s in parsed.statements for b in s.binds
                    if b != function and function_key(b) == key and defines(parsed, b)})
    return names[0] if len(names) == 1 else None


def _written(codes: list[Code], named: dict[str, list[Source]], out: Recognised,
             catalog: tuple[Exercise, ...]) -> None:
    """Files a notebook writes with `%%writefile`: step files are named candidates, the rest helpers."""
    for code in codes:
        for name, text in code.written.items():
            ex = step_for_name(name, catalog)
            if ex is None:
                if python_stem(name) is not None and name not in out.extra_files:
                    out.extra_files[name] = text.encode()
                continue
            try:
                parsed = parse([Chunk(name, text)])
            except RecursionError:
                continue
            named.setdefault(ex.id, []).append(Source(
                SourceKind.NAMED, code.entry, defines(parsed, ex.function), text.encode(), _mtime(code.entry),
                stub=is_stub(parsed, ex.function), origin=f"{name} as written by %%writefile in {code.entry.rel}"))


def _order(tier: list[Source]) -> None:
    """Best first: defines it (not as the stub); then the LMS's latest attempt when every
    candidate carries one; then the documented RULE."""
    tier.sort(key=Source.rank)
    if len(tier) > 1 and all(s.attempt for s in tier):
        tier.sort(key=lambda s: (not s.defines, s.stub, tuple(-a for a in s.attempt)))


def _explain(out: Recognised, ex: Exercise, best: Source, rivals: list[Source]) -> None:
    name = best.origin or best.entry.rel
    lms = parse_name(best.entry.name)
    if best.kind is SourceKind.NAMED and lms is not None and lms.original == ex.file:
        out.lms_named.append((lms.lms.value, name, ex.file))  # one warning for all of them (below)
    elif best.kind is SourceKind.NAMED:
        out.warnings.append(f"{ex.id}: graded {name} as {ex.file} (the file is not named {ex.file})")
    if _plain_text(best.entry.name):
        out.warnings.append(f"{ex.id}: graded {name} as Python source: its name ends in .txt (some LMSs "
                            f"refuse .py uploads), and its text parses as Python")
    if best.taken:
        why = f": {best.why_taken}" if best.why_taken else ""
        out.warnings.append(f"{ex.id}: no function named {ex.function}; graded {best.taken} from {name} "
                            f"in its place{why} (rename it {ex.function})")
    if rivals:
        others = ", ".join(r.origin or r.entry.rel for r in rivals)
        if best.attempt and all(r.attempt for r in rivals) and best.defines == all(r.defines for r in rivals):
            beaten = ", ".join(f"{r.origin or r.entry.rel} is {r.attempt_text}" for r in rivals)
            out.warnings.append(f"{ex.id}: {len(rivals) + 1} attempts ({name}, {others}); graded {name}, the "
                                f"latest by what the LMS wrote in the names: it is {best.attempt_text}, "
                                f"{beaten} (file times are not used: an LMS download gives every file one)")
            return
        out.warnings.append(f"{ex.id}: {len(rivals) + 1} candidate versions ({name}, {others}); graded "
                            f"{name} (rule: a file defining {ex.function} first, then {RULE})")


def _explain_taken(out: Recognised, catalog: tuple[Exercise, ...]) -> None:
    """One warning per module or notebook that functions were taken from (not one per step)."""
    by_file: dict[str, list[Exercise]] = {}
    for ex in catalog:
        src = out.chosen.get(ex.id)
        if src is not None and src.kind in (SourceKind.MODULE, SourceKind.NOTEBOOK):
            by_file.setdefault(src.entry.rel, []).append(ex)
    for name, exs in by_file.items():
        listed = ", ".join(f"{ex.function} ({ex.id})" for ex in exs)
        out.warnings.insert(0, f"no step file for {', '.join(ex.id for ex in exs)}: graded {listed} "
                               f"taken by name from {name}, with the imports and helpers "
                               f"{'they use' if len(exs) > 1 else 'it uses'} (nothing else in that file ran)")


def _mtime(entry: Entry) -> float:
    import os

    try:
        return os.lstat(entry.path).st_mtime
    except OSError:
        return 0.0


__all__ = ["RULE", "Recognised", "Source", "SourceKind", "recognise"]
