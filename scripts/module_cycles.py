#!/usr/bin/env python3
"""Fail when the modules under src/ import each other in a cycle.

Each file src/**/*.rs is one module (src/a/mod.rs is `a`, src/a/b.rs is `a::b`; the crate
root, lib.rs, only lists and re-exports modules and is left out). A module depends on
another when, outside `#[cfg(test)]` items and outside comments and string literals, it
names it through `use crate::...` / `use super::...` (groups expanded), or through a
`crate::a::b::` or `super::x` path in code. A path points at the longest module its
segments name; a path to an item of the module's own file is not an edge.

Prints each cycle (strongly connected component of more than one module) and exits 1,
or prints the number of modules and exits 0. `--graph` also prints every module's
imports.

    python3 scripts/module_cycles.py src [--graph]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{")
USE = re.compile(r"\buse\s+((?:crate|super)\b[^;]*);")
Module = tuple[str, ...]
PATH = re.compile(r"(?<![\w:])((?:crate|super)(?:\s*::\s*\w+)+)")


def strip_comments_and_literals(src: str) -> str:
    """Blanks comments, strings and char literals, keeping offsets and newlines."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif m := re.match(r'b?r(#*)"', src[i:]) if c in "br" else None:
            if i and (src[i - 1].isalnum() or src[i - 1] == "_"):
                i += 1
                continue
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}'), not a lifetime ('a).
            m = re.match(
                r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", src[i:]
            )
            if m:
                blank(i, i + m.end())
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def drop_test_items(text: str) -> str:
    """Blanks every item annotated `#[cfg(test)]` (a `mod tests { ... }`, a `use`, ...)."""
    out = list(text)
    for m in CFG_TEST.finditer(text):
        k = m.end()
        # The item ends at its first `;` unless a `{` comes first: then at the matching `}`.
        while k < len(text) and text[k] not in ";{":
            k += 1
        end = matching_brace(text, k) if k < len(text) and text[k] == "{" else k
        for j in range(m.start(), end + 1):
            if j < len(out) and out[j] != "\n":
                out[j] = " "
    return "".join(out)


def expand_use_tree(tree: str) -> list[str]:
    """`crate::a::{b, c::{d, self}}` -> ["crate::a::b", "crate::a::c::d", "crate::a::c"]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"(::self|::\*)$", "", tree)]
    prefix, inner = tree[:brace].rstrip(":"), tree[brace + 1 : tree.rindex("}")]
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    paths = []
    for part in filter(None, parts):
        paths += [prefix] if part == "self" else expand_use_tree(f"{prefix}::{part}")
    return paths


def module_name(root: Path, file: Path) -> Module:
    parts = file.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "mod" else parts


def inline_scope(text: str, at: int) -> list[str]:
    """Names of the inline `mod x { ... }` blocks enclosing offset `at`."""
    scope = []
    for m in INLINE_MOD.finditer(text[:at]):
        if matching_brace(text, m.end() - 1) > at:
            scope.append(m.group(1))
    return scope


def resolve(path: str, here: Module, modules: set[Module]):
    segments = [s for s in re.split(r"\s*::\s*", path) if s]
    if segments[0] == "crate":
        base: Module = ()
        segments = segments[1:]
    else:
        base = here
        while segments and segments[0] == "super":
            base = base[:-1]
            segments = segments[1:]
    target = base
    for seg in segments:
        if (*target, seg) not in modules:
            break
        target = (*target, seg)
    # An item of an inline module resolves to the file that holds it.
    while target and target not in modules:
        target = target[:-1]
    return target or None


def build_graph(root: Path) -> dict[Module, set[Module]]:
    files = {
        module_name(root, f): f
        for f in sorted(root.rglob("*.rs"))
        if f != root / "lib.rs"
    }
    modules = set(files)
    graph: dict[Module, set[Module]] = {m: set() for m in modules}
    for module, file in files.items():
        text = drop_test_items(strip_comments_and_literals(file.read_text()))
        found: list[tuple[int, str]] = []
        for m in USE.finditer(text):
            found += [(m.start(), p) for p in expand_use_tree(m.group(1))]
        code = USE.sub(lambda m: " " * len(m.group(0)), text)
        found += [(m.start(), m.group(1)) for m in PATH.finditer(code)]
        for at, path in found:
            here = module + tuple(inline_scope(text, at)) if "super" in path else module
            target = resolve(path, here, modules)
            if target and target != module:
                graph[module].add(target)
    return graph


def cycles(graph: dict[Module, set[Module]]) -> list[list[Module]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    on_stack: set[Module] = set()
    found = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    root = Path(args[0] if args else "src")
    graph = build_graph(root)

    def name(m: Module) -> str:
        return "::".join(m)

    if "--graph" in argv:
        for m in sorted(graph):
            print(f"{name(m)} -> {', '.join(name(t) for t in sorted(graph[m])) or '-'}")
    found = cycles(graph)
    for component in found:
        print("cycle: " + " <-> ".join(name(m) for m in component))
        inside = set(component)
        for m in component:
            print(
                f"    {name(m)} -> {', '.join(name(t) for t in sorted(graph[m] & inside))}"
            )
    print(f"{len(graph)} modules, {len(found)} cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
