"""What a run produced, written for people and machines: JSON, JUnit, HTML, the terminal, and the GitLab pipeline file."""
