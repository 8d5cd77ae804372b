"""ktopic import-base: the packaged tarball becomes the base commit.

Takes the manifest's tarball; gives refs/heads/base.
"""

from __future__ import annotations

from ktopic.plumbing import importbase
from ktopic.plumbing import manifests
from ktopic.model.workdir import Workdir


def register(sub) -> None:
    p = sub.add_parser("import-base", help="import the packaged kernel tarball into the work repository",
                       description=__doc__)
    p.set_defaults(func=run)


def run(args) -> int:
    wd = Workdir(args.workdir)
    with wd.lock():
        m = manifests.load(args.manifest, workdir=args.workdir)
        r = importbase.import_base(m, wd)
    state = "imported" if r.created else "already imported"
    print(f"base {m.base.package} {m.base.debian_version}: {state} as {r.commit[:12]} "
          f"(refs/heads/base in {wd.git_dir})")
    return 0
