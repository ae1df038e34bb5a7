"""Rearrange layers.

experiment.py computes (configs, cached entry points, results), rows.py reads a profile's rows, claims.py judges,
descriptor.py says how the page, the CLI and the tables offer it, questions.py holds the workshop questions."""
