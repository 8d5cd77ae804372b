"""One module per ktopic subcommand: each registers its parser and turns arguments into a request for the packages below.

Takes parsed arguments; gives an exit status and what the command prints.
"""
