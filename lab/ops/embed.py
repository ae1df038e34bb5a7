"""2-D views of hidden features (PCA at once, UMAP when ready) and linear probes.

UMAP (umap-learn) compiles its numba kernels on first use in a process (tens of seconds on 2 cores), then
embeds a few thousand points in seconds. `warm_umap()` pays the compile cost on a tiny input, meant to run once
per server process in a background thread, so the first student who asks for a UMAP view does not pay it.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np

_warm_lock = threading.Lock()
_warm_seconds: float | None = None


def pca_2d(x: np.ndarray) -> np.ndarray:
    """The first two principal components of the rows of x (centred; deterministic signs)."""
    xc = x - x.mean(0, keepdims=True)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    v = vt[:2]
    v = v * np.where(v[np.arange(2), np.abs(v).argmax(1)] < 0, -1.0, 1.0)[:, None]  # fix the sign ambiguity
    return (xc @ v.T).astype(np.float32)


def umap_2d(x: np.ndarray, seed: int = 0, n_neighbors: int = 15, n_epochs: int = 200) -> np.ndarray:
    """A 2-D UMAP embedding of the rows of x (seeded; single-threaded when seeded, as umap-learn documents)."""
    import umap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # umap warns that a seed disables parallelism: that is the point
        reducer = umap.UMAP(n_components=2, n_neighbors=n_neighbors, min_dist=0.1, n_epochs=n_epochs,
                            random_state=seed, init="pca")
        return reducer.fit_transform(np.asarray(x, dtype=np.float32)).astype(np.float32)


def warm_umap() -> float:
    """Compile UMAP's kernels once per process (returns the seconds it took; later calls return at once)."""
    global _warm_seconds
    with _warm_lock:
        if _warm_seconds is None:
            t0 = time.perf_counter()
            rng = np.random.default_rng(0)
            umap_2d(rng.normal(size=(300, 8)).astype(np.float32), n_epochs=20)
            _warm_seconds = time.perf_counter() - t0
        return _warm_seconds


def umap_is_warm() -> bool:
    return _warm_seconds is not None


def warm_umap_in_background() -> threading.Thread:
    """Start `warm_umap` in a daemon thread (for a server process); returns the thread."""
    t = threading.Thread(target=warm_umap, name="layerlab-umap-warmup", daemon=True)
    t.start()
    return t


def linear_probe_correct(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
                         y_test: np.ndarray) -> np.ndarray:
    """Per test row, whether a multinomial logistic regression on standardised features is right (bool): what a
    clustered or paired error needs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500, C=1.0))
    # One BLAS thread whatever the process set: lbfgs's rounding follows the thread count (Shuffle's slot probe on
    # the seed-0 LayerShuffle ViT: 45.5 % with 2 threads, 45.6 % with 1), so a probe's verdict must not depend on
    # the machine's cores; one thread is also the fastest here (lab/runtime/threads.py).
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # convergence warnings: a probe that stops early is still a probe
        clf.fit(x_train, y_train)
        return np.asarray(clf.predict(x_test) == y_test, dtype=bool)
