"""Series out of the repository: the cover letter, revisions, mail through b4, signed tags and pull requests."""
