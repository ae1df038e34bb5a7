"""One folder per experiment (lab/experiments/NAME/): configs are frozen dataclasses, entry points are cached
functions from a config to a result, claims judge results; the folder's descriptor and questions sit in the layers
above (tests/test_layers.py), and no folder imports another."""
