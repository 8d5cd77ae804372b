"""Who sends: git's sendemail.from, else user.name <user.email>, else the
manifest's series.from (docs/mail.md, "The sign-off chain").

Takes the manifest; gives the sender's identity."""

from __future__ import annotations

import email.utils
import subprocess


def address(ident: str) -> str:
    """The e-mail address of "Name <addr>", lower-cased ("" when none)."""
    return email.utils.parseaddr(ident)[1].strip().lower()


KEYS = ("sendemail.from", "user.name", "user.email")


def identity(m) -> str:
    """The sender, as git send-email has it; a sign-off is written so."""
    # One git process for the three keys: the last value of each, as
    # `git config --get` gives it.
    p = subprocess.run(["git", "config", "-z", "--get-regexp",
                        "^(" + "|".join(k.replace(".", r"\.") for k in KEYS) + ")$"],
                       capture_output=True, text=True, cwd=m.root)
    values = dict(rec.partition("\n")[::2] for rec in p.stdout.split("\0") if rec)

    def get(key: str) -> str:
        return values.get(key, "").strip()
    ident = get("sendemail.from")
    if not address(ident) and get("user.name") and get("user.email"):
        ident = f"{get('user.name')} <{get('user.email')}>"
    return ident if address(ident) else m.series.sender
