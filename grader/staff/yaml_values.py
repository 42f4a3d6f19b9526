"""Values written into generated CI files (GitHub workflow, GitLab CI) that stay values.

A course file named with a newline once became a workflow step of its own.
Every value a user chose (a course path, a package spec, a repository name)
goes into the YAML as one double-quoted scalar (`yaml_quote`: ASCII, every
other character escaped), so no newline, `#`, quote, `: ` or
indicator in it can end the value or start a key, a comment or a step. In a
GitHub workflow, `${{` starts an expression GitHub evaluates in *any* value,
before the shell sees it, and cannot be escaped: `no_expression` refuses it.
"""

from __future__ import annotations


def yaml_quote(value: str) -> str:
    """`value` as one YAML double-quoted scalar: printable ASCII as it is, `"` and `\\`
    escaped, everything else as a `\\x`, `\\u` or `\\U` escape (YAML 1.1 and 1.2 alike)."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def no_expression(value: str, what: str) -> str:
    """`value`, or ValueError when GitHub would evaluate part of it as an expression."""
    if "${{" in value:
        raise ValueError(f"{what} contains '${{{{', which GitHub Actions would evaluate as an "
                         f"expression: {value!r}; rename it")
    return value


__all__ = ["no_expression", "yaml_quote"]
