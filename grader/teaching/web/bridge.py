"""The browser lesson's one adapter onto the teaching layer.

Everything the page can do goes through here: read and save a step file
(atomic writes, a content version so an edit made in another editor is never
overwritten unseen), hints and reset (the same state file as the CLI), a
check (`practice.run_check` with one warm engine, the worked example run
through the learner's code while its launcher is open), and the widgets
(explore's data and inputs; `widgets` computes them stage by stage with the learner's own
functions, the reference standing in where one cannot answer, and says so).

Learner code runs only in sandboxes started by the engine's launcher or the
widgets' own launcher, never in this process. Checks are serialised (pytest
runs one at a time); widget calls share one lock of their own, so moving a
slider does not wait for a check.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.teaching import explore
from attn_practice.grader.teaching.web import keep, render, widgets
from attn_practice.grader.teaching.workspace import Workspace, changed_since_check

MAX_FILE_BYTES = 1024 * 1024
CORE = ("step1", "step2", "step3", "step4", "step5")
MIN_DK, MAX_DK = 1, 1024


class BadRequest(ValueError):
    """The page (or something posing as it) sent input we refuse; the message says why."""


@dataclass(frozen=True)
class Conflict:
    """The file changed on disk since the page loaded it."""

    disk_text: str | None
    disk_version: str


def version_of(data: bytes | None) -> str:
    """A content version: equal bytes, equal version; a missing file is ''."""
    return "" if data is None else hashlib.sha256(data).hexdigest()[:20]


def status_of(st: Any) -> str:
    """The state's status as text (a str or a str-valued enum)."""
    return str(getattr(st.status, "value", st.status))


class Bridge:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.catalog = load_catalog()
        self._file_lock = threading.Lock()
        self._check_lock = threading.Lock()
        self._widget_lock = threading.Lock()
        self._engine: Any = None
        self._functions = widgets.LearnerFunctions(ws.root)  # the widgets' sandboxes
        self._cache: dict[Any, Any] = {}
        self._last_key: tuple[Any, ...] | None = None
        #: the version of each file as the server last wrote or saw it (the watcher compares)
        self.known: dict[str, str] = {e.id: self.file_version(e) for e in self.catalog}
        self.checking: str | None = None

    # ------------------------------------------------------------ state
    def step(self, name: str) -> Exercise:
        """A step by id only (step1..step8): anything else is unknown (never a path)."""
        for e in self.catalog:
            if name == e.id:
                return e
        raise LookupError(f"unknown step {name[:40]!r}")

    def summary(self) -> dict[str, Any]:
        state = self.ws.load_state(self.catalog)
        stale = {e.id for e in self.catalog if changed_since_check(self.ws, state, e)}
        current = next((e for e in self.catalog if status_of(state.step(e.id)) != "passed"), None)
        return {
            "workspace": str(self.ws.root),
            "current": current.id if current else None,
            "checking": self.checking,
            "warnings": list(state.warnings),
            "steps": [{"id": e.id, "number": e.number, "title": e.title, "file": e.file,
                       "bonus": e.bonus, "status": status_of(state.step(e.id)),
                       "stale": e.id in stale,
                       "hints": state.step(e.id).hints, "hints_total": len(e.hints)}
                      for e in self.catalog],
        }

    def page(self, ex: Exercise) -> dict[str, Any]:
        state = self.ws.load_state(self.catalog)
        st = state.step(ex.id)
        text, version, problem = self.read_text(ex)
        solved = status_of(st) == "passed" or bool(st.passed_at)
        i = self.catalog.index(ex)
        return {
            "id": ex.id, "number": ex.number, "title": ex.title, "file": ex.file,
            "function": ex.function, "signature": ex.signature, "bonus": ex.bonus,
            "path": str(self.ws.file_for(ex)),
            "lesson_html": render.markdown(ex.lesson), "task_html": render.markdown(ex.task),
            "content": text, "version": version, "file_problem": problem,
            "status": status_of(st), "attempts": st.attempts,
            "stale": changed_since_check(self.ws, state, ex),
            "last_report": self._last_report(ex, version),
            "hints": [render.markdown(h) for h in ex.hints[: st.hints]], "hints_total": len(ex.hints),
            "solution": self.solution(ex) if solved else None,
            "prev": self.catalog[i - 1].id if i > 0 else None,
            "next": self.catalog[i + 1].id if i + 1 < len(self.catalog) else None,
        }

    def _last_report(self, ex: Exercise, version: str) -> dict[str, Any] | None:
        """The last check's result, marked stale when the file is not the one it was computed on."""
        kept = keep.last_report(self.ws, ex.id)
        if kept is None:
            return None
        return {**kept, "stale": kept.get("version") != version}

    def solution(self, ex: Exercise) -> dict[str, str]:
        from attn_practice.reference import attention as reference

        return {"code": inspect.getsource(reference.FUNCTIONS[ex.function]),
                "note_html": render.markdown(ex.solution_note)}

    # ------------------------------------------------------------ files
    def outside(self, ex: Exercise) -> bool:
        """The step file is a link that leads out of the workspace: the page neither reads nor writes it."""
        path = self.ws.file_for(ex)
        if not path.is_symlink():
            return False
        try:
            path.resolve().relative_to(self.ws.root.resolve())
            return False
        except (ValueError, OSError, RuntimeError):
            return True

    def _read_bytes(self, ex: Exercise) -> bytes | None:
        path = self.ws.file_for(ex)
        if self.outside(ex):
            return ("link:" + os.readlink(path)).encode()  # a version of the link, never its target
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                return b"\0" * (MAX_FILE_BYTES + 1)  # a stand-in: too big to edit here
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def file_version(self, ex: Exercise) -> str:
        try:
            return version_of(self._read_bytes(ex))
        except OSError:
            return "?"

    def read_text(self, ex: Exercise) -> tuple[str | None, str, str]:
        """(text or None, version, a problem to show instead of the editor)."""
        data = self._read_bytes(ex)
        if data is None:
            return None, "", f"{ex.file} is missing: Reset puts a fresh stub back."
        if self.outside(ex):
            return None, version_of(data), (f"{ex.file} is a link to a file outside the workspace, "
                                            "which this page does not open; edit it in your own "
                                            "editor, or Reset to put a fresh stub in its place.")
        if len(data) > MAX_FILE_BYTES:
            return None, version_of(data), (f"{ex.file} is over 1 MiB, too big to edit here; "
                                            "open it in your own editor.")
        try:
            return data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"), \
                version_of(data), ""
        except UnicodeDecodeError:
            return None, version_of(data), (f"{ex.file} is not UTF-8 text, so the page cannot edit "
                                            "it safely; open it in your own editor.")

    def save(self, ex: Exercise, content: Any, base: Any, *, force: bool = False) -> str | Conflict:
        """Write the page's text; refuse (Conflict) when the disk changed since `base`.

        `force` keeps the page's text: the other version is backed up first.
        """
        if not isinstance(content, str):
            raise BadRequest("the file's content must be text")
        if base is not None and not isinstance(base, str):
            raise BadRequest("'base' must be the version the page loaded")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest("the text is not valid Unicode (a lone surrogate?); nothing was "
                             "saved") from None
        if len(data) > MAX_FILE_BYTES:
            raise BadRequest(f"the file would be {len(data)} bytes; the limit is 1 MiB. Nothing "
                             "was saved.")
        path = self.ws.file_for(ex)
        if self.outside(ex):
            raise BadRequest(f"{ex.file} is a link to a file outside the workspace; the page does not "
                             "write there. Edit it in your own editor, or Reset it first.")
        with self._file_lock, self.ws.locked():
            disk = self._read_bytes(ex)
            disk_version = version_of(disk)
            if base is not None and disk_version != base:
                if not force:
                    text, _, _ = self.read_text(ex)
                    return Conflict(text, disk_version)
                if disk is not None:
                    self.ws.backup(path)
            self.known[ex.id] = version_of(data)  # before the write: the watcher must not see it as foreign
            if disk != data:
                if disk is not None and self.read_text(ex)[0] is None:
                    self.ws.backup(path)  # the page could not show it (not UTF-8, too big): keep it
                if path.is_symlink():
                    self.ws.backup(path)
                    path.unlink()
                try:
                    write_atomic(path, data)
                except OSError:
                    self.known[ex.id] = disk_version
                    raise
            return self.known[ex.id]

    def reset(self, ex: Exercise) -> dict[str, Any]:
        link = None
        with self._file_lock:
            if self.outside(ex):  # drop the link itself: the file it points to is not ours to copy
                link = os.readlink(self.ws.file_for(ex))
                self.ws.file_for(ex).unlink()
            backup = self.ws.reset(ex)
            self.known[ex.id] = self.file_version(ex)

        self.ws.forget_progress(ex, self.catalog)
        keep.forget_report(self.ws, ex.id)
        return {"backup": str(backup.relative_to(self.ws.root)) if backup else None, "link": link}

    def hint(self, ex: Exercise) -> dict[str, Any]:
        state, newly = self.ws.reveal_hint(ex, self.catalog)
        n = state.step(ex.id).hints
        return {"hints": [render.markdown(h) for h in ex.hints[:n]], "hints_total": len(ex.hints),
                "new": newly}

    # ------------------------------------------------------------ check
    def check(self, ex: Exercise) -> dict[str, Any]:
        """Check one step as `attn-practice check STEP` does; the report as HTML."""
        from attn_practice.grader.engine.engine import Engine
        from attn_practice.grader.teaching.practice import check_options, run_check

        with self._check_lock:
            self.checking = ex.id
            t0 = time.perf_counter()
            version = self.file_version(ex)  # the file as graded (the report is kept with it)
            try:
                state = self.ws.load_state(self.catalog)
                if self._engine is None:
                    self._engine = Engine(check_options(state, [ex]))
                try:
                    outcome = run_check(self.ws, [ex], state, engine=self._engine)
                except BaseException:
                    self._close_engine()
                    raise
            finally:
                self.checking = None
        result = outcome.report.steps[0]
        st = outcome.state.step(ex.id)
        html = render.step_html(result, root=str(self.ws.root)) + render.worked_example_html(list(outcome.worked_example)) + render.next_html(
            result, hints_used=st.hints, hints_total=outcome.hints_total.get(ex.id, 0),
            next_step=outcome.next_step, other_step=self._blamed_step(outcome, ex.id),
            why=self._blame_why(outcome, ex.id))
        for w in outcome.warnings:
            html += f'<p class="warning">warning: {render.esc(w)}</p>'
        out = {"step": ex.id, "status": result.status.value, "passed": result.passed,
               "diagnoses": result.diagnosis_ids, "html": html, "version": version,
               "next": outcome.next_step.id if outcome.next_step else None,
               "seconds": round(time.perf_counter() - t0, 3)}
        keep.save_report(self.ws, ex.id, out)
        return out

    def _blamed_step(self, outcome: Any, step_id: str) -> Exercise | None:
        """The earlier step the check blames for this one's failure (fix that one first)."""
        blamed = outcome.blame.get(step_id)
        return next((e for e in self.catalog if e.id == blamed.cause), None) if blamed else None

    @staticmethod
    def _blame_why(outcome: Any, step_id: str) -> str | None:
        blamed = outcome.blame.get(step_id)
        return blamed.why.value if blamed else None

    def warm(self) -> None:
        """Start the engine (pytest, Hypothesis, the sandbox zygote) before the first Check."""
        from attn_practice.grader.engine.engine import Engine
        from attn_practice.grader.teaching.practice import check_options

        try:
            with self._check_lock:
                if self._engine is None:
                    state = self.ws.load_state(self.catalog)
                    self._engine = Engine(check_options(state, self.catalog[:1]))
        except Exception:  # noqa: BLE001 - warming is an optimisation; a Check reports real errors
            pass
        try:
            with self._widget_lock:
                self._functions.warm()
        except Exception:  # noqa: BLE001 - as above
            pass
        for e in range(2, 11):  # the d_k slider's stops, so moving it is a cache hit
            try:
                self.scale(str(2 ** e))
            except Exception:  # noqa: BLE001 - as above
                break

    def _close_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            try:
                engine.close()
            except Exception:  # noqa: BLE001 - closing a broken engine must not hide the real error
                pass

    # ------------------------------------------------------------ widgets
    def _versions(self) -> tuple[str, ...]:
        """The content versions of steps 1-5 now: the widgets' sandboxes and cache follow them."""
        versions = tuple(self.file_version(self.step(s)) for s in CORE)
        if versions != self._last_key:
            self._last_key = versions
            # every sandbox: a step imports earlier steps' files when it loads
            self._functions.prepare([(self.step(s), versions) for s in CORE])
            self._cache = {}  # the old code's numbers
            # New code of the learner's: fill the d_k slider's stops now, so the interactions
            # that follow are quick (this call's lock is held: the thread waits for it).
            threading.Thread(target=self._warm_widgets, daemon=True, name="attnp-widgets").start()
        return versions

    def stale(self) -> list[str]:
        """Steps whose file changed since their last check (or that passed before we kept versions)."""
        state = self.ws.load_state(self.catalog)
        return [e.id for e in self.catalog if changed_since_check(self.ws, state, e)]

    def _warm_widgets(self) -> None:
        try:
            self.heatmap()
            self.example(None, None, None)
            for e in range(2, 11):
                self.scale(str(2 ** e))
        except Exception:  # noqa: BLE001 - warming is an optimisation; real calls report errors
            pass

    def _computer(self, versions: tuple[str, ...]) -> widgets.Compute:
        """compute(step_id, *args) by the learner's own function, in its sandbox."""
        def compute(step_id: str, *args: Any) -> tuple[np.ndarray | None, str]:
            return self._functions(self.step(step_id), versions, *args)

        return compute

    def _widget(self, name: tuple[Any, ...], make: Any, cache: bool = True) -> dict[str, Any]:
        t0 = time.perf_counter()
        with self._widget_lock:
            versions = self._versions()
            data = self._cache.get(name) if cache else None
            if data is None:
                data = make(self._computer(versions))
                if cache:
                    self._cache[name] = data
        out = {k: v for k, v in data.items() if k not in ("stages", "problems")}
        out.update(widgets.label(data["stages"], self.stale()))
        out["server_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        return out

    def heatmap(self) -> dict[str, Any]:
        s = explore.load_sentence()
        out = self._widget(("heatmap",), lambda c: widgets.heatmap(c, s.tokens, s.queries, s.keys))
        return {**out, "sentence": s.text}

    def example(self, q: str | None, keys: str | None, values: str | None) -> dict[str, Any]:
        for name, text in (("q", q), ("keys", keys), ("values", values)):
            if text is not None and len(text) > 4000:
                raise BadRequest(f"{name} is too long")
        try:
            ex = explore.build_example(q, keys, values)
        except explore.InputError as exc:
            raise BadRequest(str(exc)) from None
        return self._widget(("example",), lambda c: widgets.example(c, ex.q, ex.keys, ex.values),
                            cache=False)

    def scale(self, d_k_text: str | None) -> dict[str, Any]:
        try:
            d_k = int(d_k_text or "64")
        except ValueError:
            raise BadRequest(f"d_k must be a whole number, got {str(d_k_text)[:20]!r}") from None
        if not MIN_DK <= d_k <= MAX_DK:
            raise BadRequest(f"d_k must lie between {MIN_DK} and {MAX_DK}, got {d_k}")
        return self._widget(("scale", d_k), lambda c: widgets.scale(c, d_k))

    # ------------------------------------------------------------ the end
    def close(self) -> None:
        self._functions.closed = True
        with self._widget_lock:
            self._functions.close()
        self._close_engine()
