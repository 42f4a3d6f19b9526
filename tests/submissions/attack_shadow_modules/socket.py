"""Attack: a module named socket that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "socket"
raise SystemExit("ATTN-ATTACK: shadow socket was imported")
