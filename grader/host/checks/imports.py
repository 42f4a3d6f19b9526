"""Which earlier steps a hosted check must grade first: those it imports whose code changed.

As `check` does in a workspace (`practice.check_imports_first`): a check of
step 5 whose file imports steps 1-4 grades, first, each imported step (and
what those import) that changed since its last result or was never checked,
so that a failure is blamed on the right file on the first check, and grades
none of them when none changed. Read from the sources with `ast`; learner
code never runs here.
"""

from __future__ import annotations

from collections.abc import Iterable

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.teaching.workspace import imported_module_names


def imports_of(step: str, files: dict[str, str], catalog: Iterable[Exercise] | None = None) -> list[Exercise]:
    """The other steps `step`'s file imports, directly or through each other, in step order."""
    steps = list(catalog or load_catalog())
    by_module = {e.module: e for e in steps}
    by_id = {e.id: e for e in steps}
    found: dict[str, Exercise] = {}
    todo = [by_id[step]]
    while todo:
        ex = todo.pop()
        for module in imported_module_names(files.get(ex.file, "")):
            dep = by_module.get(module)
            if dep is not None and dep.id != step and dep.id not in found and dep.file in files:
                found[dep.id] = dep
                todo.append(dep)
    return sorted(found.values(), key=lambda e: e.number)


def to_grade_first(step: str, files: dict[str, str], unchanged: Iterable[str]) -> list[str]:
    """Imported steps to grade before `step`: changed since their last result (or never
    checked), and not the untouched stub (whose NotImplementedError names it already)."""
    keep = set(unchanged)
    return [d.id for d in imports_of(step, files)
            if d.id not in keep and files.get(d.file) != d.stub_source()]
