"""The studies the source pages ship: each paper's headline claim along the knob in which the lab's scale differs
from the paper's, at five seeds that redraw the data. A grid is fixed here, before anything runs.

Where a grid stops short of what the paper's scale would ask, the study's title says so: the Shuffle page's ViT is
declared up to 8 blocks, LayerDrop's rate up to 0.7 (so r/N from 3 of 8).
"""

from __future__ import annotations

from lab.study.spec import Study

_N = 8  # LayerDrop's residual MLP has 8 blocks: keeping r trains at the paper's p = 1 - r/N (0.01 grid)
_KEEPS = (3, 4, 5, 6)

STUDIES: tuple[Study, ...] = (
    Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-plain-depth",
          title="Plain MLP: one deletion to chance, along depth",
          question="From how many blocks on does deleting one block of a plain MLP leave it near chance?"),
    Study(page="delete", claim="delete.residual-declines-gradually", subject="residual MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-residual-depth",
          title="Residual MLP: a gradual decline, along depth",
          question="Does a residual MLP decline gradually under deletion at every depth?"),
    Study(page="shuffle", claim="seq_random_chance", subject="sequential", knob="depth", values=(2, 4, 6, 8),
          margin=0.05, name="shuffle-sequential-depth",
          title="Sequential ViT near chance in random orders, along depth (2 to 8 blocks; the page's ViT stops at 8)",
          question="From how many blocks on does a sequentially trained ViT fall near chance in random orders?"),
    Study(page="shuffle", claim="shuffle_any_order", subject="LayerShuffle", knob="depth", values=(2, 4, 6, 8),
          margin=0.05, name="shuffle-layershuffle-depth",
          title="LayerShuffle keeps its accuracy in any order, along depth (2 to 8 blocks)",
          question="Does LayerShuffle keep its accuracy in any order at every depth?"),
    Study(page="layerdrop", claim="layerdrop.beats-scratch", knob="keep", values=_KEEPS, margin=0.02,
          tied=tuple((r, (("p", round(1 - r / _N, 2)),)) for r in _KEEPS), name="layerdrop-kept-fraction",
          title="Pruned LayerDrop against the same depth from scratch, along r/N (trained at p = 1 - r/N; r from 3 "
                "of 8, the page's p stops at 0.7)",
          question="At which kept fraction r/N does a pruned LayerDrop model beat the same depth trained from "
                   "scratch?"),
    Study(page="reinit", claim="reinit.plain-first-layer-critical", subject="plain MLP", knob="width",
          values=(16, 32, 64, 128, 256), margin=0.05, name="reinit-plain-width",
          title="Plain MLP: the first layer critical at t = 0, along width",
          question="From which width on is re-initialising a plain MLP's first layer to its initial draw fatal?"),
    Study(page="reinit", claim="reinit.plain-first-layer-critical", subject="plain MLP", knob="epochs",
          values=(3, 6, 12, 24), margin=0.05, name="reinit-plain-epochs",
          title="Plain MLP: the first layer critical at t = 0, along training length (epochs)",
          question="After how many epochs of training is the first layer of a plain MLP critical?"),
    Study(page="iot", claim="inputs_prefer_orders", knob="m", values=(2, 3, 4, 6), margin=0.01,
          name="iot-orders", title="Inputs prefer orders beyond the seed control, along the number of orders M",
          question="From how many candidate orders on do single inputs prefer an order beyond what seeds give?"),
)


def by_name() -> dict[str, Study]:
    return {s.name: s for s in STUDIES}


def of_page(page: str) -> list[Study]:
    """A page's shipped studies, in the order shown."""
    return [s for s in STUDIES if s.page == page]
