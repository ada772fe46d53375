#!/usr/bin/env python3
"""Checks the folder dependency graph against cmake/modules.txt.

Derives the graph of folders from every quoted #include of the library, the tools and the
examples, then fails (exit 1) when:
  - the graph has a circle (printed as a path of folders and the includes that make it);
  - a folder includes one that cmake/modules.txt does not let it (its own dependencies and
    theirs; include/whittle.h is open to all);
  - an include climbs out of its folder ("../"), which would bypass the per-module include
    views of cmake/modules.cmake;
  - a module's declared dependencies form a circle, or name an unknown module;
  - a module folder's README.md (a program's, where it has one) does not say, on a line
    starting "May include:", exactly the folders it may include directly.
tests/ and fuzz/ may include anything (they test the internals) and are not checked.

  scripts/check-deps.py [--root DIR]    (exit 0: the graph is as documented)
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE = re.compile(r'\.(h|hpp|c|cc|cpp|cu|cuh|comp|glsl|in)$')


def read_modules(root):
    """name -> (folder, [deps]) in file order."""
    mods = {}
    with open(os.path.join(root, 'cmake', 'modules.txt')) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) < 2:
                sys.exit(f'cmake/modules.txt:{n}: a line needs a name and a folder')
            mods[fields[0]] = (fields[1].rstrip('/'), fields[2:])
    return mods


def closure(mods, name, seen=None):
    seen = set() if seen is None else seen
    for d in mods[name][1]:
        if d not in seen:
            seen.add(d)
            closure(mods, d, seen)
    return seen


def find_cycle(graph):
    """A list of nodes forming a circle in graph (node -> iterable of nodes), or None."""
    state, stack = {}, []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if not state.get(w):
                c = visit(w)
                if c:
                    return c
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if not state.get(v):
            c = visit(v)
            if c:
                return c
    return None


def owner(folders, path):
    """The most specific declared folder holding path, or None."""
    best = None
    for f in folders:
        if path == f or path.startswith(f + '/'):
            if best is None or len(f) > len(best):
                best = f
    return best


def resolve(root, src_dir, inc):
    for cand in (os.path.join(src_dir, inc), inc, os.path.join('include', inc)):
        cand = os.path.normpath(cand)
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    root = os.path.abspath(ap.parse_args().root)
    mods = read_modules(root)
    errors = []

    for name, (folder, deps) in mods.items():
        for d in deps:
            if d not in mods:
                errors.append(f'cmake/modules.txt: {name} depends on unknown module {d}')
        if not os.path.isdir(os.path.join(root, folder)):
            errors.append(f'cmake/modules.txt: {name}: no folder {folder}/')
    if errors:
        print('\n'.join(errors))
        return 1
    declared_cycle = find_cycle({n: set(m[1]) for n, m in mods.items()})
    if declared_cycle:
        print('cmake/modules.txt: the declared dependencies form a circle: ' + ' -> '.join(declared_cycle))
        return 1

    folder_of = {n: m[0] for n, m in mods.items()}
    module_of = {m[0]: n for n, m in mods.items()}
    allowed = {m[0]: {folder_of[d] for d in closure(mods, n)} | {m[0], 'include'} for n, m in mods.items()}
    folders = list(module_of) + ['include']

    graph, witness = {}, {}
    n_files = n_includes = 0
    for folder in module_of:
        for dp, dn, fn in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dp, root)
            if owner(folders, rel_dir) != folder:
                continue  # a nested module's folder is checked as its own
            for f in sorted(fn):
                if not SOURCE.search(f):
                    continue
                path = os.path.join(rel_dir, f)
                n_files += 1
                with open(os.path.join(root, path), errors='replace') as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        n_includes += 1
                        where = f'{path}:{lineno}: #include "{inc}"'
                        if '..' in inc.split('/'):
                            errors.append(f'{where}: climbs out of its folder; write the path from the '
                                          f'repository root ("backends/backend.h")')
                        target = resolve(root, rel_dir, inc)
                        if target is None:
                            continue  # a generated or system header
                        to = owner(folders, target)
                        if to is None or to == folder:
                            continue
                        graph.setdefault(folder, set()).add(to)
                        witness.setdefault((folder, to), where)
                        if to not in allowed[folder]:
                            ok = sorted(d for d in allowed[folder] if d != folder)
                            errors.append(f'{where}: {folder}/ may not include {to}/ (cmake/modules.txt lets it '
                                          f'include {", ".join(d + "/" for d in ok)})')

    cycle = find_cycle(graph)
    if cycle:
        errors.append('the folders include each other in a circle: ' + ' -> '.join(c + '/' for c in cycle))
        for a, b in zip(cycle, cycle[1:]):
            errors.append(f'    {witness[(a, b)]}')

    # Each module folder's README says what it may include directly.
    for name, (folder, deps) in mods.items():
        readme = os.path.join(root, folder, 'README.md')
        want = sorted(folder_of[d] for d in deps)
        if not os.path.isfile(readme):
            if not name.startswith('exe:'):  # a program's folder may leave it to its parent's README
                errors.append(f'{folder}/README.md is missing (it says what the folder may include)')
            continue
        lines = [l for l in open(readme) if l.startswith('May include:')]
        if len(lines) != 1:
            errors.append(f'{folder}/README.md: needs one line starting "May include:" naming '
                          f'{", ".join(w + "/" for w in want) or "nothing but include/"}')
            continue
        said = sorted(set(re.findall(r'`([a-z][a-z0-9_/-]*)/`', lines[0])) - {'include'})
        if said != want:
            errors.append(f'{folder}/README.md: "May include:" names {said or "nothing"}; cmake/modules.txt '
                          f'says {want or "nothing"}')

    if errors:
        print('\n'.join(errors))
        print(f'check-deps: FAILED ({sum(not e.startswith(" ") for e in errors)} problems)')
        return 1
    edges = sum(len(v) for v in graph.values())
    print(f'check-deps: {n_files} files, {n_includes} includes, {len(module_of)} folders, {edges} folder edges: '
          f'no circle, every include as cmake/modules.txt allows')
    return 0


if __name__ == '__main__':
    sys.exit(main())
