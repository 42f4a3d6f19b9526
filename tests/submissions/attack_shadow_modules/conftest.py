"""Attack: a module named conftest that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "conftest"
raise SystemExit("ATTN-ATTACK: shadow conftest was imported")
