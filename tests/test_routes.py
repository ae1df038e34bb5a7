"""The route algebra (lab/core/routes.py): the registry of operations, their validation, the operations as
transforms of any route (looped and parallel ones too), the training samplers, and the prefix states."""

import itertools
from collections import Counter

import pytest
import torch

from lab.core import routes, streams
from lab.core.models import MLP, MLPConfig
from lab.core.models.base import Parallel, Step, logits_of
from lab.core.train import TrainConfig, route_sampler
from lab.ops import route_ops as O

LOOPED = routes.looped(3, 2)  # (0, 1, 2, 0, 1, 2): a looped model's route, blocks and slots apart


# The shipped route surgeries, in their order: a surgery declared later (tests/test_ops_registry.py adds a toy one) is
# checked by what the registry says of every surgery, with no line to add here.
SHIPPED = ("identity", "skip", "swap", "reverse", "random", "repeat", "skip-middle", "loop", "parallel",
           "parallel-loop")


def test_every_operation_has_a_label_and_the_argument_tuples_follow_the_registry():
    shipped = lambda names: tuple(o for o in names if o in SHIPPED)  # noqa: E731
    assert shipped(O.OPS) == SHIPPED
    assert all(O.OPS[o].label for o in O.OPS)
    assert shipped(O.BLOCK_OPS) == ("skip", "swap", "repeat")
    assert shipped(O.REDUCE_OPS) == ("parallel", "parallel-loop")
    assert shipped(O.LOOP_OPS) == ("loop", "parallel-loop")
    assert shipped(O.SPAN_OPS) == ("skip", "reverse", "repeat", "parallel", "parallel-loop")
    assert O.op_labels(("skip", "swap")) == {"skip": "skip block b", "swap": "swap blocks b and b+1"}
    with pytest.raises(ValueError, match="unknown route operation 'drop'.*delete"):
        O.op("drop")


def test_page_words_are_label_aliases_of_the_registry():
    assert O.op("delete") is O.OPS["skip"] and O.op("none") is O.OPS["identity"]
    assert O.op_labels(("none", "delete", "swap")) == {"none": "intact (trained order)",
                                                          "delete": "delete block b", "swap": "swap blocks b and b+1"}
    assert not set(O.ALIASES) & set(O.OPS)  # a word means one operation
    for n in (4, 6):
        for b in O.valid_blocks("skip", n, "include"):
            assert O.route_of("delete", n, b, ends="include") == O.route_of("skip", n, b, ends="include")
        O.check_op("delete", n, 1)


def test_validation_says_what_is_allowed():
    with pytest.raises(ValueError, match="choose b from 1 to 3"):
        O.check_op("swap", 6, 4)
    with pytest.raises(ValueError, match="or include the ends"):
        O.check_op("skip", 6, 0)
    O.check_op("skip", 6, 0, ends="include")
    with pytest.raises(ValueError, match="does not fit"):
        O.check_op("reverse", 6, 4, span=2)
    with pytest.raises(ValueError, match="set the ends to keep"):
        O.check_op("reverse", 6, 1, ends="include", span=2)
    O.check_op("reverse", 6, 99)  # block is not an argument of reverse
    with pytest.raises(ValueError, match="no single route"):
        O.route_of("random", 6)


def test_a_random_order_of_every_block_is_a_random_permutation_of_the_same_draw():
    a = routes.random_order(6, "include", torch.Generator().manual_seed(3))
    assert a == routes.random_permutation(6, torch.Generator().manual_seed(3))
    kept = routes.random_order(6, "keep", torch.Generator().manual_seed(3))
    assert kept[0] == 0 and kept[-1] == 5 and sorted(kept) == list(range(6))


def test_prefix_states_rest_equals_the_whole_route_exactly():
    torch.manual_seed(0)
    m = MLP(MLPConfig(arch="residual", width=16, blocks=5)).eval()
    x = torch.rand(20, m.cfg.n_in, generator=torch.Generator().manual_seed(1))
    pre = routes.PrefixStates(m, x)
    with torch.no_grad():
        for steps in ((0, 1, 3, 4), (0, 1, Parallel((2, 3), "sum"), 4), (0, 1, 2, 2, 2, 4)):
            whole = m.run_steps(m.embed(x), steps)
            for start in range(3):
                if tuple(steps[:start]) == tuple(range(start)):
                    assert torch.equal(pre.rest(steps[start:], start), whole)


# -- the operations on any route ----------------------------------------------------------------------------------
def tiny_model() -> MLP:
    torch.manual_seed(0)
    return MLP(MLPConfig(arch="residual", width=16, blocks=4)).eval()


def test_the_looped_route_is_the_loop_operation_on_every_block():
    assert LOOPED == (0, 1, 2, 0, 1, 2)
    for n, k in itertools.product((1, 3, 5), range(1, O.MAX_LOOPS + 1)):
        assert routes.looped(n, k) == O.route_of("loop", n, ends="include", loops=k)
    assert routes.looped(4, 1) == tuple(range(4)) == routes.steps_of(4)


def test_identity_is_identity_on_any_route_and_reproduces_the_model_exactly():
    m = tiny_model()
    x = torch.rand(30, m.cfg.n_in, generator=torch.Generator().manual_seed(2))
    for r in (4, (0, 1, 2, 3, 0, 1, 2, 3), (3, 1, 0), (0, Parallel((1, 2)), Step(3), 3)):
        for ends in O.ENDS:
            assert O.route_of("identity", r, ends=ends) == routes.steps_of(r)
            assert O.route_of("loop", r, ends=ends, loops=1) == routes.steps_of(r)
    with torch.no_grad():
        assert torch.equal(m.run_steps(m.embed(x), O.route_of("identity", 4)), m.run_steps(m.embed(x), range(4)))
        assert torch.equal(m.readout(m.run_steps(m.embed(x), O.route_of("identity", 4))), m(x))
        looped = routes.looped(4, 2)
        same = O.route_of("identity", looped, ends="include")
        assert torch.equal(logits_of(m, x, same), logits_of(m, x, looped))
        assert not torch.equal(logits_of(m, x, looped), m(x))  # the check can fail: looping is another function


def test_skip_removes_exactly_the_named_blocks_steps():
    for b in routes.blocks_of(LOOPED):
        out = O.route_of("skip", LOOPED, b, ends="include")
        assert out == tuple(s for s in LOOPED if s != b)  # every run of b, nothing else, the order kept
        assert Counter(LOOPED) - Counter(out) == Counter({b: LOOPED.count(b)})
    assert O.route_of("skip", LOOPED, 1, ends="include") == (0, 2, 0, 2)
    # with the ends kept, a block that runs at the first or last slot cannot be skipped
    assert O.valid_blocks("skip", LOOPED, "keep") == (1,)
    assert O.route_of("skip", LOOPED, 1) == (0, 2, 0, 2)
    with pytest.raises(ValueError, match=r"block 0 is out of range for skip.*route 0 → 1 → 2 → 0 → 1 → 2.*"
                                         r"choose b from 1 to 1 \(or include the ends\)"):
        O.route_of("skip", LOOPED, 0)
    # in a parallel group the block leaves the group; a group left empty goes
    par = (0, Parallel((1, 2), "sum"), Step(2, "no_mlp"), Parallel((1,)), 3)
    assert O.route_of("skip", par, 1, ends="include") == (0, Parallel((2,), "sum"), Step(2, "no_mlp"), 3)
    assert O.route_of("skip", par, 2, ends="include") == (0, Parallel((1,), "sum"), Parallel((1,)), 3)


def test_swap_is_an_involution_on_any_route():
    par = (0, Parallel((1, 2)), 3, Step(1, "no_attn"), 2)
    for r in (LOOPED, routes.looped(4, 3), par):
        for s in O.valid_blocks("swap", r, "include"):
            once = O.route_of("swap", r, s, ends="include")
            assert O.route_of("swap", once, s, ends="include") == tuple(r)
            assert Counter(once) == Counter(r) and once[s] == r[s + 1] and once[s + 1] == r[s]
            if r[s] != r[s + 1]:
                assert once != tuple(r)  # the check can fail: a swap changes the route
    assert O.route_of("swap", LOOPED, 2, ends="include") == (0, 1, 0, 2, 1, 2)  # slots 2 and 3: runs, not blocks
    with pytest.raises(ValueError, match="out of range for swap"):
        O.route_of("swap", LOOPED, 5, ends="include")


def test_every_operation_maps_routes_to_routes_and_they_compose():
    m = tiny_model()
    x = torch.rand(8, m.cfg.n_in, generator=torch.Generator().manual_seed(4))
    gen = torch.Generator().manual_seed(0)

    def every(r):  # every operation with every argument it takes on r, ends kept and included
        for name, ends in itertools.product(O.OPS, O.ENDS):
            for b in (O.valid_blocks(name, r, ends) if name in O.BLOCK_OPS else (1,)):
                yield O.route_of(name, r, b, ends=ends, loops=2, gen=gen)

    firsts = list(every(routes.looped(4, 2)))
    assert len(firsts) > 30
    with torch.no_grad():
        for first in firsts:
            m.run_steps(m.embed(x), first)  # a route the model runs
            for second in itertools.islice(every(first), 0, None, 7):
                m.run_steps(m.embed(x), second)
    # a composition, checked by hand: skip block 1 of the looped route, then loop the middle of the rest twice
    skipped = O.route_of("skip", LOOPED, 1, ends="include")
    assert O.route_of("loop", skipped, loops=2) == (0, 2, 0, 2, 0, 2)
    assert O.route_of("reverse", O.route_of("reverse", LOOPED)) == LOOPED
    assert O.route_of("parallel", LOOPED) == (0, Parallel((1, 2, 0, 1)), 2)
    assert O.route_of("repeat", LOOPED, 3, span=2) == (0, 1, 2, 0, 0, 2)  # the step at slot 3, twice
    # a group in the middle joins the new one: every block the middle runs, side by side
    assert O.route_of("parallel", O.route_of("parallel", 5), ends="include") == (Parallel(tuple(range(5))),)
    with pytest.raises(ValueError, match="a parallel group runs blocks in their standard form"):
        O.route_of("parallel", (0, Step(1, "no_mlp"), 2, 3))


def test_random_uses_its_named_stream():
    orders = routes.random_orders(LOOPED, 5, "lens.random", 3, 6)
    gen = streams.generator("lens.random", 3, 6)
    assert orders == [tuple(LOOPED[i] for i in routes.random_permutation(6, gen)) for _ in range(5)]
    assert orders == [O.route_of("random", LOOPED, ends="include", gen=g)
                      for g in [streams.generator("lens.random", 3, 6)] for _ in range(5)]
    assert all(Counter(o) == Counter(LOOPED) for o in orders)  # the same runs, reordered
    assert orders != routes.random_orders(LOOPED, 5, "matrix.orders", 3, 6)  # another stream, other orders
    assert orders != routes.random_orders(LOOPED, 5, "lens.random", 4, 6)  # another seed too
    kept = routes.random_orders(routes.looped(4, 2), 20, "rearrange.random", 0, ends="keep")
    assert all(o[0] == 0 and o[-1] == 3 and Counter(o) == Counter(routes.looped(4, 2)) for o in kept)
    assert len(set(kept)) > 1
    # on the plain order with every block, exactly a random permutation of the same draw
    assert routes.random_orders(6, 3, "orders.random", 1, 6) == [
        routes.random_permutation(6, g) for g in [streams.generator("orders.random", 1, 6)] for _ in range(3)]


# -- training samplers ----------------------------------------------------------------------------------------
def test_the_training_samplers_are_one_registry_and_draw_only_what_they_need():
    assert list(routes.SAMPLERS) == ["sequential", "looped", "shuffle", "layerdrop"]
    assert all(s.label for s in routes.SAMPLERS.values())
    for mode in ("sequential", "looped"):  # these draw nothing: they train exactly like the plain loop
        gen = torch.Generator().manual_seed(5)
        assert routes.sample_route(mode, LOOPED, gen, 0.5) == LOOPED
        assert torch.equal(gen.get_state(), torch.Generator().manual_seed(5).get_state())
    a, b = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    shuffled = [routes.sample_route("shuffle", 6, a) for _ in range(10)]
    assert shuffled == [routes.random_permutation(6, b) for _ in range(10)] and len(set(shuffled)) > 1
    dropped = [routes.sample_route("layerdrop", LOOPED, a, 0.5) for _ in range(20)]
    masks = [torch.rand(6, generator=b) >= 0.5 for _ in range(20)]  # one draw per step, the step kept when >= p
    assert dropped == [tuple(s for s, k in zip(LOOPED, mask.tolist(), strict=True) if k) for mask in masks]
    assert {len(d) for d in dropped} != {len(LOOPED)}  # some steps really go
    assert routes.sample_route("layerdrop", LOOPED, a, 0.0) == LOOPED
    with pytest.raises(ValueError, match="unknown training mode 'dropout'"):
        routes.sample_route("dropout", 4, a)


def test_the_training_loop_samples_its_modes_on_the_trained_route():
    gen = torch.Generator().manual_seed(0)
    assert route_sampler(TrainConfig(mode="looped", loops=3), 2)(gen) == (0, 1, 0, 1, 0, 1)
    assert route_sampler(TrainConfig(), 4)(gen) == (0, 1, 2, 3)
    a, b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert route_sampler(TrainConfig(mode="shuffle"), 5)(a) == routes.random_permutation(5, b)
