"""Routes on the MLP against independent references: the route mechanism is what every experiment relies on."""

import copy

import pytest
import torch

from lab.core.models import MLP, MLPConfig, logits_of
from lab.core.models.base import evaluating
from lab.core.routes import evenly_spaced, without

from .helpers import small_data, small_mlp


def reference_forward(m: MLP, x: torch.Tensor, route) -> torch.Tensor:
    """The MLP written out by hand from its weights, independent of MLP.forward."""
    h = torch.clamp(x @ m.stem.weight.T + m.stem.bias, min=0)
    for i in route:
        a = torch.clamp(h @ m.blocks[i].weight.T + m.blocks[i].bias, min=0)
        h = h + a if m.cfg.arch == "residual" else a
    return h @ m.head.weight.T + m.head.bias


@pytest.mark.parametrize("arch", ["plain", "residual"])
def test_full_route_reproduces_the_teacher_exactly(arch):
    m = small_mlp(arch)
    x = small_data().test.x[:300]
    full = logits_of(m, x)
    assert torch.equal(full, logits_of(m, x, tuple(range(m.n_blocks))))
    assert torch.allclose(full, reference_forward(m, x, range(m.n_blocks)), atol=1e-5)


@pytest.mark.parametrize("arch", ["plain", "residual"])
def test_any_route_matches_the_hand_written_reference(arch):
    m = small_mlp(arch)
    x = small_data().test.x[:200]
    for route in [(0, 2), (3, 1, 0), (), (2, 2, 2)]:
        assert torch.allclose(logits_of(m, x, route), reference_forward(m, x, route), atol=1e-5)


def test_residual_deletion_equals_zeroing_the_block_output():
    m = small_mlp("residual")
    x = small_data().test.x[:300]
    for i in range(m.n_blocks):
        zeroed = copy.deepcopy(m)
        with torch.no_grad():  # relu(0 * h - 1) = 0: the block adds nothing to the stream
            zeroed.blocks[i].weight.zero_()
            zeroed.blocks[i].bias.fill_(-1.0)
        assert torch.allclose(logits_of(m, x, without(m.n_blocks, [i])), logits_of(zeroed, x), atol=1e-5)


def test_plain_deletion_feeds_the_next_block_the_deleted_blocks_input():
    m = small_mlp("plain")
    x = small_data().test.x[:300]
    i = 1
    _, full_states = m.states(x)
    _, cut_states = m.states(x, without(m.n_blocks, [i]))
    # In the cut route slot i runs block i + 1, whose input must be what block i used to receive.
    expected = torch.relu(m.blocks[i + 1](full_states[i]))
    assert torch.allclose(cut_states[i + 1], expected, atol=1e-6)
    assert not torch.allclose(cut_states[i + 1], full_states[i + 2], atol=1e-3)  # and it really differs


def test_deletion_indices_refer_to_the_original_numbering():
    assert without(7, [5, 2]) == (0, 1, 3, 4, 6)
    assert without(7, [2, 5]) == without(7, [5, 2])
    with pytest.raises(ValueError):
        without(7, [7])


def test_evenly_spaced_spreads_the_picks():
    assert evenly_spaced(7, 3) == (1, 3, 5)
    assert evenly_spaced(8, 4) == (0, 2, 4, 6) or evenly_spaced(8, 4) == (1, 3, 5, 7)
    for n in range(1, 10):
        for k in range(n + 1):
            picks = evenly_spaced(n, k)
            assert len(picks) == k and len(set(picks)) == k and all(0 <= p < n for p in picks)


def test_route_rejects_unknown_blocks():
    m = MLP(MLPConfig(blocks=2, width=8))
    with pytest.raises(ValueError):
        m(torch.zeros(1, 12), (0, 5))


def test_residual_init_is_half_the_plain_init():
    torch.manual_seed(0)
    plain = MLP(MLPConfig(arch="plain"))
    torch.manual_seed(0)
    res = MLP(MLPConfig(arch="residual"))
    ratio = res.blocks[0].weight.std() / plain.blocks[0].weight.std()
    assert 0.45 < float(ratio.detach()) < 0.55


@pytest.mark.parametrize("training", [True, False])
def test_evaluating_runs_in_eval_mode_and_restores_the_models_own_mode(training):
    m = MLP(MLPConfig(blocks=2, width=8)).train(training)
    with evaluating(m) as same:
        assert same is m and not m.training and not m.blocks[0].training
    assert m.training is training and m.blocks[0].training is training
    with pytest.raises(RuntimeError), evaluating(m):
        raise RuntimeError("a failed measurement")
    assert m.training is training  # restored whatever happened inside
    logits_of(m, torch.zeros(3, m.cfg.n_in))
    assert m.training is training
