"""Every page's Reproduce notebook redraws its main figure from the lab call's result alone (`figure(r)`): the page
names one, and the figures built for a notebook draw the result's numbers (synthetic results; the notebook itself
is executed in tests/test_reproduce.py)."""

import ast
from pathlib import Path

from app import figures_iot, figures_layerdrop, figures_shuffle

ROOT = Path(__file__).resolve().parents[1]


def test_every_page_reproduces_its_view_with_a_figure():
    for path in sorted((ROOT / "pages").glob("*.py")):
        if path.stem == "home":
            continue
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "reproduce"]
        assert calls, f"{path.name} has no Reproduce expander"
        # the lab call comes from the descriptor's plan (Descriptor.reproduce); the page passes its main figure
        assert all(len(c.args) == 1 or any(k.arg == "figure" for k in c.keywords) for c in calls), \
            f"{path.name}: page.reproduce without a figure"


def _orders(mode, base, accs):
    return {"mode": mode, "base_acc": base, "chance": 0.1,
            "random_orders": {"accs": accs, "mean": sum(accs) / len(accs)}}


def test_the_shuffle_figure_draws_both_models_sequential_first():
    r = {**_orders("shuffle", 0.9, [0.8, 0.85]), "comparison": {"sequential": _orders("sequential", 0.95, [0.3])}}
    fig = figures_shuffle.orders_of_run(r)
    hist = [t for t in fig.data if t.type == "histogram"]
    assert [list(t.x) for t in hist] == [[30.0], [80.0, 85.0]]  # panels: sequential, then the run's model


def test_the_iot_figure_reads_the_joined_run():
    r = {"orders": ["0 1", "1 0"], "order_acc": [0.8, 0.7], "sequential_acc": 0.81, "ensemble_acc": 0.83,
         "iot_acc": 0.84, "oracle_acc": 0.9, "chance": 0.05, "fixed_acc": [0.79, 0.78], "best_fixed_acc": 0.79}
    fig = figures_iot.accuracy_of_run(r)
    ys = [list(t.y) for t in fig.data if t.type == "bar" and t.y is not None and None not in list(t.y)]
    assert [0.79, 0.78] in ys and [0.81, 0.79, 0.83, 0.84, 0.9] in ys


def test_the_layerdrop_figure_draws_every_rate_under_the_runs_strategy():
    def prof(p):
        rows = [{"test_acc": 0.1 + 0.1 * k + p / 10, "kept": list(range(k))} for k in range(5)]
        return {"config": {"p": p}, "strategies": {"every-other": rows}, "n_blocks": 4, "chance": 0.05}

    r = {"config": {"model": "residual", "p": 0.5, "keep": 2, "strategy": "every-other", "seed": 3},
         "scratch_acc": 0.4, "distilled_acc": 0.45, "by_p": [prof(0.0), prof(0.5)]}
    fig = figures_layerdrop.versus_p_of_run(r)  # from the result alone: a figure never reads the store
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["p = 0", "p = 0.5 (yours)"]
    assert {t.y[0] for t in fig.data if t.mode == "markers"} == {0.4, 0.45}
