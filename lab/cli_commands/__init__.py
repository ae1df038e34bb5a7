"""One module per experiment's command-line subcommands (registered by lab/cli.py)."""
