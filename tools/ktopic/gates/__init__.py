"""What a series must pass before it is built: checkpatch and hygiene, every commit builds, no new W=1/sparse warning; verdicts cached by content.

Takes a topic's patches and commits; gives verdicts per patch and per
topic.
"""
