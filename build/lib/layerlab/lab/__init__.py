"""Layer Lab's library: data, models, training, routes, search, store and experiments.

Nothing in here imports streamlit: the pages, the CLI and the tests all call the same functions.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
