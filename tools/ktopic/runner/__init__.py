"""Build, boot and test each branch in order, with content-keyed caches (the stages of `ktopic ci`).

Takes Targets and Options; gives a results.Report.
"""
