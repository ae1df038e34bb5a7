"""The route algebra (lab/core/routes.py): the registry of operations, their validation, and the prefix states."""

import pytest
import torch

from lab.core import routes
from lab.core.models import MLP, MLPConfig
from lab.core.models.base import Parallel


def test_every_operation_has_a_label_and_the_argument_tuples_follow_the_registry():
    assert list(routes.OPS) == ["identity", "skip", "swap", "reverse", "random", "repeat", "skip-middle", "loop",
                                "parallel", "parallel-loop"]
    assert all(routes.OPS[o].label for o in routes.OPS)
    assert routes.BLOCK_OPS == ("skip", "swap", "repeat")
    assert routes.REDUCE_OPS == ("parallel", "parallel-loop")
    assert routes.LOOP_OPS == ("loop", "parallel-loop")
    assert routes.SPAN_OPS == ("skip", "reverse", "repeat", "parallel", "parallel-loop")
    assert routes.op_labels(("skip", "swap")) == {"skip": "skip block b", "swap": "swap blocks b and b+1"}
    with pytest.raises(ValueError, match="unknown route operation 'delete'"):
        routes.op("delete")


def test_validation_says_what_is_allowed():
    with pytest.raises(ValueError, match="choose b from 1 to 3"):
        routes.check_op("swap", 6, 4)
    with pytest.raises(ValueError, match="or include the ends"):
        routes.check_op("skip", 6, 0)
    routes.check_op("skip", 6, 0, ends="include")
    with pytest.raises(ValueError, match="does not fit"):
        routes.check_op("reverse", 6, 4, span=2)
    with pytest.raises(ValueError, match="set the ends to keep"):
        routes.check_op("reverse", 6, 1, ends="include", span=2)
    routes.check_op("reverse", 6, 99)  # block is not an argument of reverse
    with pytest.raises(ValueError, match="no single route"):
        routes.route_of("random", 6)


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
