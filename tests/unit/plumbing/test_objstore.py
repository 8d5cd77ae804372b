"""The long-lived git processes: what is written without waiting is
stored by the next sync (and seen by the store's own reads before that),
git's errors surface as GitError, and a closed store starts again."""

import subprocess

import pytest

from ktopic.plumbing.gitutil import Git, GitError
from ktopic.plumbing.objstore import ObjectStore


@pytest.fixture
def store(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    s = ObjectStore(Git(tmp_path / "r.git"))
    yield s
    s.close()


def test_writes_without_waiting_are_stored_by_sync(store):
    git = store.git
    blobs = [b"one\n", b"two\n", b"x" * 300_000]
    ids = store.write_blobs(blobs, wait=False)
    assert ids == [git.run("hash-object", "--stdin", input=b).strip().decode() for b in blobs]
    # The store reads what it wrote, waiting for git first where needed.
    assert store.read([ids[0]]) == [("blob", b"one\n")]
    tree = store.write_trees([b"100644 one\0" + bytes.fromhex(ids[0])], wait=False)[0]
    store.sync()
    assert git.run("cat-file", "-p", tree).strip() == f"100644 blob {ids[0]}\tone"
    assert git.run("cat-file", "blob", ids[2], binary=True) == blobs[2]


def test_objects_come_from_memory_once_seen(store):
    oid = store.write_blobs([b"remembered\n"])[0]
    store.close()                          # no git process left to ask
    assert store.objects([oid]) == [("blob", b"remembered\n")]
    assert store.read([oid + "^{blob}", "0" * 40]) == [("blob", b"remembered\n"), None]


def test_git_refusing_an_object_is_an_error(store):
    with pytest.raises(GitError):
        store.write_commit(b"this is not a commit\n")
    # The store goes on after an error: the process starts again.
    assert store.write_blobs([b"after\n"]) == [store.git.run("hash-object", "--stdin",
                                                             input="after\n").strip()]
