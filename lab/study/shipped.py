"""The studies the source pages ship: each paper's headline claim along the knob in which the lab's scale differs
from the paper's, at five seeds that redraw the data. A grid is fixed here, before anything runs.

Where a grid stops short of what the paper's scale would ask, the study's title says so: LayerDrop's rate is declared
up to 0.7 (so r/N from 3 of 8). The training-set size is a task: MNIST-1D and the large MNIST-1D draw from one
generator (3,500 and 11,000 training examples).
"""

from __future__ import annotations

from lab.study.spec import Study

_N = 8  # LayerDrop's residual MLP has 8 blocks: keeping r trains at the paper's p = 1 - r/N (0.01 grid)
_KEEPS = (3, 4, 5, 6)

_DEPTHS = (2, 4, 6, 8, 12)
_TASK_WORDS = {"digits": "digits", "mnist1d": "MNIST-1D"}


def _shuffle(task: str) -> tuple[Study, ...]:
    on = f" on {_TASK_WORDS[task]}"
    suffix = "" if task == "digits" else f"-{task}"
    return (
        Study(page="shuffle", claim="seq_random_chance", subject="sequential", knob="depth", values=_DEPTHS,
              base=(("task", task),), margin=0.05, name=f"shuffle-sequential-depth{suffix}",
              title=f"Sequential ViT near chance in random orders, along depth (2 to 12 blocks){on}",
              question=f"From how many blocks on does a sequentially trained ViT fall near chance in random "
                       f"orders{on}?"),
        Study(page="shuffle", claim="shuffle_any_order", subject="LayerShuffle", knob="depth", values=_DEPTHS,
              base=(("task", task),), margin=0.05, name=f"shuffle-layershuffle-depth{suffix}",
              title=f"LayerShuffle keeps its accuracy in any order, along depth (2 to 12 blocks){on}",
              question=f"From how many blocks on does LayerShuffle keep its accuracy in any order{on}?"),
    )


def _reinit_width(task: str) -> Study:
    words = {"": "", **_TASK_WORDS}
    on = f" on {words[task]}" if task else ""
    return Study(page="reinit", claim="reinit.plain-first-layer-critical", subject="plain MLP", knob="width",
                 values=(16, 32, 64, 128, 256), base=(("task", task),) if task else (), margin=0.05,
                 name="reinit-plain-width" + (f"-{task}" if task else ""),
                 title=f"Plain MLP: the first layer critical at t = 0, along width{on or ' (its own synthetic task)'}",
                 question=f"From which width on is re-initialising a plain MLP's first layer to its initial draw "
                          f"fatal{on}?")


STUDIES: tuple[Study, ...] = (
    Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-plain-depth",
          title="Plain MLP: one deletion to chance, along depth",
          question="From how many blocks on does deleting one block of a plain MLP leave it near chance?"),
    Study(page="delete", claim="delete.residual-declines-gradually", subject="residual MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-residual-depth",
          title="Residual MLP: a gradual decline, along depth",
          question="From how many blocks on does a residual MLP decline gradually under deletion?"),
    *_shuffle("digits"),
    *_shuffle("mnist1d"),
    Study(page="layerdrop", claim="layerdrop.beats-scratch", knob="keep", values=_KEEPS, margin=0.02,
          base=(("task", "mnist1d"),),
          tied=tuple((r, (("p", round(1 - r / _N, 2)),)) for r in _KEEPS), name="layerdrop-kept-fraction",
          title="Pruned LayerDrop against the same depth from scratch, along r/N on MNIST-1D (trained at "
                "p = 1 - r/N; r from 3 of 8, the page's p stops at 0.7)",
          question="From which kept fraction r/N on does a pruned LayerDrop model beat the same depth trained from "
                   "scratch?"),
    Study(page="layerdrop", claim="layerdrop.beats-scratch", knob="task", values=("mnist1d", "mnist1d-large"),
          margin=0.02, name="layerdrop-training-size",
          title="Pruned LayerDrop against the same depth from scratch, along the training set: MNIST-1D's 3,500 "
                "examples and the large MNIST-1D's 11,000",
          question="With which training set does a pruned LayerDrop model beat the same depth trained from "
                   "scratch?"),
    _reinit_width(""),
    _reinit_width("digits"),
    _reinit_width("mnist1d"),
    Study(page="reinit", claim="reinit.plain-first-layer-critical", subject="plain MLP", knob="epochs",
          values=(3, 6, 12, 24), margin=0.05, name="reinit-plain-epochs",
          title="Plain MLP: the first layer critical at t = 0, along training length (epochs)",
          question="From how many epochs of training on is the first layer of a plain MLP critical?"),
    Study(page="iot", claim="inputs_prefer_orders", knob="m", values=(2, 3, 4, 6), margin=0.01,
          name="iot-orders", title="Inputs prefer orders beyond the seed control, along the number of orders M",
          question="From how many candidate orders on do single inputs prefer an order beyond what seeds give?"),
    # The paper's own space is the ViT's sub-layer order; its ViT trainings are the lab's dearest (three a cell), so
    # this study runs at the minimum of three seeds, and at M = 2 (the shared sub-layer space has two orders).
    Study(page="iot", claim="inputs_prefer_orders", knob="space", values=("blocks", "shared", "sublayers"),
          seeds=(0, 1, 2), base=(("model", "vit-sequential"), ("m", 2)), margin=0.01, name="iot-order-space",
          title="Inputs prefer orders beyond the seed control, along the order space (the ViT, M = 2; 3 seeds): "
                "block orders, one sub-layer order shared by every block (the paper's), one per block"),
)


def by_name() -> dict[str, Study]:
    return {s.name: s for s in STUDIES}


def of_page(page: str) -> list[Study]:
    """A page's shipped studies, in the order shown."""
    return [s for s in STUDIES if s.page == page]
