"""ktopic: generate, check, build, boot and send the bcachefs-prerequisite
topic branches on Debian's linux-source-6.1.

Takes nothing itself; gives the package the commands are found in
(ktopic.cli)."""
