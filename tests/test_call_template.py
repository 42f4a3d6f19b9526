"""A replayed test's calls built from its template are the calls its dry run makes, and grade alike.

`engine.call_template` learns, once per engine, how each hidden test's calls
follow from its examples, so `grade` no longer dry-runs every test on every
submission. These tests hold it to the dry run: the same calls on examples
rebuilt under other salts; no template for a test that derives its arrays or
whose calls depend on the values; the same reports for a class either way;
and no hidden test of ours ever changes an example's array in place (the
template's calls share those arrays with the real run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_class_rate import _Batcher
from test_grade import make_submission

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.course import default_course
from attn_practice.grader.engine import call_template, replay
from attn_practice.grader.results import without_timings
from attn_practice.grader.staff.batch import batch_engine, grade_with, options_for, step_ids_for
from attn_practice.grader.suites import strategies
from attn_practice.grader.suites.assertions import StepContext
from attn_practice.reference import attention

ALL_FILES = ("step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention",
             "step6_masked", "step7_self_attention", "step8_multi_head")


def _recording(seeds: list[int]) -> list[dict[str, Any]]:
    """Examples as the store keeps them: recipes (a 3x4 array and an axis each)."""
    return [{"xa": strategies.build("arrays", {"arrays": [[[3, 4], "<f8", "normal", seed, 10.0]],
                                               "extra": [seed % 2]}, None)} for seed in seeds]


def _softmax_context() -> StepContext:
    return StepContext(resolve_step("step3"), _Batcher(), attention.softmax)  # type: ignore[arg-type]


def _same_calls(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for (args1, kw1, n1), (args2, kw2, n2) in zip(a, b, strict=True):
        if n1 != n2 or kw1.keys() != kw2.keys() or len(args1) != len(args2):
            return False
        for x, y in zip([*args1, *kw1.values()], [*args2, *kw2.values()], strict=True):
            if isinstance(x, np.ndarray) != isinstance(y, np.ndarray):
                return False
            if isinstance(x, np.ndarray) and not (x.dtype == y.dtype and np.array_equal(x, y)):
                return False
            if not isinstance(x, np.ndarray) and (type(x) is not type(y) or x != y):
                return False
    return True


def test_a_template_gives_the_calls_a_dry_run_makes_under_any_salt() -> None:
    def test(step: StepContext, xa: tuple[Any, ...]) -> None:
        x, axis = xa
        step.check(x)
        step.check(x, axis=axis)
        step.call_shaped(x, axis)

    ctx = _softmax_context()
    recording = _recording([11, 12, 13, 14])
    template = call_template.learn(test, {"step": ctx}, recording, replay._materialize)
    assert template is not None and len(template.calls) == 12
    for salt in (1, 99, 2**40 + 3):
        examples = [replay._materialize(ex, salt) for ex in recording]
        built = template.apply(examples)
        dry = call_template.dry_calls(test, {"step": ctx}, examples)[0]
        assert _same_calls(built, dry)
        # ...and they are the real run's own arrays, which the batch then matches at once
        assert built[0][0][0] is examples[0]["xa"][0]
    assert not ctx.dry_run and ctx.collecting is None


def test_no_template_for_a_test_that_derives_its_arrays_or_calls_by_value() -> None:
    def derives(step: StepContext, xa: tuple[Any, ...]) -> None:
        step.check(xa[0] * 2.0)

    def by_value(step: StepContext, xa: tuple[Any, ...]) -> None:
        for _ in range(1 + int(abs(float(xa[0].flat[0])) * 1000) % 3):
            step.check(xa[0])

    def breaks(step: StepContext, xa: tuple[Any, ...]) -> None:
        step.check(xa[0])
        raise RuntimeError("a dry run that stops half-way")

    recording = _recording([21, 22, 23, 24, 25, 26])
    counts = [[len(call_template.dry_calls(by_value, {"step": _softmax_context()},
                                           [replay._materialize(ex, salt)])[0]) for ex in recording]
              for salt in call_template.LEARNING_SALTS]
    assert counts[0] != counts[1]  # the premise: how many calls an example makes follows its values
    for test in (derives, by_value, breaks):
        assert call_template.learn(test, {"step": _softmax_context()}, recording, replay._materialize) is None


@pytest.fixture(scope="module")
def class_of_five(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("templates")
    return [
        make_submission(root / "right", steps=ALL_FILES),
        make_submission(root / "wrong1", {1: "wrong_scores_transposed"}),
        make_submission(root / "wrong3", {3: "wrong_softmax_global"}),
        make_submission(root / "wrong4", {4: "wrong_weights_transposed"}),
        make_submission(root / "wrong5", {5: "wrong_no_scale"}),
    ]


def _grade(subs: list[Path], known_calls: bool) -> tuple[list[dict], dict]:
    course = default_course()
    with batch_engine(options_for(course, secret="templates")) as engine:
        engine.replay.known_calls = known_calls
        reports = [without_timings(grade_with(engine, s, step_ids_for(course, s), label=s.name).to_dict())
                   for s in subs]
        return reports, dict(engine.replay._templates)


@pytest.mark.slow
def test_a_class_gets_the_same_reports_with_templates_as_with_dry_runs(class_of_five):
    with_templates, templates = _grade(class_of_five, True)
    with_dry_runs, none = _grade(class_of_five, False)
    assert with_templates == with_dry_runs
    assert not none
    # every Hypothesis test of the core steps has a template: the dry runs really are gone
    core = {k for k in templates if any(f"test_step{n}_" in k[0] for n in range(1, 6))}
    assert len(core) >= 15 and all(templates[k] is not None for k in core)
    assert [r["passed"] for r in with_templates] == [True, False, False, False, False]


@pytest.mark.slow
def test_no_hidden_test_changes_an_example_in_place(class_of_five, monkeypatch):
    """Every example array read-only: a suite that wrote into one would fail a right submission."""
    built = replay._materialize

    def frozen(example: dict[str, Any], salt: int | None) -> dict[str, Any]:
        out = built(example, salt)

        def freeze(v: Any) -> None:
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
            elif isinstance(v, (tuple, list)):
                for x in v:
                    freeze(x)

        for v in out.values():
            freeze(v)
        return out

    monkeypatch.setattr(replay, "_materialize", frozen)
    reports, templates = _grade(class_of_five[:1], True)
    assert reports[0]["passed"] is True and len(reports[0]["steps"]) == 8, reports[0]
    assert templates
