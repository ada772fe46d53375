#!/usr/bin/env python3
"""The launch rule of the CUDA kernels (kernels/cuda/pdl.cuh), checked on any machine:

  - every __global__ function's first statement is kernel_prologue(): with programmatic
    dependent launch a grid starts before the one ahead of it has finished, and only the
    prologue's griddepcontrol.wait makes that safe;
  - no kernel launches with <<< >>>: every launch goes through launch_kernel, which sets
    the attribute (a plain launch would be correct but silently lose the overlap).

    check-cuda-kernels.py [DIR ...]     # default: kernels/cuda beside this script

Reads *.cu and *.cuh. Exit 0 with "ok: N kernels in M files", or 1 with each problem on
a line (file:line: what).
"""
import pathlib
import re
import sys

GLOBAL = re.compile(r"__global__\b")
LAUNCH = re.compile(r"<<<")


def strip_comments(text):
    """Comments and string literals blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + " " * (min(j, n - 1) - i - 1) + '"')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def check_file(path):
    problems, kernels = [], 0
    text = strip_comments(path.read_text())
    line_of = lambda pos: text.count("\n", 0, pos) + 1
    for m in LAUNCH.finditer(text):
        problems.append(f"{path}:{line_of(m.start())}: a <<< >>> launch (use launch_kernel, pdl.cuh)")
    for m in GLOBAL.finditer(text):
        brace = text.find("{", m.end())
        semi = text.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue  # a declaration, not a definition
        kernels += 1
        body = text[brace + 1:].lstrip()
        if not body.startswith("kernel_prologue();"):
            name = re.search(r"(\w+)\s*\(", text[m.end():brace])
            what = name.group(1) if name else "a kernel"
            problems.append(f"{path}:{line_of(m.start())}: {what}'s first statement is not kernel_prologue();")
    return problems, kernels


def main(argv):
    dirs = [pathlib.Path(a) for a in argv] or [pathlib.Path(__file__).resolve().parent.parent / "kernels" / "cuda"]
    problems, kernels, files = [], 0, 0
    for d in dirs:
        for path in sorted(list(d.glob("*.cu")) + list(d.glob("*.cuh"))):
            p, k = check_file(path)
            problems += p
            kernels += k
            files += 1
    if files == 0:
        print(f"no .cu or .cuh files under {', '.join(map(str, dirs))}")
        return 1
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: {kernels} kernels in {files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
