"""Which files differ between pairs of commits, for many pairs in one git.

Takes a Git and (a, b) pairs of revisions; gives per pair the paths
whose content or mode differs between the two trees (as `git diff
--name-only --no-renames a b --` lists them), or None where either side
names no commit.  One `git diff-tree --stdin` answers every pair; the
names are resolved by the repository's long-lived look-up
(gitutil.Git.rev_parse), so a missing branch starts no process.
"""

from __future__ import annotations

from ktopic.plumbing.gitutil import Git


def changed_paths(git: Git, pairs: list[tuple[str, str]]) -> list[list[str] | None]:
    ids = [(git.rev_parse(a), git.rev_parse(b)) for a, b in pairs]
    ask = [(a, b) for a, b in ids if a and b]
    out: dict[tuple[str, str], list[str]] = {}
    if ask:
        todo = list(dict.fromkeys(ask))
        # Commits, with --always: a header (the first id) for every pair,
        # an empty diff's too.
        text = git.run("diff-tree", "--stdin", "--always", "-r", "-z", "--name-only",
                       "--no-renames", input="".join(f"{a} {b}\n" for a, b in todo).encode(),
                       binary=True).decode("utf-8", "surrogateescape")
        fields = text.split("\0")
        if fields and fields[-1] == "":
            fields.pop()
        at = 0
        for n, (a, b) in enumerate(todo):
            if at >= len(fields) or fields[at] != a:
                raise ValueError(f"git diff-tree --stdin: no answer for {a} {b}")
            at += 1
            nxt = todo[n + 1][0] if n + 1 < len(todo) else None
            names = []
            while at < len(fields) and fields[at] != nxt:
                names.append(fields[at])
                at += 1
            out[(a, b)] = names
    return [out[(a, b)] if a and b else None for a, b in ids]
