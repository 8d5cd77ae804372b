"""The commit object `git commit-tree` writes for a patch, made in Python.

Takes a tree, a parent and a patch's identity, date and message; gives the
commit object's bytes, or None where git must make it.  docs/design.md,
"Generation".
"""

from __future__ import annotations

import calendar
import codecs
import locale
import re
import sys

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
DATE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{1,2}) (%s) (\d{4}) "
                  r"(\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)" % "|".join(MONTHS))
# Bytes git's ident code strips from the ends of a name or an email (and
# '<', '>', newline anywhere): any of them sends the patch to git.
CRUD = set(range(33)) | set(b".,:;<>\"\\'")
# What git's UTF-8 check refuses (it would re-encode the message), and
# more: NUL, and everything beyond the first plane.
NOT_PLAIN = re.compile("[\0\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff\U00010000-\U0010ffff]")
# Code points git's UTF-8 check refuses although they are valid UTF-8:
# U+FDD0..U+FDEF and the last two of every plane.
NONCHARACTERS = re.compile("[\ufdd0-\ufdef%s]" % "".join(
    chr(p << 16 | 0xfffe) + chr(p << 16 | 0xffff) for p in range(17)))
# The largest code point of a sequence of 1, 2, 3, 4 bytes.
MAX_CODEPOINT = (0x7f, 0x7ff, 0xffff, 0x10ffff)


def git_date(date: str) -> str | None:
    """'Thu, 3 Dec 2026 06:00:00 +0100' -> '1796274000 +0100', as git's
    date parser gives it, or None for any other form."""
    m = DATE.fullmatch(date)
    if not m:
        return None
    day, mon, year, hh, mm, ss, sign, tzh, tzm = m.groups()
    year, month, day = int(year), MONTHS.index(mon) + 1, int(day)
    if not (1970 < year < 2100 and 1 <= day <= calendar.monthrange(year, month)[1]
            and int(hh) < 24 and int(mm) < 60 and int(ss) < 60
            and int(tzh) < 24 and int(tzm) < 60):
        return None
    offset = int(tzh) * 60 + int(tzm)
    stamp = calendar.timegm((year, month, day, int(hh), int(mm), int(ss))) - \
        (offset if sign == "+" else -offset) * 60
    return f"{stamp} {'-' if sign == '-' and offset else '+'}{tzh}{tzm}"


def _git_sequence(data: bytes, i: int) -> int:
    """The length of the UTF-8 sequence at data[i] (a byte >= 0x80) that
    git's find_invalid_utf8() accepts, or 0 where it finds it invalid."""
    c, more = data[i], 0
    while c & 0x40:
        c, more = (c << 1) & 0xff, more + 1
    if not 1 <= more <= 3 or len(data) - i - 1 < more:
        return 0
    cp = (c & 0x7f) >> more
    for b in data[i + 1:i + 1 + more]:
        if b & 0xc0 != 0x80:
            return 0
        cp = cp << 6 | b & 0x3f
    if not MAX_CODEPOINT[more - 1] < cp <= MAX_CODEPOINT[more] or cp & 0x1ff800 == 0xd800 \
            or cp & 0xfffe == 0xfffe or 0xfdd0 <= cp <= 0xfdef:
        return 0
    return more + 1


def git_utf8(data: bytes) -> str:
    """The text git commit-tree commits for these bytes (verify_utf8() of
    git's commit.c): UTF-8 as it is; where a byte does not start a sequence
    git takes as valid, that byte is taken as Latin-1 (0xe9 -> U+00E9) and
    the search goes on at the next one.  git am commits a mail that
    declares no charset so: Latin-1 becomes UTF-8."""
    try:
        text = data.decode("utf-8")
        if not NONCHARACTERS.search(text):
            return text
    except UnicodeDecodeError:
        pass
    out = bytearray()
    i = 0
    while i < len(data):
        c = data[i]
        n = 1 if c < 0x80 else _git_sequence(data, i)
        if n:
            out += data[i:i + n]
            i += n
        else:
            out += bytes((0xc0 + (c >> 6), 0x80 + (c & 0x3f)))
            i += 1
    return out.decode("utf-8")


def _utf8_pipes() -> bool:
    """Whether `git commit-tree` gets UTF-8 from us: the message goes
    through a text pipe (the locale's encoding), the identity through the
    environment (the file system's)."""
    return all(codecs.lookup(e).name == "utf-8"
               for e in (locale.getpreferredencoding(False), sys.getfilesystemencoding()))


def _plain(field: bytes) -> bool:
    return bool(field) and field[0] not in CRUD and field[-1] not in CRUD \
        and not any(c in field for c in b"<>\n")


def commit_bytes(tree: str, parent: str, name: str, email: str, date: str,
                 message: str) -> bytes | None:
    """The commit `git commit-tree TREE -p PARENT` writes with the author
    and committer both NAME <EMAIL> at DATE; None when git would change
    any of it."""
    stamp = git_date(date)
    if not _utf8_pipes():
        return None
    try:
        who, mail = name.encode(), email.encode()
        msg = message.encode()
    except UnicodeEncodeError:
        return None
    if stamp is None or not _plain(who) or not _plain(mail) or NOT_PLAIN.search(message):
        return None
    ident = b"%s <%s> %s" % (who, mail, stamp.encode())
    return b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\n%s" % (
        tree.encode(), parent.encode(), ident, ident, msg)
