"""The mistakes a hosted session met, fixed or not: `report`'s `diagnoses_met` (CONTRACT §7.1).

`host export --format json` gives each learner's record a `history`: every
check of the session, oldest first, as `{"step", "at", "status",
"diagnoses"}`. The latest reports say only what was still wrong at the end
of the lab; a lecture that follows it is about every mistake the class met
on the way. So `report` on such an export adds, per diagnosis id, the
learners who met it at any check (`count`, `submissions`), beside those
whose final report still shows it (`still_open`).

Records without a `history` (plain `grade --format json` output) add
nothing: `read_histories` returns None when no record has one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

History = Mapping[str, Sequence[Mapping[str, Any]]]


def read_histories(paths: Iterable[Path]) -> dict[str, list[dict[str, Any]]] | None:
    """submission label -> its session history, from export files; None when none holds one.

    The files were already read and checked by `load_members`; anything
    malformed here is skipped (the rest of the report stands).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    seen = False
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        for record in data if isinstance(data, list) else [data]:
            if not isinstance(record, dict) or not isinstance(record.get("history"), list):
                continue
            seen = True
            label = str(record.get("submission", ""))
            out.setdefault(label, []).extend(_entry(e) for e in record["history"] if isinstance(e, dict))
    return out if seen else None


def _entry(e: Mapping[str, Any]) -> dict[str, Any]:
    diagnoses = e.get("diagnoses")
    return {"step": str(e.get("step", "")), "at": str(e.get("at", "")), "status": str(e.get("status", "")),
            "diagnoses": [str(d) for d in diagnoses] if isinstance(diagnoses, list) else []}


def diagnoses_met(history: History, still_open: Mapping[str, set[str]],
                  words: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, Any]]:
    """id -> {count, submissions, still_open, fixed, steps, title}: every mistake met, most met first.

    `still_open`: id -> the labels whose final report still shows it (they
    are counted as met too: their last check met it). `words`: titles by id.
    """
    met: dict[str, list[str]] = {}
    steps: dict[str, set[str]] = {}
    for label, checks in history.items():
        for check in checks:
            for did in check.get("diagnoses", ()):
                if label not in met.setdefault(did, []):
                    met[did].append(label)
                steps.setdefault(did, set()).add(str(check.get("step", "")))
    for did, labels in still_open.items():
        for label in sorted(labels):
            if label not in met.setdefault(did, []):
                met[did].append(label)
    ordered = sorted(met.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {did: {"count": len(labels), "submissions": labels,
                  "still_open": [x for x in labels if x in still_open.get(did, set())],
                  "fixed": [x for x in labels if x not in still_open.get(did, set())],
                  "steps": sorted(s for s in steps.get(did, set()) if s),
                  "title": words.get(did, {}).get("title") or did}
            for did, labels in ordered}
