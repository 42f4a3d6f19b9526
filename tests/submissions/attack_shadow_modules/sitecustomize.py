"""Attack: a module named sitecustomize that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "sitecustomize"
raise SystemExit("ATTN-ATTACK: shadow sitecustomize was imported")
