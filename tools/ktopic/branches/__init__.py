"""From the manifest to branches and back: generation, export, mbox import, upstream proofs, rebase onto a new base, range-diff.

Takes the manifest, the patches and the base; gives branches (and patches
back).
"""
