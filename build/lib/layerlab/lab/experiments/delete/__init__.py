"""Delete layers.

experiment.py computes (configs, cached entry points, results), claims.py judges, descriptor.py says how the
page, the CLI and the tables offer it, questions.py holds the workshop questions."""
