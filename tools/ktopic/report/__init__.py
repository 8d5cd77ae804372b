"""What a run produced, written for people and machines: JSON, JUnit, HTML, the terminal, and the GitLab pipeline file.

Takes a results.Report; gives files and terminal output.
"""
