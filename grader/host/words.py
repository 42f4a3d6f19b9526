"""What a hosted learner reads where `serve` would name a terminal command or a folder.

A hosted learner has a browser only: no `attn-practice` command, no workspace
folder. The page's own words are chosen in `render.Audience.HOSTED` and in
the page script (the `attnp-mode` meta tag, `static.py`); this module holds
the one text that is not a page's: the stub's first line.
"""

from __future__ import annotations

import re

_SEE_SHOW = re.compile(r"See `attn-practice show (step\d+)`\.")


def hosted_stub(stub: str) -> str:
    """The stub with its terminal pointer ("See `attn-practice show step1`.") in page words."""
    return _SEE_SHOW.sub("The lesson and your task are on this page, above the editor.", stub, count=1)
