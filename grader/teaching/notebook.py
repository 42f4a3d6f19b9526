"""`attn_practice.check(step, function)`: grade a function from a notebook or a script.

The function object never runs here. Its *source* (plus the imports,
constants and same-module helper functions it refers to by name) becomes a
step file that the engine grades in the sandbox, exactly as `check` grades
a workspace file.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import tempfile
import textwrap
import types
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_practice.grader.catalog import Exercise, resolve_step
from attn_practice.grader.results import Status, StepResult
from attn_practice.grader.teaching.worked_example import STEPS, worked_example_rows

if TYPE_CHECKING:
    from rich.console import Console

PRELUDE = "from __future__ import annotations\n\nimport math\n\nimport numpy as np\n"
OPTIONS = ("verbose", "show", "console", "max_examples", "reference_steps", "worked_example")
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))


@dataclass(frozen=True, repr=False)
class NotebookResult(StepResult):
    """A `StepResult` with a one-line repr, so a notebook cell does not echo the whole report.

    The line still says what matters: the verdict, how many tests passed, the
    known mistakes named, and the first failure's headline.
    """

    def __repr__(self) -> str:
        passed = sum(t.status is Status.PASSED for t in self.tests)
        parts = [f"{self.id} {self.function or ''}".rstrip() + f": {self.status.value}",
                 f"{self.score:g}/{self.max_score:g} points"]
        if self.tests:
            parts.append(f"{passed} of {len(self.tests)} tests passed")
        if self.diagnoses:
            parts.append("known mistake" + ("s" if len(self.diagnoses) > 1 else "") + ": "
                         + ", ".join(self.diagnosis_ids))
        first = next((t for t in self.tests if t.status is not Status.PASSED), None)
        if first is not None and (first.message or first.failure):
            headline = first.failure.summary if first.failure else first.message
            parts.append(f"first failure: {_short(headline, 100)}")
        return "<" + "; ".join(parts) + ">"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _a(word: str) -> str:
    """'an int', 'a str': the article a type name needs."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


# ------------------------------------------------------------------ source
@dataclass
class LearnerFile:
    source: str
    unresolved: list[str]  # global names the function uses that could not be sent along


def _no_source(function: Any, ex: Exercise, why: str) -> ValueError:
    name = getattr(function, "__name__", type(function).__name__)
    return ValueError(
        f"check() runs your function's source code in a separate process, and cannot get it "
        f"for {name!r}: {why}. Define the function with def in a notebook cell or a .py file, "
        f"e.g.\n\n    def {ex.function}({', '.join(ex.params)}):\n        ...\n\n"
        f"then pass it: check({ex.id!r}, {ex.function})"
    )


def learner_source(function: Any, ex: Exercise) -> LearnerFile:
    """The text of a step file that defines `ex.function` the way `function` does."""
    if isinstance(function, (types.BuiltinFunctionType, types.BuiltinMethodType)) or \
            type(function).__name__ == "ufunc":
        raise _no_source(function, ex, "it is built in, not written in Python")
    target = inspect.unwrap(function) if callable(function) else function
    if inspect.ismethod(target):
        target = target.__func__
    if not inspect.isfunction(target):
        raise _no_source(function, ex, f"it is {_a(type(function).__name__)} ({_short(repr(function), 40)}), "
                                       "not a function")
    if target.__name__ == "<lambda>":
        raise _no_source(function, ex, "it is a lambda")
    source = _source_of(target)
    if source is None:
        raise _no_source(function, ex, "Python kept no source for it (as happens for a function "
                                       "typed at the interactive >>> prompt or made with exec)")
    collector = _Collector(target.__globals__, target.__module__)
    collector.add_function(target, top=True)
    body = source
    if target.__name__ != ex.function:
        body = _rename(source, target.__name__, ex.function)
        body += f"\n\n{target.__name__} = {ex.function}\n"
    parts = [PRELUDE]
    imports = [line for line in dict.fromkeys(collector.imports) if line not in PRELUDE.splitlines()]
    if imports:
        parts.append("\n".join(imports) + "\n")
    if collector.constants:
        parts.append("\n".join(collector.constants) + "\n")
    closure = _closure_constants(target, ex, function)
    if closure:
        parts.append("\n".join(closure) + "\n")
    parts.extend(s + "\n" for s in collector.helpers)
    parts.append(body.rstrip() + "\n")
    return LearnerFile("\n\n".join(p.rstrip("\n") for p in parts) + "\n", collector.unresolved)


def _source_of(fn: types.FunctionType) -> str | None:
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    text = textwrap.dedent(text)
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text


def _rename(source: str, old: str, new: str) -> str:
    """Rename the `def old(` line (after any decorators) to `def new(`."""
    tree = ast.parse(source)
    node = tree.body[0]
    lines = source.splitlines(keepends=True)
    i = node.lineno - 1  # the def line itself (decorators come before it)
    lines[i] = re.sub(rf"\bdef\s+{re.escape(old)}\b", f"def {new}", lines[i], count=1)
    return "".join(lines)


def _closure_constants(fn: types.FunctionType, ex: Exercise, original: Any) -> list[str]:
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:
            value = None
        if _is_simple(value):
            out.append(f"{name} = {value!r}")
        else:
            raise _no_source(original, ex, f"it uses {name!r} from the function around it; define "
                                           "it at the top level instead")
    return out


def _is_simple(value: Any) -> bool:
    if isinstance(value, _SIMPLE):
        return isinstance(value, (str, bytes)) and len(value) < 10_000 or not isinstance(value, (str, bytes))
    if isinstance(value, tuple):
        return len(value) < 1000 and all(_is_simple(v) for v in value)
    return False


def _global_names(fn: types.FunctionType, source: str) -> list[str]:
    """Names the function reads as globals: bare names in its code that are not its locals."""
    code_names: set[str] = set()
    local: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        code_names.update(code.co_names)
        local.update(code.co_varnames, code.co_cellvars)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    bare = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    return sorted((code_names & bare) - local - {fn.__name__})


def _attribute_chains(source: str, name: str) -> set[str]:
    """'a.b' for every `name.a.b...` in the source (to import submodules used that way)."""
    chains = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            parts = []
            cur: ast.AST = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id == name:
                parts.reverse()
                for k in range(1, len(parts) + 1):
                    chains.add(".".join(parts[:k]))
    return chains


class _Collector:
    """Gathers what a function needs from its module: imports, constants, helper functions."""

    def __init__(self, module_globals: dict[str, Any], module: str):
        self.globals = module_globals
        self.module = module
        self.imports: list[str] = []
        self.constants: list[str] = []
        self.helpers: list[str] = []
        self.unresolved: list[str] = []
        self.seen: set[str] = set()

    def add_function(self, fn: types.FunctionType, *, top: bool = False) -> None:
        source = _source_of(fn)
        if source is None:
            return
        if not top:
            self.helpers.append(source.rstrip())
        for name in _global_names(fn, source):
            if name in self.seen:
                continue
            self.seen.add(name)
            self.add_name(name, source)

    def add_name(self, name: str, source: str) -> None:
        if name not in self.globals:
            return  # a builtin, or a name the learner has not defined (a NameError will say so)
        value = self.globals[name]
        if isinstance(value, types.ModuleType):
            self.imports.append(_import_line(value.__name__, name))
            for chain in sorted(_attribute_chains(source, name)):
                sub = f"{value.__name__}.{chain}"
                if sub in sys.modules:
                    self.imports.append(f"import {sub}")
            return
        if _is_simple(value):
            self.constants.append(f"{name} = {value!r}")
            return
        fn = inspect.unwrap(value) if callable(value) else value
        if inspect.isfunction(fn) and (fn.__module__ == self.module or not _importable(value, name)):
            self.add_function(fn)
            if fn.__name__ != name:
                self.helpers.append(f"{name} = {fn.__name__}")
            return
        line = _from_import(value, name)
        if line is not None:
            self.imports.append(line)
            return
        self.unresolved.append(name)


def _import_line(module: str, name: str) -> str:
    if name == module:
        return f"import {module}"
    return f"import {module} as {name}"


def _importable(value: Any, name: str) -> bool:
    return _from_import(value, name) is not None


def _from_import(value: Any, name: str) -> str | None:
    module = getattr(value, "__module__", None)
    attr = getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(attr, str) or module in ("__main__", "builtins"):
        return None
    mod = sys.modules.get(module)
    if mod is None or getattr(mod, attr, None) is not value:
        return None
    spec = getattr(mod, "__spec__", None)
    origin = getattr(spec, "origin", None) or ""
    if not _installed(origin):
        return None  # a learner's own module (e.g. step3_softmax.py): send its source instead
    return f"from {module} import {attr}" + (f" as {name}" if name != attr else "")


def _installed(origin: str) -> bool:
    """True for modules that come with Python or an installed package (not a learner's file)."""
    if origin in ("built-in", "frozen"):
        return True
    if not origin:
        return False
    path = Path(origin).resolve()
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    import site

    for p in [*site.getsitepackages(), site.getusersitepackages()]:
        roots.add(Path(p).resolve())
    return any(path.is_relative_to(r) for r in roots)


# ------------------------------------------------------------------ grading
def check(step: str, function: Any, **options: Any) -> StepResult:
    """Grade `function` as STEP with the full engine; render the result; return it.

    Options: verbose (every failure in full), show (render; default True),
    console (a rich Console; default rich.get_console(), which renders in
    Jupyter), max_examples (Hypothesis examples per test), reference_steps
    (let the function import earlier steps' reference versions), worked_example
    (after a failure of steps 1-5, show the lesson's example computed by it).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"check() got unknown option(s) {', '.join(unknown)}; "
                        f"it accepts {', '.join(OPTIONS)}")
    ex = resolve_step(step)
    learner_file = learner_source(function, ex)
    data = learner_file.source.encode("utf-8")
    files = {ex.file: data}

    from attn_practice.grader.engine.engine import Engine, RunOptions
    from attn_practice.grader.engine.shims import reference_shims

    run = {k: options[k] for k in ("max_examples", "reference_steps") if k in options}
    run.setdefault("speed_notes", True)
    show = options.get("show", True)
    console = options.get("console")
    if show and console is None:
        import rich

        console = rich.get_console()
    name = _learner_name(function, ex)
    with tempfile.TemporaryDirectory(prefix="attnp-notebook-") as tmp, Engine(RunOptions(**run)) as engine:
        report = engine.grade(Path(tmp), [ex], files=files, label=f"<notebook {ex.id}>")
        result = _as_called(report.steps[0], ex.function, name)
        if learner_file.unresolved:
            note = (f"check() could not send {', '.join(learner_file.unresolved)} to the grader "
                    "along with your function; define what it needs inside the function or at the "
                    "top level of the cell as plain numbers or imports")
            result = _with_note(result, note)
        rows: tuple = ()
        if show and options.get("worked_example", True) and ex.id in STEPS and \
                result.status not in (Status.PASSED, Status.MISSING):
            shims = reference_shims(ex) if options.get("reference_steps") else None
            try:
                rows = tuple(worked_example_rows(Path(tmp), engine.launcher, steps=[ex.id],
                                                 files=files, shims=shims))
            except Exception:  # noqa: BLE001 - the panel is a teaching aid, never a reason to fail
                rows = ()
    if show:
        assert console is not None
        _render(console, result, ex, name, rows, verbose=bool(options.get("verbose", False)))
    return NotebookResult(**{f.name: getattr(result, f.name) for f in fields(result)})


def _learner_name(function: Any, ex: Exercise) -> str:
    """The name the learner calls their function by in the notebook."""
    target = inspect.unwrap(function)
    target = getattr(target, "__func__", target)
    name = getattr(target, "__name__", "")
    return name if name.isidentifier() else ex.function


def _as_called(result: StepResult, function: str, name: str) -> StepResult:
    """Repro lines that call the function by the learner's own name (`my_softmax(...)`)."""
    if name == function:
        return result
    from dataclasses import replace

    pattern = re.compile(rf"^{re.escape(function)}\(")

    def rename(t: Any) -> Any:
        f = t.failure
        if f is None or not pattern.match(f.repro):
            return t
        return replace(t, failure=replace(f, repro=pattern.sub(f"{name}(", f.repro, count=1)))

    return replace(result, tests=tuple(rename(t) for t in result.tests))


def _with_note(result: StepResult, note: str) -> StepResult:
    from dataclasses import replace

    return replace(result, notes=(*result.notes, note))


def _render(console: Console, result: StepResult, ex: Exercise, name: str, rows: tuple, *,
            verbose: bool) -> None:
    """The whole report as ONE print, so a notebook cell gets one output, not dozens.

    Repro lines are shown without `from step3_softmax import ...`: in a
    notebook the function is already defined, under the learner's own name.
    """
    from dataclasses import replace

    from attn_practice.grader.reports.terminal import render_step
    from attn_practice.grader.teaching.screens import render_worked_example

    shown = replace(result, file="", function=name)
    with console.capture() as captured:
        render_step(console, shown, verbose=verbose)
        if rows:
            console.print()
            render_worked_example(console, rows)
        if result.passed:
            console.print(f"[bold green]{ex.id} passes.[/] In a workspace, `attn-practice check "
                          f"{ex.id}` records it.")
    from rich.text import Text

    console.print(Text.from_ansi(captured.get().rstrip("\n")), soft_wrap=True)


__all__ = ["NotebookResult", "check", "learner_source"]
