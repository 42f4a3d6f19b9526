"""Course files (`grade --course course.yaml`): which steps, worth what, how strict.

Example:

    steps: [step1, step2, step3, step4, step5, step6]
    points: {step5: 2}
    timeouts: {step5: 4.0}       # seconds per call
    max_examples: 60
    shrink: true                 # report Hypothesis-shrunk failing inputs (slower; default false)
    extra_suites: [private_tests/]   # relative to this file; never shipped to students
    secret_env: MY_COURSE_SECRET     # grade's examples come from this env variable's secret

Errors name the file, the key and the line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from attn_practice.grader.catalog import Exercise, UnknownStep, load_catalog, resolve_step
from attn_practice.grader.engine.secret import DEFAULT_ENV, ENV_NAME

KEYS = {"steps", "points", "timeouts", "max_examples", "shrink", "extra_suites", "name", "secret_env"}


class CourseError(ValueError):
    pass


@dataclass(frozen=True)
class Course:
    path: Path | None
    steps: tuple[Exercise, ...] | None  # None: the default course (core + present bonus)
    points: dict[str, float] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    max_examples: int | None = None
    shrink: bool = False  # grade reports the smallest failing recorded input unless asked to shrink
    extra_suites: tuple[Path, ...] = ()
    fingerprint: str = ""
    #: the environment variable holding grade's examples' secret (CONTRACT 4.3)
    secret_env: str = DEFAULT_ENV


def load_course(path: Path) -> Course:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CourseError(f"{path}: line 1: expected a mapping of settings")
    lines = _key_lines(node)

    def fail(key: str, problem: str) -> CourseError:
        return CourseError(f"{path}: line {lines.get(key, 1)}: key '{key}': {problem}")

    unknown = set(data) - KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise fail(key, f"unknown setting (known: {', '.join(sorted(KEYS))})")
    steps = None
    if "steps" in data:
        if not isinstance(data["steps"], list) or not data["steps"]:
            raise fail("steps", "expected a non-empty list of step names")
        try:
            steps = tuple(resolve_step(s) for s in data["steps"])
        except UnknownStep as exc:
            raise fail("steps", str(exc)) from None
    points = _step_numbers(data, "points", fail)
    timeouts = _step_numbers(data, "timeouts", fail)
    max_examples = data.get("max_examples")
    if max_examples is not None and (not isinstance(max_examples, int) or isinstance(max_examples, bool)
                                     or not 1 <= max_examples <= 10_000):
        raise fail("max_examples", "expected a whole number from 1 to 10000")
    shrink = data.get("shrink", False)
    if not isinstance(shrink, bool):
        raise fail("shrink", f"expected true or false, got {shrink!r}")
    secret_env = data.get("secret_env", DEFAULT_ENV)
    if not isinstance(secret_env, str) or not ENV_NAME.fullmatch(secret_env):
        raise fail("secret_env", f"expected the name of an environment variable (letters, digits, _), "
                                 f"got {secret_env!r}")
    suites: list[Path] = []
    for entry in data.get("extra_suites") or []:
        p = (path.parent / str(entry)).resolve()
        if not p.exists():
            raise fail("extra_suites", f"{entry} does not exist (looked in {p})")
        suites.append(p)
    return Course(path=path, steps=steps, points=points, timeouts=timeouts, max_examples=max_examples,
                  shrink=shrink, extra_suites=tuple(suites), fingerprint=_fingerprint(text, suites),
                  secret_env=secret_env)


def _step_numbers(data: dict[str, Any], key: str, fail: Any) -> dict[str, float]:
    raw = data.get(key) or {}
    if not isinstance(raw, dict):
        raise fail(key, "expected a mapping of step -> number")
    out = {}
    for name, value in raw.items():
        try:
            ex = resolve_step(name)
        except UnknownStep as exc:
            raise fail(key, str(exc)) from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise fail(key, f"{name}: expected a positive number, got {value!r}")
        out[ex.id] = float(value)
    return out


def _key_lines(node: Any) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def _fingerprint(text: str, suites: list[Path]) -> str:
    h = hashlib.sha256(text.encode())
    for s in suites:
        files = [s] if s.is_file() else sorted(p for p in s.rglob("*.py") if p.is_file())
        for f in files:
            h.update(str(f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def default_course() -> Course:
    return Course(path=None, steps=None)


__all__ = ["Course", "CourseError", "default_course", "load_course", "load_catalog"]
