"""From the manifest to branches and back: generation, export, mbox import, upstream proofs, rebase onto a new base, range-diff."""
