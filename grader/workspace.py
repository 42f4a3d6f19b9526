"""A learner's workspace: the stub files, a README, and `attn-practice.yaml`.

The state file marks the folder as a workspace and remembers progress and
revealed hints. It is always written atomically (temp file + rename), and a
deleted or corrupt one is rebuilt with a warning, never a crash. A learner's
file is never overwritten without a timestamped backup.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from .catalog import Exercise, load_catalog

STATE_FILE = "attn-practice.yaml"
BACKUP_DIR = "backups"
DEFAULT_DIR = "attention-practice"
STATES = ("not started", "failed", "passed")


class NotInWorkspace(LookupError):
    """No `attn-practice.yaml` in this folder or any parent."""


@dataclass
class StepState:
    status: str = "not started"
    hints: int = 0  # how many hints have been revealed
    attempts: int = 0
    passed_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "hints": self.hints, "attempts": self.attempts,
                "passed_at": self.passed_at}


@dataclass
class State:
    steps: dict[str, StepState] = field(default_factory=dict)
    created: str = ""
    warnings: list[str] = field(default_factory=list)  # not saved: what loading had to repair

    def step(self, step_id: str) -> StepState:
        return self.steps.setdefault(step_id, StepState())

    def to_dict(self) -> dict[str, Any]:
        return {
            "attn-practice": __version__,
            "created": self.created,
            "steps": {k: v.to_dict() for k, v in sorted(self.steps.items(), key=lambda kv: _num(kv[0]))},
        }


def _num(step_id: str) -> int:
    digits = "".join(c for c in step_id if c.isdigit())
    return int(digits) if digits else 0


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
        """Read the state; rebuild it (with a warning) if it is missing or corrupt."""
        catalog = catalog or load_catalog()
        warnings: list[str] = []
        raw: Any = None
        if not self.state_path.exists():
            warnings.append(f"{STATE_FILE} was missing; it has been recreated (progress starts afresh).")
        else:
            try:
                raw = yaml.safe_load(self.state_path.read_text(encoding="utf-8"))
                if not isinstance(raw, dict):
                    raise ValueError("not a mapping")
            except (OSError, ValueError, yaml.YAMLError, UnicodeDecodeError):
                warnings.append(f"{STATE_FILE} was unreadable; it has been rebuilt "
                                "(progress and hint counts start afresh).")
                raw = None
        state = State(created=str((raw or {}).get("created") or _now()), warnings=warnings)
        steps_raw = (raw or {}).get("steps") or {}
        valid = {e.id for e in catalog}
        if isinstance(steps_raw, dict):
            for sid, data in steps_raw.items():
                if sid not in valid or not isinstance(data, dict):
                    continue
                st = StepState()
                if data.get("status") in STATES:
                    st.status = data["status"]
                for key in ("hints", "attempts"):
                    value = data.get(key, 0)
                    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                        setattr(st, key, value)
                st.passed_at = str(data.get("passed_at") or "")
                state.steps[sid] = st
        for e in catalog:
            state.step(e.id)
        if warnings:
            self.save_state(state)
        return state

    def save_state(self, state: State) -> None:
        text = "# attn-practice progress (safe to delete: it is rebuilt)\n" + yaml.safe_dump(
            state.to_dict(), sort_keys=False)
        write_atomic(self.state_path, text)

    # -- files ------------------------------------------------------------
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
        write_atomic(target, path.read_bytes())
        return target

    def reset(self, ex: Exercise) -> Path | None:
        """Restore the stub; returns the backup of what was there (if anything)."""
        path = self.file_for(ex)
        backup = self.backup(path) if path.is_file() else None
        write_atomic(path, ex.stub_source())
        return backup


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def find_workspace(start: Path | None = None) -> Workspace:
    """Walk up from `start` (default: cwd) to the folder holding attn-practice.yaml."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_FILE).is_file():
            return Workspace(folder)
    raise NotInWorkspace(
        f"{here} is not inside an attn-practice workspace (no {STATE_FILE} here or above).\n"
        "Start one with:  attn-practice start   (then cd attention-practice)"
    )


@dataclass
class StartResult:
    workspace: Workspace
    created: list[str]
    kept: list[str]
    existed: bool


def create_workspace(directory: Path, catalog: Sequence[Exercise] | None = None) -> StartResult:
    """Create or complete a workspace; never overwrites a file that is already there."""
    catalog = catalog or load_catalog()
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} exists and is not a folder")
    existed = (directory / STATE_FILE).exists()
    directory.mkdir(parents=True, exist_ok=True)
    ws = Workspace(directory.resolve())
    created: list[str] = []
    kept: list[str] = []
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
    if ws.state_path.exists():
        kept.append(STATE_FILE)
        ws.load_state(catalog)  # repairs a corrupt one
    else:
        ws.save_state(State(created=_now(), steps={e.id: StepState() for e in catalog}))
        created.append(STATE_FILE)
    return StartResult(ws, created, kept, existed)


def workspace_readme(catalog: Sequence[Exercise]) -> str:
    lines = [
        "# Attention practice",
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
        "",
        "Your earlier steps may be imported by later ones, e.g.",
        "`from step3_softmax import softmax` inside `step5_attention.py`.",
        "",
    ]
    return "\n".join(lines)
