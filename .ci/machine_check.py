"""Did the test suite leave the machine as it found it? (issue 18.8)

`snapshot` prints what a run may change, as JSON; `compare BEFORE.json`
checks, after the suite:

- /dev/null, /dev/zero, /dev/urandom (and /dev/full, /dev/random) are still
  character devices, and /dev/stdin, /dev/stdout, /dev/stderr are what they were
  (a run as root once left a regular file where /dev/null belongs);
- no mount point appeared (every sandbox mounts in a namespace of its own);
- no cgroup appeared (a sandbox's `attnp-PID-N` cgroup is removed when it is reaped);
- no user or group appeared in /etc/passwd or /etc/group.

It prints each problem and exits 1 when there is one. Standard library only:
it runs in CI before and after the suite, outside the package.
"""

from __future__ import annotations

import json
import os
import stat
import sys

DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/full", "/dev/random")
LINKS = ("/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd")
CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_DEPTH = 4


def _kind(path: str) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        return "link to " + os.readlink(path)
    if stat.S_ISCHR(st.st_mode):
        return f"character device {os.major(st.st_rdev)},{os.minor(st.st_rdev)}"
    if stat.S_ISREG(st.st_mode):
        return "regular file"
    return "other"


def mounts() -> list[str]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            return sorted({line.split()[4] for line in f if len(line.split()) > 4})
    except OSError:
        return []


def cgroups() -> list[str]:
    out = []
    for folder, dirs, _files in os.walk(CGROUP_ROOT):
        depth = folder[len(CGROUP_ROOT):].count("/")
        if depth >= CGROUP_DEPTH:
            dirs[:] = []
        out += [os.path.join(folder, d) for d in dirs]
    return sorted(out)


def _names(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return sorted({line.split(":", 1)[0] for line in f if ":" in line})
    except OSError:
        return []


def snapshot() -> dict:
    return {"devices": {p: _kind(p) for p in DEVICES + LINKS}, "mounts": mounts(),
            "cgroups": cgroups(), "users": _names("/etc/passwd"), "groups": _names("/etc/group")}


def problems(before: dict, after: dict) -> list[str]:
    out = []
    for path in DEVICES:
        if not after["devices"][path].startswith("character device"):
            out.append(f"{path} is no longer a character device: {after['devices'][path]}")
    for path in DEVICES + LINKS:
        if after["devices"][path] != before["devices"].get(path, after["devices"][path]):
            out.append(f"{path} changed: was {before['devices'][path]}, now {after['devices'][path]}")
    for key, what in (("mounts", "mount point"), ("cgroups", "cgroup"), ("users", "user"),
                      ("groups", "group")):
        for name in sorted(set(after[key]) - set(before[key])):
            out.append(f"a {what} the suite made is left behind: {name}")
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["snapshot"]:
        json.dump(snapshot(), sys.stdout)
        return 0
    if len(argv) == 2 and argv[0] == "compare":
        with open(argv[1], encoding="utf-8") as f:
            before = json.load(f)
        found = problems(before, snapshot())
        for p in found:
            print(f"machine check: {p}")
        if not found:
            print("machine check: devices, mounts, cgroups and users are as the suite found them")
        return 1 if found else 0
    print("usage: machine_check.py snapshot | compare BEFORE.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
