"""Attack: a module named numpy that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "numpy"
raise SystemExit("ATTN-ATTACK: shadow numpy was imported")
