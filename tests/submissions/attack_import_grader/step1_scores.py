"""Attack: get the grader's reference answer by importing attn_practice (every route) or exec-ing its file."""

import gc
import glob
import importlib
import importlib.util
import json
import os
import sys

import numpy as np

ROUTES = []


def _via_import():
    import attn_practice.reference.attention as ref  # noqa: F401

    return ref


def _via_importlib():
    return importlib.import_module("attn_practice.reference.attention")


def _via_unblocked_import():
    sys.meta_path[:] = [f for f in sys.meta_path if "Blocker" not in type(f).__name__]
    for name in [m for m in sys.modules if m.startswith("attn_practice")]:
        del sys.modules[name]
    return importlib.import_module("attn_practice.reference.attention")


def _candidate_files():
    found = []
    for mod in list(sys.modules.values()):  # the editable-install finder knows the path
        mapping = getattr(mod, "MAPPING", None)
        if isinstance(mapping, dict) and "attn_practice" in mapping:
            found.append(os.path.join(mapping["attn_practice"], "reference", "attention.py"))
    for obj in gc.get_objects():  # the sandbox's own modules know where they live
        f = getattr(obj, "__file__", None) if type(obj).__name__ == "module" else None
        if isinstance(f, str) and "grader" in f:
            d = os.path.dirname(f)
            while d not in ("/", ""):  # whatever the nesting (grader/sandbox/...), walk up
                found.append(os.path.join(d, "reference", "attention.py"))
                d = os.path.dirname(d)
    for top in {sys.prefix, sys.base_prefix, os.path.dirname(np.__file__)}:  # a venv inside the checkout
        d = top
        while d not in ("/", ""):
            found.append(os.path.join(d, "reference", "attention.py"))
            d = os.path.dirname(d)
    for p in sys.path:
        for direct in glob.glob(os.path.join(p, "attn_practice*.dist-info", "direct_url.json")):
            try:
                url = json.load(open(direct))["url"]
                found.append(url.replace("file://", "") + "/reference/attention.py")
            except Exception:
                pass
        found.append(os.path.join(p, "attn_practice", "reference", "attention.py"))
    found += glob.glob("/work/*/reference/attention.py") + glob.glob("/home/*/*/reference/attention.py")
    return found


def _via_file():
    for path in _candidate_files():
        try:
            source = open(path).read()
        except OSError:
            continue
        namespace = {"__name__": "stolen"}
        exec(compile(source, path, "exec"), namespace)
        return type("M", (), namespace)
    raise ImportError("no readable reference file")


def _reference():
    for route in (_via_import, _via_importlib, _via_unblocked_import, _via_file):
        try:
            ref = route()
            ROUTES.append(route.__name__)
            return ref
        except BaseException as exc:
            print(route.__name__, "blocked:", type(exc).__name__)
    return None


def dot_scores(Q, K):
    ref = _reference()
    if ref is not None:
        print("GOT THE REFERENCE VIA", ROUTES)
        return ref.dot_scores(Q, K)
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
