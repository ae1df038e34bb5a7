"""Recovery: distillation must heal a cut network; its loss must match Hinton's definition."""

import copy

import torch
import torch.nn.functional as F

from lab.core.routes import without
from lab.ops.recover import RecoveryConfig, kd_loss, recover

from .helpers import small_data, small_mlp


def test_kd_lifts_a_cut_plain_net_above_no_recovery():
    teacher = small_mlp("plain")
    d = small_data()
    route = without(teacher.n_blocks, [1])
    before = copy.deepcopy(teacher.state_dict())
    student = copy.deepcopy(teacher)
    log = recover(student, route, d, RecoveryConfig(method="kd", steps=150, eval_every=50), teacher=teacher)
    assert log.test_acc[-1] > log.test_acc[0] + 0.2, log.test_acc
    # The teacher itself was not touched.
    assert all(torch.equal(v, teacher.state_dict()[k]) for k, v in before.items())


def test_no_recovery_changes_nothing():
    teacher = small_mlp("residual")
    student = copy.deepcopy(teacher)
    log = recover(student, (0, 2), small_data(), RecoveryConfig(method="none"))
    assert log.steps == [0]
    for p, q in zip(teacher.parameters(), student.parameters(), strict=True):
        assert torch.equal(p, q)


def test_kd_loss_is_temperature_scaled_kl():
    torch.manual_seed(0)
    s, t = torch.randn(16, 5), torch.randn(16, 5)
    T = 3.0
    p = F.softmax(t / T, 1)
    expected = (p * (p.log() - F.log_softmax(s / T, 1))).sum(1).mean() * T * T
    assert torch.allclose(kd_loss(s, t, T), expected, atol=1e-6)
    assert float(kd_loss(t, t, T)) < 1e-6
