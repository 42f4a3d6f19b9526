"""Attack: a module named usercustomize that would take over if imported."""

import os

os.environ["ATTN_ATTACK_SHADOW"] = "usercustomize"
raise SystemExit("ATTN-ATTACK: shadow usercustomize was imported")
