"""Series out of the repository: the cover letter, revisions, mail through b4, signed tags and pull requests.

Takes a branch and the manifest's series; gives mails, tags and pull-
request texts.
"""
