#!/usr/bin/env python3
"""Test oracle for bad input: a tool must refuse it with a clear message and an exit status,
never crash, hang or carry on.

    expect_refusal.py RC REGEX -- COMMAND [ARG...]

Runs COMMAND (at most 120 s) and passes when it exits with status RC (not 0, not a signal)
and its stderr matches REGEX (Python re.search). Prints the command's stderr either way.
"""
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        print(__doc__)
        return 2
    want_rc, pattern, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        print("FAIL: still running after 120 s")
        return 1
    err = p.stderr.decode("utf-8", "replace")
    sys.stdout.write(err)
    if p.returncode != want_rc:
        what = f"signal {-p.returncode}" if p.returncode < 0 else f"exit status {p.returncode}"
        print(f"FAIL: {what}, expected exit status {want_rc}")
        return 1
    if not re.search(pattern, err):
        print(f"FAIL: stderr does not match {pattern!r}")
        return 1
    print(f"ok: refused with exit status {want_rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
