"""Attack: a module named inspect that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "inspect"
raise SystemExit("ATTN-ATTACK: shadow inspect was imported")
