"""One module per ktopic subcommand: each registers its parser and turns arguments into a request for the packages below."""
