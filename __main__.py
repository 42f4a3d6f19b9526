"""`python -m attn_practice` runs the same CLI as `attn-practice`."""

from .cli import main

main()
