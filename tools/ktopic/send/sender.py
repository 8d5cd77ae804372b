"""Who sends: git's sendemail.from, else user.name <user.email>, else the
manifest's series.from (docs/mail.md, "The sign-off chain").

Takes the manifest; gives the sender's identity."""

from __future__ import annotations

import email.utils
import subprocess


def address(ident: str) -> str:
    """The e-mail address of "Name <addr>", lower-cased ("" when none)."""
    return email.utils.parseaddr(ident)[1].strip().lower()


def identity(m) -> str:
    """The sender, as git send-email has it; a sign-off is written so."""
    def get(key: str) -> str:
        p = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True,
                           cwd=m.root)
        return p.stdout.strip()
    ident = get("sendemail.from")
    if not address(ident) and get("user.name") and get("user.email"):
        ident = f"{get('user.name')} <{get('user.email')}>"
    return ident if address(ident) else m.series.sender
