"""Train x take apart: the recipe x surgery matrix.

experiment.py computes (configs, cached entry points, results), surgery.py holds the battery's operations, claims.py
judges, descriptor.py says how the page, the CLI and the tables offer it, questions.py holds the workshop questions."""
