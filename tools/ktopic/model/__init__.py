"""What the repository says: the manifest and its schema, positions in it, edits to it, the typed results every stage hands on, and the work directory's layout.

Takes the files of the repository; gives typed objects the other packages
read.
"""
