"""Train x take apart: the invariants of the recipes and of the surgery battery, each able to fail, the claims on
both sides of their rules, and a quick-mode run end to end."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lab import claims as C
from lab import estimates as E
from lab.core.data import Dataset, Split
from lab.core.models import ViT, ViTConfig
from lab.core.models.base import RoutedModel, Step, logits_of
from lab.core.models.vit import NO_ATTN, NO_MLP, ScaledLayerNorm
from lab.core.page_models import matrix_route, matrix_spec
from lab.core.page_words import MATRIX_RECIPES
from lab.core.routes import blocks_of, looped
from lab.core.train import TrainConfig, early_exit_loss, train
from lab.experiments.matrix import claims as MC
from lab.experiments.matrix import experiment as matrix
from lab.experiments.matrix import surgery as S
from lab.ops import layer_lens as lens
from lab.ops import route_ops
from lab.runtime.plain import to_plain
from lab.runtime.store import Store

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "45d7087"  # the commit before LayerNorm scaling, sub-layer deletion, looped mode and the early-exit loss
SMALL = dict(depth=3, width=16, heads=2, mlp_ratio=2)


def small_vit(seed: int = 0, **kw) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(**{**SMALL, **kw}))
    with torch.no_grad():  # spread the near-identity init so blocks really differ
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def images(n: int = 24, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, 64, generator=torch.Generator().manual_seed(seed))


def tiny_digits(n: int = 48) -> Dataset:
    g = torch.Generator().manual_seed(0)
    split = lambda: Split(torch.rand(n, 64, generator=g), torch.randint(0, 10, (n,), generator=g))  # noqa: E731
    return Dataset("tiny", split(), split(), split(), 64, 10)


# -- the recipes ------------------------------------------------------------------------------------------------
def test_a_looped_model_with_one_loop_is_the_sequential_model():
    """mode='looped' with loops=1 trains the same weights as sequential training and gives the same outputs."""
    d = tiny_digits()
    cfg = dict(epochs=2, batch=16, seed=3, checkpoints=())
    a, b = small_vit(), small_vit()
    train(a, d.train, TrainConfig(**cfg), d.test)
    train(b, d.train, TrainConfig(mode="looped", loops=1, **cfg), d.test)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb), ka
    x = images()
    assert torch.equal(logits_of(a, x), logits_of(b, x, looped(a.n_blocks, 1)))
    # and the check can fail: two loops train another model
    c = small_vit()
    train(c, d.train, TrainConfig(mode="looped", loops=2, **cfg), d.test)
    assert not torch.equal(logits_of(a, x), logits_of(c, x, looped(c.n_blocks, 2)))


def test_a_looped_route_runs_the_blocks_in_order_loops_times():
    assert looped(3, 2) == (0, 1, 2, 0, 1, 2)
    assert matrix_route("looped") == (0, 1, 2, 0, 1, 2) and matrix_route("sequential") == tuple(range(6))
    with pytest.raises(ValueError, match="mode='looped'"):
        TrainConfig(loops=2)


def test_the_early_exit_loss_weights_rise_with_depth_and_sum_to_one():
    m, x, y = small_vit(), images(8), torch.arange(8) % 10
    logits, states = m.states(x)
    ces = [F.cross_entropy(m.readout(h), y) for h in states[1:]]
    want = sum((s / 6) * ce for s, ce in enumerate(ces, 1))  # 1 + 2 + 3 = 6
    assert torch.allclose(early_exit_loss(m, x, y), want)
    assert torch.allclose(early_exit_loss(m, x, y, (1,)), F.cross_entropy(m(x, (1,)), y))  # one slot: plain CE


def test_layernorm_scaling_scales_each_blocks_norms_by_one_over_root_depth():
    plain, scaled = small_vit(ln_scale=False), small_vit(ln_scale=True)
    assert all(type(m) is nn.LayerNorm for m in plain.modules() if isinstance(m, nn.LayerNorm))
    for i, blk in enumerate(scaled.blocks):
        assert isinstance(blk.ln1, ScaledLayerNorm) and blk.ln1.scale == pytest.approx(1 / math.sqrt(i + 1))
    # the same seed draws the same parameters (registration order kept), only the forward differs
    for (ka, va), (kb, vb) in zip(plain.state_dict().items(), scaled.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)
    x = images()
    assert not torch.allclose(plain(x), scaled(x))

    def reference(m: ViT, x: torch.Tensor, scale: bool) -> torch.Tensor:
        h = m.embed(x)
        for i, blk in enumerate(m.blocks):
            s = 1 / math.sqrt(i + 1) if scale else 1.0
            h = h + blk.attention(F.layer_norm(h, (16,), blk.ln1.weight, blk.ln1.bias) * s)
            h = h + blk.mlp(F.layer_norm(h, (16,), blk.ln2.weight, blk.ln2.bias) * s)
        return m.readout(h)

    assert torch.allclose(scaled(x), reference(scaled, x, True), atol=1e-5)
    assert torch.allclose(plain(x), reference(plain, x, False), atol=1e-5)


def _module_at(commit: str, path: str, name: str):
    src = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
    if src.returncode != 0:
        pytest.skip(f"commit {commit} is not in this checkout")
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    exec(compile(src.stdout, path, "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("slot_mode", ["none", "position", "predict"])
def test_the_defaults_are_the_vit_and_the_loop_of_before_bit_for_bit(slot_mode):
    """With LayerNorm scaling off, no loop and no early-exit loss, the ViT draws the same weights, computes the same
    outputs and trains to the same weights as the code before these options (read from git)."""
    old_vit = _module_at(BEFORE, "lab/core/models/vit.py", "old_vit")
    old_train = _module_at(BEFORE, "lab/core/train.py", "old_train")
    torch.manual_seed(5)
    new = ViT(ViTConfig(**SMALL, slot_mode=slot_mode))
    torch.manual_seed(5)
    old = old_vit.ViT(old_vit.ViTConfig(**SMALL, slot_mode=slot_mode))
    for (ka, va), (kb, vb) in zip(new.state_dict().items(), old.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb), ka
    x = images()
    assert torch.equal(new(x), old(x)) and torch.equal(new(x, (2, 0)), old(x, (2, 0)))
    d = tiny_digits()
    train(new, d.train, TrainConfig(epochs=2, batch=16, seed=1, mode="shuffle", checkpoints=()), d.test)
    old_train.train(old, d.train, old_train.TrainConfig(epochs=2, batch=16, seed=1, mode="shuffle", checkpoints=()),
                    d.test)
    for (ka, va), (_, vb) in zip(new.state_dict().items(), old.state_dict().items(), strict=True):
        assert torch.equal(va, vb), ka


def test_every_recipe_has_a_spec_and_the_shared_ones_are_the_registrys():
    from lab.core.model_registry import MODELS

    assert matrix_spec("sequential", 3) == MODELS["vit-sequential"].spec(3)
    assert matrix_spec("shuffle", 3) == MODELS["vit-shuffle"].spec(3)
    specs = [matrix_spec(r, 0) for r in MATRIX_RECIPES]
    assert len(set(map(repr, specs))) == len(specs)
    assert specs[MATRIX_RECIPES.index("layerdrop")].train.drop_p == 0.5
    assert specs[MATRIX_RECIPES.index("looped")].model.depth * specs[MATRIX_RECIPES.index("looped")].train.loops == 6


# -- the battery --------------------------------------------------------------------------------------------------
def test_deleting_a_sublayer_that_outputs_zero_changes_nothing():
    m, x = small_vit(), images()
    route = (0, 1, 2)
    full = logits_of(m, x)
    for op in ("no-attn", "no-mlp"):  # the check can fail: a live sub-layer matters
        assert not torch.allclose(S.logits_on(m, x, route_ops.route_of(op, route, 1, ends="include")), full)
    z = copy.deepcopy(m)
    with torch.no_grad():
        z.blocks[1].proj.weight.zero_()
        z.blocks[1].proj.bias.zero_()
        z.blocks[1].fc2.weight.zero_()
        z.blocks[1].fc2.bias.zero_()
    zf = logits_of(z, x)
    for op, variant in (("no-attn", NO_ATTN), ("no-mlp", NO_MLP)):  # the registry's surgery is the variant's route
        assert route_ops.route_of(op, route, 1, ends="include") == (0, Step(1, variant), 2)
        assert torch.equal(S.logits_on(z, x, route_ops.route_of(op, route, 1, ends="include")), zf)
    assert torch.equal(S.logits_on(z, x, [0, Step(1, NO_ATTN), 2]), zf)


class LinearBlocks(RoutedModel):
    """A toy routed model whose blocks are affine maps of a token stream: every block is exactly linear."""

    def __init__(self, width: int = 8, depth: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Linear(4, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, 5)

    def embed(self, x):
        return self.stem(x.reshape(len(x), 3, 4))

    def run_block(self, h, block, slot):
        return self.blocks[block](h)

    def readout(self, h):
        return self.head(h[:, 0])


def test_a_block_replaced_by_its_linear_fit_on_a_linear_block_reproduces_it():
    m = LinearBlocks()
    x_train = torch.randn(200, 12, generator=torch.Generator().manual_seed(1))
    x = torch.randn(50, 12, generator=torch.Generator().manual_seed(2))
    lin, fit = S.fit_linear(m, x_train, (0, 1, 2), 1)
    assert fit["r2"] > 1 - 1e-6 and fit["r2_update"] > 1 - 1e-6
    assert torch.allclose(S.logits_on(m, x, (0, 1, 2), {1: lin}), logits_of(m, x), atol=1e-4)
    # the check can fail: a ViT block is not linear
    v = small_vit()
    xs = images(200, 3)
    lin, fit = S.fit_linear(v, xs, (0, 1, 2), 1)
    assert fit["r2_update"] < 0.999
    assert not torch.allclose(S.logits_on(v, images(), (0, 1, 2), {1: lin}), logits_of(v, images()), atol=1e-4)


def test_every_blocks_fit_from_one_pass_of_states_is_the_fit_from_its_own_pass():
    """The battery computes the training states once for all blocks' fits: the same maps and figures, bit for bit,
    as a fit that runs its own pass; and states of another route give another fit (the check can fail)."""
    v, xs = small_vit(), images(120, 3)
    route = (0, 1, 2)
    shared = S.train_states(v, xs, route)
    for b in route:
        (a1, c1), f1 = S.fit_linear(v, xs, route, b, seed=4)
        (a2, c2), f2 = S.fit_linear(v, xs, route, b, seed=4, states=shared)
        assert torch.equal(a1, a2) and torch.equal(c1, c2) and f1 == f2
    (a3, _), _ = S.fit_linear(v, xs, route, 1, seed=4, states=S.train_states(v, xs, (2, 1, 0)))
    assert not torch.equal(a3, S.fit_linear(v, xs, route, 1, seed=4)[0][0])


def test_a_looped_block_is_fitted_over_all_its_runs_and_replaced_at_each():
    m = LinearBlocks(depth=2)
    x_train = torch.randn(100, 12, generator=torch.Generator().manual_seed(1))
    route = (0, 1, 0, 1)
    lin, fit = S.fit_linear(m, x_train, route, 0)
    assert fit["r2"] > 1 - 1e-6
    x = torch.randn(20, 12, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(S.logits_on(m, x, route, {0: lin}), logits_of(m, x, route), atol=1e-4)


def test_early_exit_at_the_last_block_is_the_models_output():
    m, x = small_vit(), images()
    y = logits_of(m, x).argmax(1)  # labels the model gets right
    y[::3] = (y[::3] + 1) % 10  # and some it gets wrong
    ex = S.exits(m, x, y, (0, 1, 2))
    assert len(ex) == 4 and torch.equal(ex[-1], S.outcomes(m, x, y, (0, 1, 2)))
    lg = lens.lens_logits(m, lens.slot_states(m, x, (0, 1, 2)))  # what `exits` reads, as logits
    assert torch.equal(lg[-1], logits_of(m, x))
    assert not torch.allclose(lg[1], lg[-1])  # the check can fail: an early exit is another function


def test_the_slot_counts_and_the_influence_order():
    assert S.quarter(6) == 2 and S.quarter(8) == 2 and S.quarter(3) == 1
    assert S.influence_slots([0.3, 0.1, 0.2, 0.1, 0.5, 0.4], 2) == [1, 3]
    assert S.influence_slots([0.1] * 6, 2) == [4, 5]  # ties fall back to the last quarter
    assert matrix.kept(0.55, 1.0, 0.1) == pytest.approx(0.5) and math.isnan(matrix.kept(0.3, 0.1, 0.1))


# -- the claims ---------------------------------------------------------------------------------------------------
N = 400


def _outcomes(acc: float, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    v = np.zeros(N, dtype=bool)
    v[g.choice(N, int(round(acc * N)), replace=False)] = True
    return v


def row_result(recipe: str, **fields) -> matrix.RowResult:
    """A hand-made RowResult: `fields` as given, every other field a placeholder of its type (the claims read only
    what they compare)."""
    route = list(matrix_route(recipe))
    blocks = blocks_of(route)
    filler = {"route": route, "blocks": blocks, "n_blocks": len(blocks), "n_slots": len(route), "n_test": N,
              "base_acc": 0.95, "chance": 0.1, "acc": {}, "kept": {}, "profiles": {}, "profile_kept": {}, "quarter": 2,
              "last_slots": [4, 5], "influence_slots": [4, 5], "influence_route": route[:4],
              "last_quarter_route": route[:4], "deep_blocks": blocks[len(blocks) // 2:], "linear_r2": [],
              "linear_r2_update": [], "linear_r2_se": [], "linear_r2_update_se": [], "exit_mid_slot": len(route) // 2,
              "per_input": {}, "op_seconds": {},
              "config": matrix.RowConfig(recipe), "recipe": recipe, "label": matrix.RECIPE_LABELS[recipe], "seed": 0,
              "train_seconds": 0.0, "train_curve": [], "fill_seconds": 0.0}
    return matrix.RowResult(**{**filler, **fields})


def fake_row(recipe: str, base=0.95, delete=0.8, deep=0.8, no_attn=0.9, no_mlp=0.8, exit_=0.5, lq=0.6,
             infl=0.6, each=(0.5, 0.9, 0.9, 0.9, 0.9, 0.5), r2=(0.5, 0.99), seed=0, train_seed=0,
             whole=0.999) -> matrix.RowResult:
    """A row whose every column is at the given accuracy; `r2`: each block's R^2 of its update (the whole block's
    is `whole`, near 1 as the identity path makes it); `train_seed`: the seed the row says it was trained from."""
    base_ok = _outcomes(base, seed)

    def share(acc, s):  # a per-input score whose mean is acc
        return _outcomes(acc, seed + s).astype(float)

    pi = {"base": E.pack(base_ok), "delete": share(delete, 1).tolist(), "delete_deep": share(deep, 2).tolist(),
          "no_attn": share(no_attn, 3).tolist(), "no_mlp": share(no_mlp, 4).tolist(), "exit": share(exit_, 5).tolist(),
          "last_quarter": E.pack(_outcomes(lq, seed + 6)), "influence": E.pack(_outcomes(infl, seed + 7)),
          "delete_each": [E.pack(base_ok & _outcomes(a, seed + 20 + i)) if a < 0.95 else E.pack(base_ok)
                          for i, a in enumerate(each)]}
    return row_result(recipe, base_acc=float(base_ok.mean()), per_input=pi,
                      acc={"no_attn": no_attn, "no_mlp": no_mlp, "influence": infl, "last_quarter": lq, "linear": 0.8},
                      linear_r2=[whole] * len(r2), linear_r2_se=[0.0005] * len(r2), linear_r2_update=list(r2),
                      linear_r2_update_se=[0.002] * len(r2), seed=train_seed,
                      profiles={"exit": [0.1, 0.3, 0.4, exit_, 0.6, 0.7, base]}, exit_mid_slot=3,
                      deep_blocks=[3, 4, 5], quarter=2, last_slots=[4, 5], influence_slots=[1, 4])


def rows(train_seed: int = 0, **per_recipe) -> dict[str, matrix.RowResult]:
    return {r: fake_row(r, seed=10 * i + 1000 * train_seed, train_seed=train_seed,
                        **per_recipe.get(r.replace("-", "_"), {}))
            for i, r in enumerate(MATRIX_RECIPES)}


RECIPE_KEYS = ("robust", "early_exit", "looped", "ln_scale")  # claims comparing separately trained rows


def verdict(rs: dict, key: str):
    """A claim's verdict at one seed; for a recipe claim (over seeds) the verdict its tests give for this one trained
    network, after checking that the claim itself cannot tell at one seed."""
    cs = {c["key"]: c for c in MC.claims(rs)}
    C.check(list(cs.values()))
    c = cs[key]
    assert c["over"] == ("seeds" if key in RECIPE_KEYS else "inputs"), key
    if c["over"] == "seeds":
        assert c["holds"] is None and c["why"] == "one trained network" and c["seeds"] == [0], c
        return C._combine(c["tests"], c["combine"])
    return c["holds"]


def pooled(make, key: str, seeds=(0, 1, 2)):
    """Claim `key` pooled over training seeds (`make(seed)` gives that seed's rows), as the matrix's table pools."""
    per_seed = [MC.claims(make(s)) for s in seeds]
    (c,) = [c for c in C.pool(per_seed, list(seeds)) if c["key"] == key]
    C.check([c])
    assert c["over"] == "seeds" and c["seeds"] == list(seeds) and not c.get("why"), c
    return c["holds"]


def test_the_claims_hold_fail_and_cannot_tell_as_their_rules_say():
    cases = {  # key -> (rows where it holds, rows where it does not)
        # robust: LayerDrop and LayerShuffle lose much less / much more
        "robust": (dict(layerdrop={"delete": 0.93}, shuffle={"delete": 0.93}, sequential={"delete": 0.5}),
                   dict(layerdrop={"delete": 0.5}, shuffle={"delete": 0.5}, sequential={"delete": 0.93})),
        # the U-shape on the sequential model: first and last cost most / the middle costs most
        "u_shape": (dict(sequential={"each": (0.3, 0.95, 0.95, 0.95, 0.95, 0.3)}),
                    dict(sequential={"each": (0.95, 0.3, 0.3, 0.3, 0.3, 0.95)})),
        # linearity of every block's update against the bar, each by 2 of its bootstrap errors (0.002 here)
        "linear": ({r.replace("-", "_"): {"r2": (0.97, 0.99)} for r in MATRIX_RECIPES}, {}),
        # attention against MLP, pooled over recipes
        "attention": ({r.replace("-", "_"): {"no_attn": 0.9, "no_mlp": 0.5} for r in MATRIX_RECIPES},
                      {r.replace("-", "_"): {"no_attn": 0.5, "no_mlp": 0.9} for r in MATRIX_RECIPES}),
        "early_exit": (dict(early_exit={"exit_": 0.9}, sequential={"exit_": 0.3}),
                       dict(early_exit={"exit_": 0.3}, sequential={"exit_": 0.9})),
        "looped": (None, dict(looped={"base": 0.6})),  # 35 points apart are not close
        # LayerNorm scaling: deep deletions cost more / less
        "ln_scale": (dict(ln_scale={"deep": 0.4}, sequential={"deep": 0.9}),
                     dict(ln_scale={"deep": 0.9}, sequential={"deep": 0.4})),
        # influence against the last quarter
        "influence": ({r.replace("-", "_"): {"infl": 0.9, "lq": 0.4} for r in MATRIX_RECIPES},
                      {r.replace("-", "_"): {"infl": 0.4, "lq": 0.9} for r in MATRIX_RECIPES}),
    }

    def same_base(s: int) -> dict:  # the looped model's outcomes are the sequential one's: close
        rs = rows(s)
        rs["looped"].per_input["base"] = rs["sequential"].per_input["base"]
        return rs

    for key, (yes, no) in cases.items():
        make_yes = same_base if yes is None else (lambda s, kw=yes: rows(s, **kw))
        make_no = lambda s, kw=no: rows(s, **kw)  # noqa: E731
        assert verdict(make_yes(0), key) is True, key
        assert verdict(make_no(0), key) is False, key
        if key in RECIPE_KEYS:  # a recipe decides over three seeds, both ways
            assert pooled(make_yes, key) is True, key
            assert pooled(make_no, key) is False, key


def test_linear_judges_the_update_not_the_whole_block():
    """A block whose whole map is nearly linear only through its identity path (whole-block R^2 0.999, update 0.5)
    is not nearly linear; its whole-block R^2 is shown beside."""
    rs = rows(**{r.replace("-", "_"): {"r2": (0.5, 0.99), "whole": 0.999} for r in MATRIX_RECIPES})
    (c,) = [c for c in MC.claims(rs) if c["key"] == "linear"]
    assert c["holds"] is False and c["measured"]["min_r2_whole_block"] == pytest.approx(0.999)
    assert c["measured"]["min_r2_update"] == pytest.approx(0.5) and "whole block 0.999" in c["detail"]
    assert len(c["tests"]) == 2 * len(MATRIX_RECIPES)  # one test per block (two per fake row)
    # one block 2.5 se below the bar: against it at z = 2, but not at the Bonferroni z of the 12 tests
    near = rows(**{r.replace("-", "_"): {"r2": (0.97, 0.99)} for r in MATRIX_RECIPES})
    near["looped"].linear_r2_update[0] = MC.LINEAR_BAR - 0.005
    (c,) = [c for c in MC.claims(near) if c["key"] == "linear"]
    assert c["holds"] is None and C.union_z(len(c["tests"])) > 2.5
    near["looped"].linear_r2_update[0] = MC.LINEAR_BAR - 0.02  # 10 se below: does not hold
    assert verdict(near, "linear") is False


def test_a_claim_inside_the_noise_cannot_tell():
    def at_margin(s: int) -> dict:  # 5 points below: at the margin itself
        rs = rows(s)
        rs["looped"].per_input["base"] = E.pack(_outcomes(0.9, 99 + s))
        return rs

    assert verdict(at_margin(0), "looped") is None
    assert pooled(at_margin, "looped") is None
    same = rows()
    for r in MATRIX_RECIPES:  # influence picks the very runs the last quarter deletes: no difference at all
        same[r].per_input["influence"] = same[r].per_input["last_quarter"]
    assert verdict(same, "influence") is None


def test_claims_wait_for_their_rows():
    rs = rows()
    assert {c["key"] for c in MC.claims({"sequential": rs["sequential"]})} == {"u_shape", "attention", "linear",
                                                                                 "influence"}
    assert [c["key"] for c in MC.claims(rs)] == list(MC.KEYS)


# -- end to end, quick mode ----------------------------------------------------------------------------------------
def test_a_quick_run_has_every_row_column_profile_and_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    store = Store(tmp_path / "store")
    r = matrix.run(matrix.MatrixConfig(seed=0, orders=2), store=store)
    assert isinstance(r, matrix.MatrixResult) and list(r.rows) == list(MATRIX_RECIPES)
    t = r.matrix
    assert t["recipes"] == list(MATRIX_RECIPES) and t["ops"] == list(matrix.OPS)
    assert len(t["kept"]) == 6 and all(len(row) == len(matrix.OPS) for row in t["kept"])
    for rec, row in r.rows.items():
        assert isinstance(row, matrix.RowResult) and row.recipe == rec and row.config == matrix.RowConfig(rec, 0, 2)
        assert set(row.acc) == set(matrix.OPS) and set(row.profiles) == set(matrix.OPS)
        assert len(row.profiles["delete"]) == row.n_blocks == (3 if rec == "looped" else 6)
        assert len(row.profiles["exit"]) == 7 and row.profiles["exit"][-1] == row.base_acc
        assert len(row.profiles["random"]) == 2 and set(row.op_seconds) >= set(matrix.OPS)
        assert row.train_seconds > 0 and row.fill_seconds > 0
    claims = MC.result_claims(r)  # computed when read: the result stores none
    C.check(claims)
    assert [c["key"] for c in claims] == list(MC.KEYS) and "claims" not in to_plain(r)
    for c in claims:  # every claim names its deciding error and how it was obtained, and so does every test
        assert c["measured"]["se"] == max(t["se"] for t in c["tests"]) and c["measured"]["se_kind"] in E.SE_KINDS
        assert all(t["how"] and t["se_kind"] in E.SE_KINDS for t in c["tests"])
        # a recipe claim says it rests on one trained network at this one seed; the others are these networks'
        assert c["over"] == ("seeds" if c["key"] in RECIPE_KEYS else "inputs"), c["key"]
        if c["over"] == "seeds":
            assert c["seeds"] == [0] and c["holds"] is None and c["why"] == "one trained network"
    assert all(len(row.linear_r2_update_se) == row.n_blocks and min(row.linear_r2_update_se) > 0
               for row in r.rows.values())
    again = matrix.run(matrix.MatrixConfig(seed=0, orders=2), store=store)  # a read (NaN != NaN: compare JSON)
    assert isinstance(again, matrix.MatrixResult) and isinstance(again.rows["looped"], matrix.RowResult)
    assert json.dumps(to_plain(again)) == json.dumps(to_plain(r))
    # the stored entry is the plain data of the typed result, field for field (its keys are the stored keys)
    one = matrix.row(matrix.RowConfig("sequential", 0, 2), store=store)
    assert json.dumps(to_plain(one)) == json.dumps(to_plain(again.rows["sequential"]))


def test_simulated_nulls_hold_falsely_at_most_five_percent_of_the_time():
    """Under the null (deleting attention and deleting the MLP cost the same, in every recipe) the paired claim says
    "holds" at most 5 % of the time (1-sided tests at z = 2: about 2 %). The recipe claims (early_exit, ...) are
    simulated over seeds, with per-model training variance, in tests/test_matrix_nulls.py."""
    rng = np.random.default_rng(0)
    n, sims, falsely = 397, 400, 0
    for _ in range(sims):
        rows = {}
        for name in ("sequential", "early-exit"):
            a, m = (rng.random(n) < 0.8 for _ in range(2))
            rows[name] = row_result(name, per_input={"base": np.ones(n), "no_attn": a, "no_mlp": m},
                                    acc={"no_attn": float(a.mean()), "no_mlp": float(m.mean())}, base_acc=1.0)
        falsely += MC.attention(rows)["holds"] is True
    assert falsely / sims <= 0.05, falsely
