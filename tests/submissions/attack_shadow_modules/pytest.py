"""Attack: a module named pytest that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "pytest"
raise SystemExit("ATTN-ATTACK: shadow pytest was imported")
