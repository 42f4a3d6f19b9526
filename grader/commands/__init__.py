"""Click command groups beyond `cli.py`'s core (`ci`, `selftest`, `explore`, `watch`).

Each command parses its options, calls one layer below (`teaching/`, `staff/`) and
renders; errors leave through the one `Problem` convention of `cli.py`. Loaded on
first use so `attn-practice --help` stays instant.
"""
