"""mail/<topic>.yaml, the mail state, is project content as untrusted as the
manifest, and is loaded the same way (model/yamlpos: line positions,
duplicate keys refused, nesting and alias bounds; then a JSON Schema): a
bad value is one line `mail/<topic>.yaml:LINE: problem`, exit status 2,
for every command that reads it (mail, mail --reroll, trailers,
pull-request), nothing written."""

from __future__ import annotations

import mailbox
import re

import pytest

from conftest import COUNTERS_P1 as P1, COUNTERS_P2 as P2, mailed_state, needs_b4

pytestmark = [needs_b4, pytest.mark.usefixtures("quiet_git")]

BLOB = "85fabe765e205365e5c55a8d6d523981becdec35"


def state(project) -> str:
    return mailed_state(project, tree=project.git("rev-parse", "topic/counters^{tree}").strip(),
                        blob=BLOB)


def nested(depth: int) -> str:
    return "revisions: " + "{k: " * depth + "x" + "}" * depth + "\n"


# (id, [old, new] in the state, the line of `at` (its first occurrence), the problem)
CASES = [
    ("revision-inf", ["revision: 1\n", "revision: .inf\n"], "revision: .inf",
     "revision: expected integer, got float inf"),
    ("revision-zero", ["revision: 1\n", "revision: 0\n"], "revision: 0",
     "revision: 0 is less than the minimum of 1"),
    ("own-inf", ["own: 2\n", "own: .inf\n"], "own: .inf",
     "revisions.1.own: expected integer, got float inf"),
    ("own-more-than-stack", ["own: 2\n", "own: 3\n"], "own: 3",
     "revisions.1.own: 3 patches of its own, but its stack records 2"),
    ("stack-item-not-a-mapping", ["    - {file: " + P1, "    - foo\n    - {file: " + P1], "- foo",
     "revisions.1.stack.0: expected object, got str 'foo'"),
    ("stack-item-without-file", ["    - {file: " + P1 + ", blob:", "    - {blob:"], "- {blob:",
     "revisions.1.stack.0: 'file' is a required property"),
    ("blob-not-an-object-id", ["{file: " + P2 + ", blob: " + BLOB + "}",
                               "{file: " + P2 + ", blob: --batch}"], "--batch",
     "revisions.1.stack.1.blob: '--batch' is not valid here (expected to match "
     "^([0-9a-f]{40}|[0-9a-f]{64})$)"),
    ("head-an-option", ["    head: ", "    head: --output=/tmp/x\n    former-head: "],
     "head: --output",
     "revisions.1.head: '--output=/tmp/x' is not valid here (expected to match "
     "^([0-9a-f]{40}|[0-9a-f]{64})$)"),
    ("duplicate-key", ["revision: 1\n", "revision: 1\nrevision: 2\n"], "revision: 2",
     "duplicate key 'revision' (first at line 2)"),
    ("unknown-key", ["    own: 2\n", "    own: 2\n    owner: 2\n"], "owner: 2",
     "unknown key 'owner' in revisions.1"),
    ("revision-key-not-a-number", ["  1:\n", "  one:\n"], "  one:",
     "revisions: 'one' is not a revision number (1, 2, ...)"),
    ("revision-after-current", ["  1:\n", "  2:\n"], "  2:",
     "revisions: v2 is recorded, but the current revision is 1"),
    ("delivered-not-a-list", ["delivered: [", "delivered: {a: 1}\n    changes: ["], "delivered:",
     "revisions.1.delivered: expected array, got dict {'a': 1}"),
    ("message-id-with-a-newline",
     ["    messages: 3\n", "    messages: 3\n    message-id: \"<a@b>\\nBcc: x\"\n"],
     "message-id:", "revisions.1.message-id: '<a@b>\\nBcc: x' is not valid here"),
    ("nested-5000", ["revisions:\n", None], "revisions:", "nesting deeper than 64 levels"),
    ("revision-huge", ["revision: 1\n", "revision: 0x" + "f" * 5000 + "\n"], "revision: 0x",
     "an integer of 5000 digits: too large to be read"),
    ("revision-4301-digits", ["revision: 1\n", "revision: " + "9" * 4301 + "\n"], "revision: 9",
     "an integer of 4301 digits: too large to be read"),
    ("date-of-month-13", ["date: '2026-01-01'", "date: 2026-13-01"], "date: 2026-13",
     "'2026-13-01' is not a date (month must be in 1..12): quote it to make it text"),
    ("not-a-mapping", [None, "- 1\n- 2\n"], "- 1", "the mail state must be a mapping of keys "
     "(change-id, revision, revisions)"),
]


def write(project, case) -> tuple[str, int]:
    _, (old, new), at, _ = case
    text = state(project)
    if new is None:
        text = text[:text.index(old)] + nested(5000)
    elif old is None:
        text = new
    else:
        assert old in text, old
        text = text.replace(old, new, 1)
        if "former-head: " in text:         # the head replaced: not two heads
            text = re.sub(r"\n    former-head: .*", "", text)
    (project.root / "mail").mkdir(exist_ok=True)
    (project.root / "mail/counters.yaml").write_text(text)
    return text, text[:text.index(at)].count("\n") + 1


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_state_is_one_line_with_its_line(generated, ktopic, tmp_path, case):
    text, line = write(generated, case)
    box = mailbox.mbox(str(tmp_path / "r.mbox"))
    box.close()
    before = generated.refs()
    for args in (["mail", "counters"], ["mail", "counters", "--reroll"],
                 ["trailers", "counters", "--mbox", tmp_path / "r.mbox"],
                 ["pull-request", "counters"]):
        r = ktopic(*generated.args(*args))
        assert r.status == 2, (args, r)
        assert r.err.startswith(f"ktopic: mail/counters.yaml:{line}: {case[3]}"), (args, r.err)
        assert len(r.err.splitlines()) == 1, r.err
    assert generated.refs() == before
    assert not (generated.root / "out").exists()
    assert (generated.root / "mail/counters.yaml").read_text() == text


def test_a_good_state_still_loads(generated):
    """What `ktopic mail` writes, and a date YAML reads as a date, load."""
    from ktopic.send import revisions
    (generated.root / "mail").mkdir()
    (generated.root / "mail/counters.yaml").write_text(
        state(generated).replace("date: '2026-01-01'", "date: 2026-01-01"))
    st = revisions.load(generated.root, "counters")
    assert st.revision == 1 and st.current.own == 2 and st.current.date == "2026-01-01"
    assert st.current.stack == [{"file": P1, "blob": BLOB}, {"file": P2, "blob": BLOB}]
    st.save()
    again = revisions.load(generated.root, "counters")
    assert again.current == st.current
