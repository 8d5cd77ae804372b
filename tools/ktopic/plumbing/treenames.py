"""Names git accepts in a tree: the tree-entry checks of git's fsck
(--strict) and checkout, for a name that comes from outside (a tarball's
member), so that what git would refuse is refused before it is imported.

Takes one path component; gives why git refuses it (None if it does not),
and whether git reads the content of a file of that name (.gitmodules,
.gitattributes and their aliases, which fsck checks as well).
"""

from __future__ import annotations

# A name git may take for .git, .gitmodules or .gitattributes starts with
# one of these, or has a backslash or a character that is not ASCII in it.
CHECK_FIRST = frozenset(".gG~")

# Code points HFS+ ignores in file names (git's utf8.c next_hfs_char).
_HFS_IGNORED = frozenset("\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                         "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff")


def _is_hfs_dot(name: str, needle: str) -> bool:
    """git's is_hfs_dot_generic(): "." + needle, in any case, as HFS+ sees it."""
    if not name.isascii():
        name = "".join(c for c in name if c not in _HFS_IGNORED)
        if not name.isascii():
            return False
    return name.lower() == "." + needle


def _only_spaces_and_periods(rest: str, stop: str) -> bool:
    for c in rest:
        if c in stop:
            return True
        if c != " " and c != ".":
            return False
    return True


def _is_ntfs_dotgit(name: str) -> bool:
    """git's is_ntfs_dotgit(): ".git" or "git~1", in any case, then only
    spaces and periods up to the end, a backslash or a colon."""
    if name[:4].isascii() and name[:4].lower() == ".git":
        return _only_spaces_and_periods(name[4:], "\\/:")
    if name[:5].isascii() and name[:5].lower() == "git~1":
        return _only_spaces_and_periods(name[5:], "\\/:")
    return False


def _is_ntfs_dot(name: str, needle: str, short: str) -> bool:
    """git's is_ntfs_dot_generic(): "." + needle or its NTFS short names."""
    n = len(needle)
    head = name[1:n + 1]
    if name[:1] == "." and head.isascii() and head.lower() == needle:
        return _only_spaces_and_periods(name[n + 1:], ":")
    head = name[:6]
    if head.isascii() and head.lower() == needle[:6] and name[6:7] == "~" \
            and name[7:8] in ("1", "2", "3", "4"):
        return _only_spaces_and_periods(name[8:], ":")
    # The fall-back short name: a prefix of `short`, "~", a digit 1-9, digits.
    i, saw_tilde = 0, False
    while i < 8:
        c = name[i:i + 1]
        if not c:
            return False
        if saw_tilde:
            if not "0" <= c <= "9":
                return False
        elif c == "~":
            i += 1
            if not "1" <= name[i:i + 1] <= "9":
                return False
            saw_tilde = True
        elif i >= 6 or not c.isascii() or c.lower() != short[i]:
            return False
        i += 1
    return _only_spaces_and_periods(name[i:], ":")


def _after_backslashes(name: str) -> list[str]:
    """The name, and what follows each backslash in it: git's fsck checks
    each (a backslash separates directories on Windows)."""
    return [name] + [name[i + 1:] for i, c in enumerate(name) if c == "\\"]


def refuses(component: str, last: bool, symlink: bool) -> str | None:
    """Why git (fsck --strict, or checkout) refuses a tree entry named
    component, or None.  last: the entry is the member itself, not one of
    its directories; symlink: the member is a symbolic link."""
    if component == "":
        return "an empty path component: git refuses it (emptyName)"
    if component == ".":
        return "a '.' path component: git refuses it (hasDot)"
    if component == "..":
        return "a '..' path component: git and tar refuse it"
    if component[0] not in CHECK_FIRST and "\\" not in component and component.isascii():
        return None                                    # the usual name: nothing to check
    seen = _after_backslashes(component)
    shown = show(component)
    if _is_hfs_dot(component, "git") or any(_is_ntfs_dotgit(s) for s in seen):
        if component == ".git":
            return "a '.git' path component: git refuses it (hasDotgit)"
        return f"path component {shown} is .git to git (in another case, or an NTFS or " \
               f"HFS+ alias of it): git refuses it (hasDotgit)"
    gitmodules = _is_hfs_dot(component, "gitmodules") or \
        any(_is_ntfs_dot(s, "gitmodules", "gi7eba") for s in seen)
    gitattributes = _is_hfs_dot(component, "gitattributes") or \
        _is_ntfs_dot(component, "gitattributes", "gi7d29")
    if not last and gitmodules:
        return f"path component {shown} is .gitmodules to git, and a directory: " \
               f"git refuses it (gitmodulesBlob)"
    if not last and gitattributes:
        return f"path component {shown} is .gitattributes to git, and a directory: " \
               f"git refuses it (gitattributesBlob)"
    if symlink and gitmodules:
        return f"path component {shown} is .gitmodules to git, and a symbolic link: " \
               f"git refuses it (gitmodulesSymlink)"
    return None


def reads(component: str) -> bool:
    """Whether git's fsck checks the content of a file named component
    (.gitmodules, .gitattributes and their aliases)."""
    if component[0] not in CHECK_FIRST and "\\" not in component and component.isascii():
        return False
    return _is_hfs_dot(component, "gitmodules") or _is_hfs_dot(component, "gitattributes") \
        or any(_is_ntfs_dot(s, "gitmodules", "gi7eba") for s in _after_backslashes(component)) \
        or _is_ntfs_dot(component, "gitattributes", "gi7d29")


def show(name: str) -> str:
    """A member name for a one-line message: quoted, with bytes that are
    not UTF-8 and characters that do not print escaped."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "'" + "".join(c if c.isprintable() else c.encode("unicode_escape").decode()
                         for c in text) + "'"
