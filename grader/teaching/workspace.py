"""A learner's workspace: the stub files, a README, and `attn-practice.yaml`.

The state file marks the folder as a workspace and remembers progress and
revealed hints. It is always written atomically (temp file + rename), and a
deleted or corrupt one is rebuilt with a warning, never a crash. A learner's
file is never overwritten without a timestamped backup.
"""

from __future__ import annotations

import ast
import contextlib
import datetime as _dt
import enum
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from attn_practice import __version__
from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.catalog import Exercise, load_catalog, step_number

STATE_FILE = "attn-practice.yaml"
BACKUP_DIR = "backups"
DEFAULT_DIR = "attention-practice"
README_TITLE = "# Attention practice"


class Progress(str, enum.Enum):
    """Where a learner stands on one step; the values are the strings the state file keeps."""

    NOT_STARTED = "not started"
    FAILED = "failed"
    PASSED = "passed"

    def __str__(self) -> str:  # f-strings and rich show "passed", not "Progress.PASSED"
        return self.value


STATES = tuple(p.value for p in Progress)  # the strings a state file may hold


class NotInWorkspace(LookupError):
    """No `attn-practice.yaml` in this folder or any parent."""


@dataclass
class StepState:
    status: Progress = Progress.NOT_STARTED
    hints: int = 0  # how many hints have been revealed
    attempts: int = 0
    passed_at: str = ""
    #: when it last passed: the step files it imports -> a fingerprint of each (see `stale_steps`)
    passed_with: dict[str, str] = field(default_factory=dict)
    #: the fingerprint of the step's own file when it was last checked ("" unknown; see `changed_since_check`)
    checked: str = ""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "status":
            value = Progress(value)  # a state is always a Progress (a bad string fails here)
        super().__setattr__(name, value)

    @property
    def passed(self) -> bool:
        return self.status is Progress.PASSED

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status.value, "hints": self.hints,
                               "attempts": self.attempts, "passed_at": self.passed_at}
        if self.passed_with:
            out["passed_with"] = dict(sorted(self.passed_with.items()))
        if self.checked:
            out["checked"] = self.checked
        return out


@dataclass
class State:
    steps: dict[str, StepState] = field(default_factory=dict)
    created: str = ""
    warnings: list[str] = field(default_factory=list)  # not saved: what loading had to repair
    extra: dict[str, Any] = field(default_factory=dict)  # unknown top-level keys, kept as found

    def step(self, step_id: str) -> StepState:
        return self.steps.setdefault(step_id, StepState())

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in self.extra.items() if k not in _STATE_KEYS},
            "attn-practice": __version__,
            "created": self.created,
            "steps": {k: v.to_dict() for k, v in sorted(self.steps.items(), key=lambda kv: _num(kv[0]))},
        }


_STATE_KEYS = ("attn-practice", "created", "steps")


def _num(step_id: str) -> int:
    return step_number(step_id)


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="seconds")


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    def file_for(self, ex: Exercise) -> Path:
        return self.root / ex.file

    # -- state ------------------------------------------------------------
    def load_state(self, catalog: Sequence[Exercise] | None = None) -> State:
        """Read the state; rebuild it (with a warning) if it is missing or corrupt.

        A corrupt file is copied to backups/ before it is replaced, so even a
        hand-edited state file that went wrong is never simply lost.
        """
        catalog = catalog or load_catalog()
        warnings: list[str] = []
        raw: Any = None
        if not self.state_path.exists():
            warnings.append(f"{STATE_FILE} was missing, so it has been recreated: progress and "
                            "hint counts start afresh (your step files are untouched).")
        else:
            try:
                # The C loader when PyYAML has it (the same safe subset): read twice per `check`.
                raw = yaml.load(self.state_path.read_text(encoding="utf-8"),
                                Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                if not isinstance(raw, dict):
                    what = "empty" if raw is None else f"a YAML {type(raw).__name__}, not a mapping"
                    raise ValueError(what)
            except (OSError, ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
                reason = "not valid YAML" if isinstance(exc, yaml.YAMLError) else (
                    "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else
                    (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc))
                kept = ""
                try:
                    if self.state_path.is_file():
                        kept = f" The old file is kept as {self.backup(self.state_path).relative_to(self.root)}."
                except OSError:
                    pass
                warnings.append(f"{STATE_FILE} could not be read ({reason}), so it has been rebuilt: "
                                f"progress and hint counts start afresh (your step files are "
                                f"untouched).{kept}")
                raw = None
        raw = raw or {}
        created = raw.get("created")
        state = State(created=str(created) if isinstance(created, (str, _dt.date)) and created else _now(),
                      warnings=warnings,
                      extra={str(k): v for k, v in raw.items() if k not in _STATE_KEYS})
        steps_raw = raw.get("steps") or {}
        by_id = {e.id: e for e in catalog}
        if isinstance(steps_raw, dict):
            for sid, data in steps_raw.items():
                if sid not in by_id or not isinstance(data, dict):
                    continue
                st = StepState()
                if data.get("status") in STATES:
                    st.status = Progress(data["status"])
                with_ = data.get("passed_with")
                if isinstance(with_, dict):
                    st.passed_with = {str(k): str(v) for k, v in with_.items()
                                      if isinstance(k, str) and isinstance(v, str)}
                for key in ("hints", "attempts"):
                    value = data.get(key, 0)
                    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                        setattr(st, key, value)
                st.hints = min(st.hints, len(by_id[sid].hints))
                st.passed_at = str(data.get("passed_at") or "")
                if isinstance(data.get("checked"), str):
                    st.checked = data["checked"]
                state.steps[sid] = st
        for e in catalog:
            state.step(e.id)
        if warnings:
            try:
                self.save_state(state)
            except OSError as exc:
                warnings.append(f"{STATE_FILE} could not be written ({exc.strerror or exc}); "
                                "progress will not be saved.")
        return state

    def save_state(self, state: State) -> None:
        text = "# attn-practice progress (safe to delete: it is rebuilt)\n" + yaml.safe_dump(
            state.to_dict(), sort_keys=False)
        write_atomic(self.state_path, text)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold an exclusive lock on the workspace folder (two `check`s at once lose nothing)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no locking, still atomic writes
            yield
            return
        try:
            fd = os.open(self.root, os.O_RDONLY)
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def update_state(self, change: Callable[[State], None],
                     catalog: Sequence[Exercise] | None = None) -> State:
        """Re-read the state, apply `change`, write it back atomically, all under the lock.

        Re-reading right before the write means a hint revealed in another
        terminal while a check was running is not overwritten by the check.
        """
        with self.locked():
            state = self.load_state(catalog)
            change(state)
            self.save_state(state)
        return state

    def reveal_hint(self, ex: Exercise, catalog: Sequence[Exercise] | None = None) -> tuple[State, bool]:
        """Reveal `ex`'s next hint (if any is left); the new state and whether one was revealed."""
        revealed = False

        def reveal(state: State) -> None:
            nonlocal revealed
            st = state.step(ex.id)
            revealed = st.hints < len(ex.hints)
            if revealed:
                st.hints += 1

        return self.update_state(reveal, catalog), revealed

    def forget_progress(self, ex: Exercise, catalog: Sequence[Exercise] | None = None) -> State:
        """After a reset: the step is not started again (its hints stay revealed)."""

        def forget(state: State) -> None:
            st = state.step(ex.id)
            st.status = Progress.NOT_STARTED
            st.passed_with = {}

        return self.update_state(forget, catalog)

    # -- files ------------------------------------------------------------
    def fingerprint(self, name: str) -> str:
        """A short hash of one step file's bytes ("" when it is missing or unreadable)."""
        try:
            return hashlib.sha256((self.root / name).read_bytes()).hexdigest()[:16]
        except OSError:
            return ""

    def imported_steps(self, ex: Exercise, catalog: Sequence[Exercise] | None = None) -> list[Exercise]:
        """The other steps whose files `ex`'s file imports (read from its source, never run)."""
        return imported_steps(self.root / ex.file, ex, catalog)

    def backup(self, path: Path) -> Path:
        """Copy a learner's file into backups/ with a timestamp; returns the copy."""
        folder = self.root / BACKUP_DIR
        folder.mkdir(exist_ok=True)
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        target = folder / f"{path.stem}-{stamp}{path.suffix}"
        n = 1
        while target.exists():
            target = folder / f"{path.stem}-{stamp}-{n}{path.suffix}"
            n += 1
        if path.is_symlink() and not path.exists():
            write_atomic(target, f"(a broken link to {os.readlink(path)})\n")
        else:
            write_atomic(target, path.read_bytes())
        return target

    def reset(self, ex: Exercise) -> Path | None:
        """Restore the stub; returns the backup of what was there (None: nothing worth keeping).

        The backup is written (and flushed) before the file is replaced.
        """
        path = self.file_for(ex)
        stub = ex.stub_source()
        backup = None
        if path.is_symlink() or path.is_file():
            try:
                same = path.read_text(encoding="utf-8") == stub
            except (OSError, UnicodeDecodeError):
                same = False
            if not same:
                backup = self.backup(path)
        if path.is_symlink():
            path.unlink()
        write_atomic(path, stub)
        return backup




def imported_steps(path: Path, ex: Exercise,
                   catalog: Sequence[Exercise] | None = None) -> list[Exercise]:
    """The steps a step file imports by module name (`from step3_softmax import softmax`).

    Read from the source with `ast` (learner code never runs in this process);
    a file that does not parse imports nothing we can see.
    """
    try:
        source = path.read_bytes()
    except OSError:
        return []
    names = imported_module_names(source)
    return [e for e in (catalog or load_catalog()) if e.module in names and e.id != ex.id]


def imported_module_names(source: str | bytes) -> set[str]:
    """Top-level module names a source imports by absolute import (none if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def stale_steps(ws: Workspace, state: State,
                catalog: Sequence[Exercise] | None = None) -> dict[str, list[Exercise]]:
    """Passed steps that lean on a step which was reset or changed since: id -> those steps.

    A step counts as changed when its file's fingerprint differs from the one
    recorded when the dependent step passed, or when it no longer stands as
    passed (a `reset`, or a later failing check).
    """
    catalog = list(catalog or load_catalog())
    by_file = {e.file: e for e in catalog}
    out: dict[str, list[Exercise]] = {}
    for ex in catalog:
        st = state.step(ex.id)
        if not st.passed or not st.passed_with:
            continue
        changed = [by_file[f] for f, fp in st.passed_with.items() if f in by_file and (
            ws.fingerprint(f) != fp or not state.step(by_file[f].id).passed)]
        if changed:
            out[ex.id] = changed
    return out


def changed_since_check(ws: Workspace, state: State, ex: Exercise) -> bool:
    """The step was checked, but its file is not the one that was checked (so its status is stale).

    A step checked before versions were kept (no fingerprint) counts as
    changed: nobody can say its status still holds, so it is checked again.
    """
    st = state.step(ex.id)
    if st.status is Progress.NOT_STARTED:
        return False
    return not st.checked or ws.fingerprint(ex.file) != st.checked


def looks_like_workspace(folder: Path, catalog: Sequence[Exercise] | None = None) -> bool:
    """A workspace whose state file was deleted: our README, or two or more step files."""
    try:
        readme = folder / "README.md"
        if readme.is_file():
            with open(readme, encoding="utf-8", errors="replace") as f:
                if f.readline().strip() == README_TITLE:
                    return True
        catalog = catalog or load_catalog()
        return sum(os.path.lexists(folder / e.file) for e in catalog) >= 2
    except OSError:
        return False


def find_workspace(start: Path | None = None) -> Workspace:
    """Walk up from `start` (default: cwd) to the folder holding attn-practice.yaml."""
    try:
        here = Path(start or Path.cwd()).resolve()
    except OSError:  # the current folder was deleted under us
        raise NotInWorkspace(
            "the current folder no longer exists. cd into your workspace, or start one with:  "
            "attn-practice start") from None
    for folder in (here, *here.parents):
        state = folder / STATE_FILE
        if state.is_file() or (not state.exists() and looks_like_workspace(folder)):
            # (a deleted state file is rebuilt, with a warning, by load_state)
            return Workspace(folder)
    raise NotInWorkspace(
        f"{here} is not inside an attn-practice workspace (no {STATE_FILE} here or in any "
        "folder above).\n"
        "Start one with:  attn-practice start    (it creates ./attention-practice; then cd into it)\n"
        "or cd into the workspace you already have."
    )


@dataclass
class StartResult:
    workspace: Workspace
    created: list[str]  # files written now
    kept: list[str]  # files that were already there (never touched)
    existed: bool  # the folder was already a workspace (it had a state file)
    warnings: list[str] = field(default_factory=list)
    inside: Path | None = None  # another workspace that encloses this new one


def create_workspace(directory: Path, catalog: Sequence[Exercise] | None = None) -> StartResult:
    """Create or complete a workspace; never overwrites a file that is already there."""
    catalog = catalog or load_catalog()
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} exists and is not a folder")
    existed = (directory / STATE_FILE).is_file()
    inside = None
    if not existed:
        try:
            outer = find_workspace(directory.resolve().parent)
            inside = outer.root
        except (NotInWorkspace, OSError):
            pass
    directory.mkdir(parents=True, exist_ok=True)
    ws = Workspace(directory.resolve())
    created: list[str] = []
    kept: list[str] = []
    warnings: list[str] = []
    for ex in catalog:
        target = ws.file_for(ex)
        if os.path.lexists(target):
            kept.append(ex.file)
        else:
            write_atomic(target, ex.stub_source())
            created.append(ex.file)
    readme = ws.root / "README.md"
    if os.path.lexists(readme):
        kept.append("README.md")
    else:
        write_atomic(readme, workspace_readme(catalog))
        created.append("README.md")
    if os.path.lexists(ws.state_path):
        kept.append(STATE_FILE)
        warnings.extend(ws.load_state(catalog).warnings)  # repairs a corrupt one
    else:
        ws.save_state(State(created=_now(), steps={e.id: StepState() for e in catalog}))
        created.append(STATE_FILE)
    return StartResult(ws, created, kept, existed, warnings, inside)


def workspace_readme(catalog: Sequence[Exercise]) -> str:
    lines = [
        README_TITLE,
        "",
        "Attention is a look-up by *content*: a query is compared with every key,",
        "the scores become weights, and the output is the weighted mix of the values.",
        "You will build it in small steps, each a NumPy function in its own file.",
        "",
        "| step | file | function | |",
        "|------|------|----------|---|",
    ]
    for e in catalog:
        lines.append(f"| {e.id} | `{e.file}` | `{e.signature}` | {'bonus' if e.bonus else 'core'} |")
    lines += [
        "",
        "## Commands (run them anywhere inside this folder)",
        "",
        "    attn-practice show step1     # the lesson and the task",
        "    attn-practice check          # check the first step not yet passed",
        "    attn-practice check step1    # check one step",
        "    attn-practice hint step1     # reveal the next hint",
        "    attn-practice status         # your progress",
        "    attn-practice reset step1    # restore the stub (your file is backed up first)",
        "    attn-practice watch          # check again each time you save; h for a hint",
        "    attn-practice serve          # the lesson, an editor and live widgets in your browser",
        "    attn-practice explore sentence  # see attention at work (also: explore example, scale)",
        "    attn-practice solution step1 # the reference solution, once the step passes",
        "",
        "Your earlier steps may be imported by later ones, e.g.",
        "`from step3_softmax import softmax` inside `step5_attention.py`.",
        "",
    ]
    return "\n".join(lines)
