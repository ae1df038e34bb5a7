"""One module per experiment: `run(config) -> result`, configs are frozen dataclasses, results plain data."""
