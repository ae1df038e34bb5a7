"""The lab as a Python API for research (docs/API.md): `load` a page's trained model, read and change it through named
hook points, patch activations, and apply every surgery of the pages to it.

    import layerlab
    m = layerlab.load("delete")               # the Delete page's default model, from the store (or trained now)
    print(m.accuracy())                        # its held-out accuracy, as the page reports it
    logits, cache = m.run_with_cache(m.x_test[:8])
    print(m.delete(2, 4).accuracy())           # blocks 2 and 4 routed out

Nothing a stored result depends on imports this package, so editing it re-keys nothing.
"""

from lab.api.hooks import EMBED, LOGITS, describe_points, hook_names, patch, patch_scan, run
from lab.api.loaded import Loaded, load, page_settings
from lab.core.models.base import Parallel, Step

__all__ = ["EMBED", "LOGITS", "Loaded", "Parallel", "Step", "describe_points", "hook_names", "load", "page_settings",
           "patch", "patch_scan", "run"]
