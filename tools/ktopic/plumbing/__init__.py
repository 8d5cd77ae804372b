"""Git underneath: the git runner, the object store, commit objects, patch files, hunk application and the stacked-commit cache; the import of the packaged tree.

Takes git objects and patch files; gives commits, trees and refs.
"""
