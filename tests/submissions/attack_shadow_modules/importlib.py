"""Attack: a module named importlib that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "importlib"
raise SystemExit("ATTN-ATTACK: shadow importlib was imported")
