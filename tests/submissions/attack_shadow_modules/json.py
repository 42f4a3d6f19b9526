"""Attack: a module named json that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "json"
raise SystemExit("ATTN-ATTACK: shadow json was imported")
