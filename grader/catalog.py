"""The exercises: loaded from `exercises/stepN_<name>/exercise.yaml`.

Validated on load into frozen dataclasses so that a typo in course content
fails loudly, naming the file and key, instead of confusing a learner later.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

EXERCISES_PACKAGE = "attn_practice.exercises"


class CatalogError(ValueError):
    """Course content is malformed; the message names the file and key."""


class UnknownStep(LookupError):
    """A step name that matches no exercise; the message lists the valid ones."""


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True)
class Exercise:
    """One step of the course, as its YAML describes it."""

    id: str  # "step3"
    number: int  # 3
    title: str
    file: str  # "step3_softmax.py"
    function: str  # "softmax"
    signature: str  # "softmax(x, axis=-1)"
    params: tuple[str, ...]
    kind: str  # "core" | "bonus"
    points: float
    timeout: float  # seconds one call may take
    tolerances: Mapping[str, Tolerance]  # keyed by dtype name: "float64", "float32"
    dims: Mapping[str, tuple[str, ...]]  # argument/"out" -> named trailing dimensions
    depends_on: tuple[str, ...]
    lesson: str
    task: str
    hints: tuple[str, ...]
    solution_note: str
    directory: Path

    @property
    def stem(self) -> str:
        return self.file.removesuffix(".py")

    @property
    def module(self) -> str:
        return self.stem

    @property
    def bonus(self) -> bool:
        return self.kind == "bonus"

    @property
    def stub_path(self) -> Path:
        return self.directory / "stub.py"

    def stub_source(self) -> str:
        return self.stub_path.read_text(encoding="utf-8")

    def tolerance(self, dtype: Any) -> Tolerance:
        name = getattr(dtype, "name", str(dtype))
        return self.tolerances.get(name, self.tolerances["float64"])


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "title": str,
    "file": str,
    "function": str,
    "signature": str,
    "params": list,
    "kind": str,
    "points": (int, float),
    "tolerances": dict,
    "lesson": str,
    "task": str,
    "hints": list,
}


def _fail(path: Path, key: str, problem: str) -> CatalogError:
    return CatalogError(f"{path}: key '{key}': {problem}")


def parse_exercise(path: Path, data: Any) -> Exercise:
    """Validate one exercise.yaml's content; every error names file and key."""
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    for key, typ in _REQUIRED.items():
        if key not in data:
            raise _fail(path, key, "missing")
        if not isinstance(data[key], typ) or isinstance(data[key], bool):
            raise _fail(path, key, f"expected {_typename(typ)}, got {type(data[key]).__name__}")
    parsed = parse_step_name(data["id"])
    if parsed is None or parsed.id != data["id"]:
        raise _fail(path, "id", f"must look like 'step3', got {data['id']!r}")
    number = parsed.number
    if not re.fullmatch(rf"step{number}_[a-z0-9_]+\.py", data["file"]):
        raise _fail(path, "file", f"must look like 'step{number}_name.py', got {data['file']!r}")
    if data["kind"] not in ("core", "bonus"):
        raise _fail(path, "kind", f"must be 'core' or 'bonus', got {data['kind']!r}")
    if len(data["hints"]) < 3 or not all(isinstance(h, str) and h.strip() for h in data["hints"]):
        raise _fail(path, "hints", "needs at least three non-empty strings")
    if not all(isinstance(p, str) for p in data["params"]):
        raise _fail(path, "params", "must be a list of parameter names")
    tolerances: dict[str, Tolerance] = {}
    for dtype, tol in data["tolerances"].items():
        if not isinstance(tol, dict) or set(tol) != {"rtol", "atol"}:
            raise _fail(path, f"tolerances.{dtype}", "needs exactly 'rtol' and 'atol'")
        try:
            tolerances[dtype] = Tolerance(rtol=float(tol["rtol"]), atol=float(tol["atol"]))
        except (TypeError, ValueError) as exc:
            raise _fail(path, f"tolerances.{dtype}", f"not a number ({exc})") from None
    if "float64" not in tolerances:
        raise _fail(path, "tolerances.float64", "missing")
    dims_raw = data.get("dims", {})
    if not isinstance(dims_raw, dict):
        raise _fail(path, "dims", "expected a mapping of argument -> list of dimension names")
    dims = {k: tuple(v) for k, v in dims_raw.items()}
    timeout = data.get("timeout", 2.0)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _fail(path, "timeout", f"must be a positive number of seconds, got {timeout!r}")
    depends = data.get("depends_on", [])
    if not isinstance(depends, list):
        raise _fail(path, "depends_on", "expected a list of step ids")
    return Exercise(
        id=data["id"],
        number=number,
        title=data["title"].strip(),
        file=data["file"],
        function=data["function"],
        signature=data["signature"],
        params=tuple(data["params"]),
        kind=data["kind"],
        points=float(data["points"]),
        timeout=float(timeout),
        tolerances=tolerances,
        dims=dims,
        depends_on=tuple(depends),
        lesson=data["lesson"].strip(),
        task=data["task"].strip(),
        hints=tuple(h.strip() for h in data["hints"]),
        solution_note=str(data.get("solution_note", "")).strip(),
        directory=path.parent,
    )


def _typename(typ: type | tuple[type, ...]) -> str:
    if isinstance(typ, tuple):
        return " or ".join(t.__name__ for t in typ)
    return {"str": "text", "list": "a list", "dict": "a mapping"}.get(typ.__name__, typ.__name__)


def load_exercise(path: Path) -> Exercise:
    try:
        # The C loader when PyYAML has it: the pure-Python one costs a learner ~0.2 s per command.
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from None
    return parse_exercise(path, data)


@functools.cache
def load_catalog(root: Path | None = None) -> tuple[Exercise, ...]:
    """Every exercise, in step order."""
    base = Path(root) if root else Path(str(resources.files(EXERCISES_PACKAGE)))
    found = [load_exercise(p) for p in sorted(base.glob("step*/exercise.yaml"))]
    found.sort(key=lambda e: e.number)
    ids = [e.id for e in found]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"{base}: two exercises share an id: {ids}")
    return tuple(found)


@dataclass(frozen=True)
class StepName:
    """A step name as a person or a file gives it: its number, and the file stem if one was named."""

    number: int
    stem: str | None = None  # "step2_scale" when the name was a file stem or file name

    @property
    def id(self) -> str:
        return f"step{self.number}"


_STEP_NAME = re.compile(r"(?:step)?([1-9][0-9]*)(_[a-z0-9_]+)?")


def parse_step_name(name: str | int) -> StepName | None:
    """The one parser of step names: 'step2', '2', 2, 'step2_scale', 'step2_scale.py' (CONTRACT §1).

    Case and surrounding spaces do not matter. None when `name` is not shaped
    like a step name at all; whether such a step exists is `resolve_step`'s
    business. (Sandbox-side code does not import the catalog and keeps its own
    check of module names.)
    """
    if isinstance(name, bool):
        return None
    text = str(name).strip().lower().removesuffix(".py")
    m = _STEP_NAME.fullmatch(text)
    if m is None or (m.group(2) and not text.startswith("step")):
        return None
    number = int(m.group(1))
    return StepName(number, f"step{number}{m.group(2)}" if m.group(2) else None)


def step_number(name: str | int) -> int:
    """The number in a step name ('step3' -> 3); 0 for a name that is not one (sorts first)."""
    parsed = parse_step_name(name)
    return parsed.number if parsed is not None else 0


def resolve_step(name: str | int, catalog: tuple[Exercise, ...] | None = None) -> Exercise:
    """Accept 'step2', '2', 2 or the file stem 'step2_scale' (CONTRACT §1)."""
    catalog = catalog if catalog is not None else load_catalog()
    parsed = parse_step_name(name)
    for ex in catalog if parsed is not None else ():
        if ex.number == parsed.number and parsed.stem in (None, ex.stem):
            return ex
    valid = ", ".join(f"{e.id} ({e.stem})" for e in catalog)
    raise UnknownStep(f"unknown step {str(name)!r}. Valid steps: {valid}")


def stub_signature(step_id: str, function: str) -> str:
    """The catalogue's signature for `function` in `step_id`, or "" (a probe, not a step)."""
    try:
        ex = resolve_step(step_id)
    except (UnknownStep, ValueError):
        return ""
    return ex.signature if ex.function == function else ""


def core_steps(catalog: tuple[Exercise, ...] | None = None) -> tuple[Exercise, ...]:
    return tuple(e for e in (catalog or load_catalog()) if not e.bonus)
