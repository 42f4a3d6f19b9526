"""Attack: a module named hypothesis that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "hypothesis"
raise SystemExit("ATTN-ATTACK: shadow hypothesis was imported")
