"""Attack: a module named traceback that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "traceback"
raise SystemExit("ATTN-ATTACK: shadow traceback was imported")
