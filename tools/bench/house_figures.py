#!/usr/bin/python3
"""The shape of tools/ktopic at one or more commits: functions longer than
a limit, and per package the lines of code, of docstrings and of comments;
with --files, how many files (tests aside) the commits named touched.

Reads the files out of git (no checkout needed):

    house_figures.py 3041e73 HEAD
    house_figures.py --files 30812f9 ee64234
    house_figures.py --files --word ubsan 56bc1a7

A line counts once: a docstring line (the whole string literal of a
module's, class's or function's first statement), else a comment line (a
line whose only token is a comment), else a code line (any other line with
a token).  Blank lines count nowhere.  A function's length runs from its
`def` to its last line, decorators aside; nested functions count on their
own too.  The figures are in docs/design.md, "Size"."""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import PurePosixPath

ROOT = "tools/ktopic"


def git(*args: str, repo: str = ".") -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def sources(rev: str, repo: str = ".") -> dict[str, str]:
    """Every .py file under ROOT at rev: path -> text."""
    paths = [p for p in git("ls-tree", "-r", "--name-only", rev, "--", ROOT,
                            repo=repo).splitlines() if p.endswith(".py")]
    batch = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], check=True,
                           capture_output=True,
                           input="".join(f"{rev}:{p}\n" for p in paths).encode()).stdout
    out, pos = {}, 0
    for p in paths:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        out[p] = batch[header_end + 1:header_end + 1 + size].decode()
        pos = header_end + 1 + size + 1
    return out


def package(path: str) -> str:
    """tools/ktopic/gates/check.py -> gates; a module beside cli.py -> (top)."""
    parts = PurePosixPath(path).relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else "(top)"


def docstring_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            s = node.body[0]
            out.update(range(s.lineno, s.end_lineno + 1))
    return out


def line_kinds(text: str) -> Counter:
    """code, doc and comment lines of one module."""
    docs = docstring_lines(ast.parse(text))
    tokens: dict[int, set[int]] = {}
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.ENCODING}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in skip:
            continue
        for line in range(tok.start[0], tok.end[0] + 1):
            tokens.setdefault(line, set()).add(tok.type)
    kinds: Counter = Counter()
    for line, types in tokens.items():
        if line in docs:
            kinds["doc"] += 1
        elif types == {tokenize.COMMENT}:
            kinds["comment"] += 1
        else:
            kinds["code"] += 1
    return kinds


def long_functions(path: str, text: str, limit: int) -> list[tuple[int, str]]:
    """(length, "module.py:Class.func") of every function over limit lines."""
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = child.end_lineno - child.lineno + 1
                if n > limit:
                    out.append((n, f"{path[len(ROOT) + 1:]}:{prefix}{child.name}"))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return out


def figures(rev: str, limit: int, model_limit: int, repo: str = ".") -> dict:
    files = sources(rev, repo)
    per_pkg: dict[str, Counter] = {}
    long, long_model = [], []
    for path, text in files.items():
        per_pkg.setdefault(package(path), Counter()).update(line_kinds(text))
        long += long_functions(path, text, limit)
        if package(path) == "model":
            long_model += long_functions(path, text, model_limit)
    return {"packages": per_pkg, "long": sorted(long, reverse=True),
            "long_model": sorted(long_model, reverse=True)}


def touched(commits: list[str], repo: str = ".", word: str = "") -> list[str]:
    """The files the commits changed, tests aside, in order; with word,
    only those whose change adds or removes a line that holds it (any case)."""
    out: dict[str, None] = {}
    for c in commits:
        for p in git("show", "--format=", "--name-only", c, repo=repo).splitlines():
            if not p or p.startswith("tests/"):
                continue
            diff = git("show", "--format=", "--no-renames", c, "--", p, repo=repo)
            if not word or any(ln[:1] in "+-" and not ln.startswith(("+++", "---"))
                               and word.lower() in ln.lower() for ln in diff.splitlines()):
                out[p] = None
    return list(out)


def print_figures(revs: list[str], limit: int, model_limit: int) -> None:
    figs = {r: figures(r, limit, model_limit) for r in revs}
    pkgs = sorted({p for f in figs.values() for p in f["packages"]})
    print("| package | " + " | ".join(f"code / doc / comment at {r}" for r in revs) + " |")
    print("| --- |" + " --- |" * len(revs))
    for p in pkgs + ["total"]:
        cells = []
        for r in revs:
            c = sum(figs[r]["packages"].values(), Counter()) if p == "total" \
                else figs[r]["packages"].get(p, Counter())
            cells.append(f"{c['code']} / {c['doc']} / {c['comment']}")
        print(f"| {p} | " + " | ".join(cells) + " |")
    for r in revs:
        f = figs[r]
        print(f"\n{r}: {len(f['long'])} function(s) over {limit} lines"
              + "".join(f"\n  {n:4d} {name}" for n, name in f["long"]))
        print(f"{r}: {len(f['long_model'])} function(s) in model/ over {model_limit} lines"
              + "".join(f"\n  {n:4d} {name}" for n, name in f["long_model"]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("revs", nargs="+", metavar="REV")
    p.add_argument("--files", action="store_true",
                   help="count the files the REVs (commits) touched, tests aside")
    p.add_argument("--word", default="",
                   help="with --files: only the files whose change has a line with WORD")
    p.add_argument("--limit", type=int, default=80, help="function length (default: 80)")
    p.add_argument("--model-limit", type=int, default=60,
                   help="function length in model/ (default: 60)")
    args = p.parse_args()
    if args.files:
        files = touched(args.revs, word=args.word)
        print(f"{len(files)} file(s): " + ", ".join(files))
    else:
        print_figures(args.revs, args.limit, args.model_limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
