"""Taking one contract function, by name, out of a notebook or a single module.

Parsed with `ast`, never run: the grader only copies text. A notebook's
cells (or a module) are one sequence of top-level statements. The function
is the LAST top-level statement that binds its name (a notebook run top to
bottom ends with that definition); then, transitively, every top-level
statement binding a name it uses: imports, helpers, constants. A name used
inside a function body resolves to its last binding anywhere (it is looked
up at call time); a name used at the top level (a decorator, a default, the
right side of `SCALE = 1 / D`) to its last binding before that statement.
Local names (parameters, assignments, loop variables) are not looked up, so
a test cell's `Q = np.random.rand(3, 4)` is never dragged in by a parameter
called `Q`. Everything else (prints, plots, test calls) is left out.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """A piece of learner code to parse: one notebook cell, or a whole module."""

    where: str  # "attention.ipynb, cell 3" / "attention.py"
    source: str


@dataclass(frozen=True)
class _Stmt:
    order: int
    where: str
    node: ast.stmt
    lines: tuple[str, ...]
    binds: frozenset[str]

    # Worked out only when a function is taken (`extract`): a folder of plain step files is
    # parsed only to see what each defines, and a class of thousands must not wait on this.
    @functools.cached_property
    def text(self) -> str:
        return _text(self.lines, self.node)

    @functools.cached_property
    def _names(self) -> tuple[frozenset[str], frozenset[str]]:
        now, later = _uses(self.node)
        return frozenset(now), frozenset(later)

    @property
    def now(self) -> frozenset[str]:
        """Names evaluated when the statement runs."""
        return self._names[0]

    @property
    def later(self) -> frozenset[str]:
        """Names a function body looks up when called."""
        return self._names[1]


@dataclass
class Parsed:
    statements: list[_Stmt]
    unparsable: list[tuple[Chunk, str]]  # chunks that are not Python, and the error


def parse(chunks: Sequence[Chunk]) -> Parsed:
    out = Parsed([], [])
    for chunk in chunks:
        try:
            tree = ast.parse(chunk.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            out.unparsable.append((chunk, f"line {line}: {getattr(exc, 'msg', exc)}" if line else str(exc)))
            continue
        lines = tuple(chunk.source.splitlines(keepends=True))
        for node in tree.body:
            out.statements.append(_Stmt(len(out.statements), chunk.where, node, lines, frozenset(_binds(node))))
    return out


def defines(parsed: Parsed, name: str) -> bool:
    """Whether the code itself defines `name` (an import of it from elsewhere does not count)."""
    last = _last_binder(parsed.statements, name, len(parsed.statements))
    return last is not None and not isinstance(last.node, (ast.Import, ast.ImportFrom))


def extract(parsed: Parsed, name: str) -> str | None:
    """The source of a module defining `name` and what it needs, or None if nothing binds it."""
    target = _last_binder(parsed.statements, name, len(parsed.statements))
    if target is None:
        return None
    chosen: dict[int, _Stmt] = {}
    work = [target]
    while work:
        stmt = work.pop()
        if stmt.order in chosen:
            continue
        chosen[stmt.order] = stmt
        for used in stmt.now:
            dep = _last_binder(parsed.statements, used, stmt.order)
            if dep is not None:
                work.append(dep)
        for used in stmt.later:
            dep = _last_binder(parsed.statements, used, len(parsed.statements))
            if dep is not None:
                work.append(dep)
        for s in parsed.statements:  # `from x import *` may bind anything
            if "*" in s.binds and s.order < stmt.order:
                work.append(s)
    future = [s for s in parsed.statements if isinstance(s.node, ast.ImportFrom)
              and s.node.module == "__future__"]
    ordered = sorted({s.order: s for s in [*future, *chosen.values()]}.values(),
                     key=lambda s: (s not in future, s.order))
    parts = [f"{MARK}{s.where}, line {_start(s.node)}\n{s.text}" for s in ordered]
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


#: Starts the line before each statement taken: where it came from (`line_map` reads it back).
MARK = "# attn-practice: from "
_MARK_RE = re.compile(rf"^{re.escape(MARK)}(.+), line (\d+)$")


def _start(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def line_map(text: str) -> dict[int, tuple[str, int]]:
    """Line of a generated step file -> (where it came from: "nb.ipynb, cell 3" / "attention.py", line)."""
    out: dict[int, tuple[str, int]] = {}
    where, line = "", 0
    for number, row in enumerate(text.splitlines(), 1):
        m = _MARK_RE.match(row)
        if m:
            where, line = m.group(1), int(m.group(2))
            continue
        if where:
            out[number] = (where, line)
            line += 1
    return out


def python_source(data: bytes, name: str) -> tuple[str, str]:
    """(text, problem) for a module's bytes, read as `import` reads them.

    The import system compiles the bytes themselves: a BOM or a PEP 263 coding
    line chooses the encoding (UTF-8 by default), and CPython's tokenizer lets
    undecodable bytes pass inside a comment (a Latin-1 `é` in `# café`). So
    the bytes are compiled as they are; `problem` says where Python refuses
    them ("line 4: ..."), and the text keeps any stray byte as U+FFFD.
    """
    import io
    import tokenize

    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:
        return data.decode("utf-8", "replace"), f"line {_line(exc) or 1}: {exc.msg or exc}"
    try:
        text = data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace"), f"line 1: unknown encoding {encoding!r} in the coding line"
    try:
        compile(data, name, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        said = str(exc.msg or exc)
        if "codec" in said or "encoding" in said or "UTF-8" in said:
            return text, (f"line {_line(exc)}: not valid in any encoding Python accepts without a coding "
                          f"line ({said}); save the file as UTF-8, or declare its encoding on line 1")
    except (ValueError, RecursionError, MemoryError):
        pass  # NUL bytes, depth: `parse` says so
    return text, ""


def _line(exc: SyntaxError) -> int:
    return exc.lineno or 0


def is_stub(parsed: Parsed, name: str) -> bool:
    """Whether `name` is still a stub: its body only a docstring, `pass`, `...` or `raise NotImplementedError`."""
    last = _last_binder(parsed.statements, name, len(parsed.statements))
    if last is None or not isinstance(last.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for stmt in last.node.body:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                continue
        return False
    return True


def mentions_def(source: str, name: str) -> bool:
    """A `def name(` line in text that does not parse (then the grader shows the syntax error)."""
    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", source, re.MULTILINE) is not None


# ------------------------------------------------------------ name analysis
def _last_binder(statements: Sequence[_Stmt], name: str, before: int) -> _Stmt | None:
    for s in reversed(statements[:before]):
        if name in s.binds:
            return s
    return None


def _text(lines: Sequence[str], node: ast.stmt) -> str:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    col = 0 if decorators else node.col_offset
    end = node.end_lineno or node.lineno
    chunk = lines[start - 1:end]
    if not chunk:
        return ""
    if len(chunk) == 1:
        return chunk[0][col:node.end_col_offset if not decorators and node.end_col_offset is not None else None]
    first, last = chunk[0][col:], chunk[-1]
    if node.end_col_offset is not None:
        last = last[:node.end_col_offset]
    return first + "".join(chunk[1:-1]) + last


def _binds(node: ast.AST) -> set[str]:
    """Top-level names a statement binds (not looking inside function or class bodies)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add(a.asname or a.name.split(".")[0])
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _uses(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names read when the statement runs, names its function bodies read when called).

    Iterative: a learner's 100,000-term expression is a very deep tree."""
    now: set[str] = set()
    later: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(_signature_parts(n))
            later.update(_free_names(n))
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            now.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return now, later


def _signature_parts(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Iterable[ast.AST]:
    args = fn.args
    yield from args.defaults
    yield from (d for d in args.kw_defaults if d is not None)
    if not isinstance(fn, ast.Lambda):
        yield from fn.decorator_list
        if fn.returns is not None:
            yield fn.returns
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                yield a.annotation


def _free_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names a function's body reads that it does not bind itself (approximately: any scope)."""
    args = fn.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    loads: set[str] = set()
    declared_global: set[str] = set()
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                (loads if isinstance(n.ctx, ast.Load) else local).add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(n.name)
            elif isinstance(n, ast.arg):
                local.add(n.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                local.update(a.asname or a.name.split(".")[0] for a in n.names)
            elif isinstance(n, ast.Global):
                declared_global.update(n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                local.add(n.name)
    return loads - (local - declared_global)


__all__ = ["MARK", "Chunk", "Parsed", "defines", "extract", "is_stub", "line_map", "mentions_def", "parse",
           "python_source"]
