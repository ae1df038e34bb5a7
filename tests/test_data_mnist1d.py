"""MNIST-1D generated locally (its published shape and balance, deterministic, leaving the global generators alone),
the bundled tabular sets, the tasks' facts, and the ViT that reads a sequence as patches."""

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lab.core.data_mnist1d import SIZES, Mnist1dSize, generate, mnist1d
from lab.core.models import ViT, ViTConfig
from lab.core.task_facts import task_facts
from lab.core.zoo import TASKS, task

ROOT = Path(__file__).resolve().parents[1]


def test_the_published_size_has_the_published_shape_and_balance():
    d = task("mnist1d")
    assert d.train.x.shape == (3500, 40) and d.probe.x.shape == (500, 40) and d.test.x.shape == (1000, 40)
    assert d.train.x.dtype == torch.float32 and d.train.y.dtype == torch.int64
    assert (d.n_features, d.n_classes) == (40, 10)
    # make_dataset draws num_samples // 10 of each class, then shuffles and splits 80 / 20
    overall = torch.bincount(torch.cat([d.train.y, d.probe.y, d.test.y]), minlength=10)
    assert overall.tolist() == [500] * 10
    train = torch.bincount(torch.cat([d.train.y, d.probe.y]), minlength=10)
    assert train.min() >= 385 and train.max() <= 415  # measured: 394..411
    # the package standardises the whole set: mean 0, sd 1 over train, probe and test together
    allx = torch.cat([d.train.x, d.probe.x, d.test.x])
    assert abs(float(allx.mean())) < 1e-4 and abs(float(allx.std()) - 1) < 1e-3


def test_it_is_the_packages_own_make_dataset_with_its_default_arguments():
    import matplotlib

    matplotlib.use("Agg")
    from mnist1d.data import get_dataset_args, make_dataset

    state = np.random.get_state(), random.getstate()
    try:
        raw = make_dataset(get_dataset_args())  # the published defaults: 5,000 samples, split 0.8, seed 42
    finally:
        np.random.set_state(state[0])
        random.setstate(state[1])
    d = task("mnist1d")
    # the package's training signals are the lab's train and probe splits together, none twice
    ours = {r.tobytes() for r in torch.cat([d.train.x, d.probe.x]).numpy()}
    assert ours == {r.tobytes() for r in raw["x"].astype(np.float32)} and len(d.train) + len(d.probe) == len(raw["x"])
    assert np.array_equal(d.test.y.numpy(), raw["y_test"])


def test_generation_is_deterministic_and_leaves_the_global_generators_alone():
    np.random.seed(123)
    random.seed(123)
    np_before, py_before = np.random.get_state(), random.getstate()
    a = generate(SIZES["mnist1d"])
    np_after, py_after = np.random.get_state(), random.getstate()
    assert py_after == py_before
    assert np_after[0] == np_before[0] and np.array_equal(np_after[1], np_before[1]) and np_after[2:] == np_before[2:]
    assert np.random.rand() == np.random.RandomState(123).rand()  # the next draw is what seed 123 gives
    b = generate(SIZES["mnist1d"])
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert hashlib.sha256(a["x"].tobytes()).hexdigest() == hashlib.sha256(b["x"].tobytes()).hexdigest()


def test_generation_never_reaches_the_network_or_a_pickle(monkeypatch, tmp_path):
    import socket

    import mnist1d.data

    def refuse(*a, **k):
        raise AssertionError("MNIST-1D generation must not download, read or write a file")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    for name in ("to_pickle", "from_pickle", "get_dataset"):
        monkeypatch.setattr(mnist1d.data, name, refuse)
    monkeypatch.chdir(tmp_path)
    small = Mnist1dSize(num_samples=200, train_split=0.8, n_probe=20)
    raw = generate(small)
    assert raw["x"].shape == (160, 40) and raw["x_test"].shape == (40, 40)
    assert list(tmp_path.iterdir()) == []


def test_a_process_without_a_display_uses_agg():
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
    code = ("from lab.core.data_mnist1d import Mnist1dSize, generate; generate(Mnist1dSize(100, 0.8, 10)); "
            "import matplotlib; print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().lower() == "agg"


def test_the_probe_is_a_stratified_part_held_out_of_the_packages_training_signals():
    d = task("mnist1d")
    assert len(d.probe) == 500
    pool = torch.bincount(torch.cat([d.train.y, d.probe.y]), minlength=10)
    share = pool * 500 / 4000  # stratified: the package's training signals' class shares
    assert (torch.bincount(d.probe.y, minlength=10) - share).abs().max() < 1
    rows = {tuple(r) for r in d.train.x.numpy().round(6).tolist()}
    assert not any(tuple(r) in rows for r in d.probe.x.numpy().round(6).tolist())  # held out from training
    assert task("mnist1d") is task("mnist1d")  # cached per process


def test_the_large_size_holds_out_enough_for_half_a_point():
    d = mnist1d("mnist1d-large")
    assert (len(d.train), len(d.probe), len(d.test)) == (11_000, 1_000, 12_000)
    assert (0.25 / len(d.test)) ** 0.5 < 0.005  # the binomial standard error at worst (50 %) is under 0.5 pts
    overall = torch.bincount(torch.cat([d.train.y, d.probe.y, d.test.y]), minlength=10)
    assert overall.tolist() == [2400] * 10
    small = task("mnist1d")
    assert not torch.equal(small.test.x[:5], d.test.x[:5])  # a different draw, not a copy


@pytest.mark.parametrize("name,n,f,k", [("wine", 178, 13, 3), ("breast-cancer", 569, 30, 2)])
def test_bundled_tables(name, n, f, k):
    d = task(name)
    assert len(d.train) + len(d.probe) + len(d.test) == n
    assert (d.n_features, d.n_classes) == (f, k) and d.train.x.shape[1] == f
    assert d.train.x.dtype == torch.float32 and d.train.y.dtype == torch.int64
    # standardised with the training split's statistics only
    assert torch.allclose(d.train.x.mean(0), torch.zeros(f), atol=1e-5)
    assert torch.allclose(d.train.x.std(0, unbiased=False), torch.ones(f), atol=1e-4)
    assert not torch.allclose(d.test.x.mean(0), torch.zeros(f), atol=1e-3)
    for split in (d.train, d.probe, d.test):  # stratified: every class in every split
        assert (torch.bincount(split.y, minlength=k) > 0).all()
    assert abs(len(d.test) / n - 0.25) < 0.01 and abs(len(d.probe) / n - 0.15) < 0.01


def test_every_task_has_its_facts():
    for name in TASKS:
        f = task_facts(name)
        d = task(name)
        assert (f.n_train, f.n_probe, f.n_test) == (len(d.train), len(d.probe), len(d.test))
        assert (f.n_features, f.n_classes, f.chance) == (d.n_features, d.n_classes, d.chance)
        assert f.about and f.label and f.source
    m = task_facts("mnist1d")
    assert (m.n_train, m.n_probe, m.n_test, m.n_features, m.n_classes) == (3500, 500, 1000, 40, 10)
    assert "Greydanus and Kobak" in m.source and "ICML 2024" in m.source
    with pytest.raises(ValueError, match="unknown task"):
        task_facts("nope")


# -- the ViT on a sequence ---------------------------------------------------------------------------------------
# Frozen from the code before the 1-D option existed (commit 4a69cd7): seed 0, the state_dict's names, shapes and
# bytes. The default image ViT must keep exactly these draws.
FROZEN = {
    "none": "dbb951dd3bbbc05eeff7f25bdee5aa8ce53279fa030db617a25a5857e4f3997e",
    "position": "fa630f3a2df16ac6584fa22936b1bd6a17bf37a5ca33438a22faa784446107e4",
}
FROZEN_OUT = [-0.287424, -0.213186, 0.155374, 0.085039, -0.287602, -0.21328, 0.155541, 0.085124]
FROZEN_SUM = -3.7027695178985596


def state_hash(m: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for k, v in m.state_dict().items():
        h.update(k.encode())
        h.update(str(tuple(v.shape)).encode())
        h.update(v.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("mode", sorted(FROZEN))
def test_the_default_image_vit_is_unchanged(mode):
    torch.manual_seed(0)
    m = ViT(ViTConfig(slot_mode=mode))
    assert state_hash(m) == FROZEN[mode]
    if mode == "none":
        x = torch.rand(5, 64, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            out = m(x)
        assert out[:2, :4].flatten().tolist() == pytest.approx(FROZEN_OUT, abs=2e-6)
        assert float(out.sum()) == pytest.approx(FROZEN_SUM, abs=1e-4)


def test_a_sequence_vit_reads_patches_of_consecutive_values():
    cfg = ViTConfig(seq=40, patch=4, depth=2, width=16, heads=2)
    assert (cfg.n_patches, cfg.n_in, cfg.patch_size) == (10, 40, 4)
    torch.manual_seed(0)
    m = ViT(cfg).eval()
    assert m.stem.proj.weight.shape == (16, 4) and m.stem.pos.shape == (1, 11, 16)
    x = task("mnist1d").test.x[:8]
    h = m.embed(x)
    ref = torch.cat([m.stem.cls.expand(8, -1, -1), m.stem.proj(x.reshape(8, 10, 4))], 1) + m.stem.pos
    assert torch.allclose(h, ref)
    assert m(x).shape == (8, 10)
    # two channels: each patch holds the channel-0 run, then the channel-1 run
    two = ViT(ViTConfig(seq=8, patch=4, channels=2, depth=1, width=8, heads=2))
    z = torch.arange(16.0).reshape(1, 16)
    patches = torch.tensor([[0.0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]])
    expect = torch.cat([two.stem.cls, two.stem.proj(patches)[None]], 1) + two.stem.pos
    assert torch.allclose(two.embed(z), expect)


def test_sequence_config_rules():
    with pytest.raises(ValueError, match="multiple of the patch length"):
        ViTConfig(seq=40, patch=3)
    with pytest.raises(ValueError, match=">= 0"):
        ViTConfig(seq=-1)
    ViTConfig(seq=40, patch=5, image=7)  # the image side is unused for a sequence
