"""The model registry (lab/core/model_registry.py): every entry builds the shape it declares, every word the pages,
links and the CLI used before names the very spec (so the very stored weights) it named before, and no page text
restates a shape instead of formatting its entry's."""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
from pathlib import Path

import pytest

from lab.core import model_registry, page_models, page_words, recipes
from lab.core.models import MLPConfig, ViTConfig
from lab.runtime.store import config_json

ROOT = Path(__file__).resolve().parents[1]


def digest(spec: object) -> str:
    return hashlib.sha256(config_json(spec).encode()).hexdigest()[:16]


# sha256 of each registered model's canonical spec JSON at seeds 0 and 1, recorded from the builders as they were
# before the registry (mlp_spec, vit_spec, layerdrop_spec, matrix_spec): a change here re-keys stored models.
RECORDED = {
    "mlp7-plain": ("378c854ea006dfdf", "7f849e4a932e9776"),
    "mlp7-residual": ("b7a0bebdd48c3cdf", "a3525c408e1bcd61"),
    "mlp1-plain": ("0557fd9b2d737cd6", "a02ccced6e32499a"),
    "mlp1-residual": ("68ed42eda7764382", "47c42c5487773d42"),
    "mlp8-residual": ("fcc48c5d375d0822", "814653ec0a54f014"),
    "mlp8-residual.layerdrop0.5": ("c9eeaa1bc1b2828e", "a79c8dffde4b5b24"),
    "vit6": ("a4b4d70461a441c2", "5b08507f27b83531"),
    "vit6.shuffle": ("6027fd7bc9dec01e", "7e97585832c03631"),
    "vit6.position": ("dfa5db8bd167324d", "36c923f490975a04"),
    "vit6.predict": ("49789195673e4a9d", "fbe77de6fedc404b"),
    "vit8": ("0c94ea4a78a69779", "a0c92a7a672987ec"),
    "vit8.layerdrop0.5": ("e6e66faf51d29571", "2f07c56a0de502a1"),
    "vit6.ln-scale": ("5e9eafb0be926c24", "9855f7010b82de83"),
    "vit6.layerdrop0.5": ("a44d5f2d2b8c6e5f", "d6b16c3222100615"),
    "vit3.looped2": ("0c0a56cda553bdd3", "955e69582a33f97a"),
    "vit6.early-exit": ("130cfabcf63abab7", "0415c7d9427a4d29"),
    "mlp8-residual.shuffle": ("17264abdf1fd0f0d", "aff53dc6d8613333"),
    "mlp4-residual.looped2": ("cfaf262f6c054616", "10f0b3da86d8fb8f"),
    "mlp8-residual.early-exit": ("5b18dd3efcce07f4", "a24e4826660a989b"),
}

# Four of them in full, as the old builders wrote them (mlp_spec("residual", 0), layerdrop_spec("residual", 0.5, 1),
# matrix_spec("looped", 0, "vit"), vit_spec("predict", 6, 0)).
RECORDED_JSON = {
    ("mlp7-residual", 0): '{"__class__": "ModelSpec", "model": {"__class__": "MLPConfig", "arch": "residual", '
    '"blocks": 7, "n_in": 12, "n_out": 20, "width": 128}, "task": "synthetic", "train": {"__class__": "TrainConfig", '
    '"batch": 256, "checkpoints": [0, 1, 2, 3, 5], "drop_p": 0.0, "early_exit": false, "epochs": 12, "fused": false, '
    '"loops": 1, "lr": 0.003, "mode": "sequential", "optimizer": "adam", "seed": 0, "warmup": 0.0, '
    '"weight_decay": 0.0}}',
    ("mlp8-residual.layerdrop0.5", 1): '{"__class__": "ModelSpec", "model": {"__class__": "MLPConfig", "arch": '
    '"residual", "blocks": 8, "n_in": 12, "n_out": 20, "width": 128}, "task": "synthetic", "train": {"__class__": '
    '"TrainConfig", "batch": 256, "checkpoints": [0, 1, 2, 3, 5], "drop_p": 0.5, "early_exit": false, "epochs": 12, '
    '"fused": false, "loops": 1, "lr": 0.003, "mode": "layerdrop", "optimizer": "adam", "seed": 1, "warmup": 0.0, '
    '"weight_decay": 0.0}}',
    ("vit3.looped2", 0): '{"__class__": "ModelSpec", "model": {"__class__": "ViTConfig", "channels": 1, "depth": 3, '
    '"heads": 4, "image": 8, "ln_scale": false, "mlp_ratio": 2, "n_classes": 10, "patch": 2, "seq": 0, "slot_mode": '
    '"none", "stem_scale": 0.1, "width": 64}, "task": "digits", "train": {"__class__": "TrainConfig", "batch": 64, '
    '"checkpoints": [0, 1, 2, 3, 5, 10, 20], "drop_p": 0.0, "early_exit": false, "epochs": 40, "fused": true, '
    '"loops": 2, "lr": 0.002, "mode": "looped", "optimizer": "adamw", "seed": 0, "warmup": 0.1, '
    '"weight_decay": 0.0}}',
    ("vit6.predict", 0): '{"__class__": "ModelSpec", "model": {"__class__": "ViTConfig", "channels": 1, "depth": 6, '
    '"heads": 4, "image": 8, "ln_scale": false, "mlp_ratio": 2, "n_classes": 10, "patch": 2, "seq": 0, "slot_mode": '
    '"predict", "stem_scale": 0.2, "width": 64}, "task": "digits", "train": {"__class__": "TrainConfig", "batch": 64, '
    '"checkpoints": [0, 1, 2, 3, 5, 10, 20], "drop_p": 0.0, "early_exit": false, "epochs": 40, "fused": true, '
    '"loops": 1, "lr": 0.002, "mode": "shuffle", "optimizer": "adamw", "seed": 0, "warmup": 0.1, '
    '"weight_decay": 0.0}}',
}

# Every word a page, a link or the CLI used for a model, and the entry it names now.
OLD_WORDS = {
    **{("registry", w): n for w, n in (("plain", "mlp7-plain"), ("residual", "mlp7-residual"),
                                       ("layerdrop", "mlp8-residual.layerdrop0.5"), ("vit-sequential", "vit6"),
                                       ("vit-shuffle", "vit6.shuffle"), ("vit-position", "vit6.position"),
                                       ("vit-predict", "vit6.predict"))},
    ("delete", "plain"): "mlp7-plain", ("delete", "residual"): "mlp7-residual",
    ("reinit", "plain"): "mlp7-plain", ("reinit", "residual"): "mlp7-residual", ("reinit", "vit"): "vit6",
    ("shuffle", "sequential"): "vit6", ("shuffle", "shuffle"): "vit6.shuffle",
    ("shuffle", "position"): "vit6.position", ("shuffle", "predict"): "vit6.predict",
    ("layerdrop", "residual", 0.0): "mlp8-residual", ("layerdrop", "residual", 0.5): "mlp8-residual.layerdrop0.5",
    ("layerdrop", "vit", 0.0): "vit8", ("layerdrop", "vit", 0.5): "vit8.layerdrop0.5",
    **{("matrix", "vit", r): n for r, n in (("sequential", "vit6"), ("ln-scale", "vit6.ln-scale"),
                                            ("layerdrop", "vit6.layerdrop0.5"), ("shuffle", "vit6.shuffle"),
                                            ("looped", "vit3.looped2"), ("early-exit", "vit6.early-exit"))},
    **{("matrix", "mlp", r): n for r, n in (("sequential", "mlp8-residual"),
                                            ("layerdrop", "mlp8-residual.layerdrop0.5"),
                                            ("shuffle", "mlp8-residual.shuffle"), ("looped", "mlp4-residual.looped2"),
                                            ("early-exit", "mlp8-residual.early-exit"))},
}


def old_spec(word: tuple, seed: int):
    """The spec an old word gives today, through the builder its page calls."""
    page, *rest = word
    if page == "registry":
        return model_registry.model(rest[0]).spec(seed)
    if page == "delete":
        return page_models.mlp_spec(rest[0], seed)
    if page == "reinit":
        return page_models.reinit_spec(rest[0], seed)
    if page == "shuffle":
        return page_models.vit_spec(rest[0], page_words.VIT_BLOCKS, seed)
    if page == "layerdrop":
        return page_models.layerdrop_spec(rest[0], rest[1], seed)
    return page_models.matrix_spec(rest[1], seed, rest[0])


def test_every_registered_entry_builds_the_shape_it_declares():
    assert model_registry.list_models(), "the registry is empty"
    for name in model_registry.list_models():
        e = model_registry.model(name)
        assert e.name == name and model_registry.model(name) is e
        for seed in (0, 3):
            spec = e.spec(seed)
            m = spec.model
            assert isinstance(m, MLPConfig if e.family == "mlp" else ViTConfig), name
            assert (m.blocks if isinstance(m, MLPConfig) else m.depth) == e.blocks, name
            assert m.width == e.width, name
            assert spec.task == e.task and spec.train.seed == seed, name
            assert (m.n_out if isinstance(m, MLPConfig) else m.n_classes) == e.n_classes, name
            assert spec.train.loops == e.loops and len(e.route) == e.runs == e.blocks * e.loops, name
            assert (spec.train.mode == "looped") == (e.loops > 1), name
        assert e.title == f"{e.blocks}-block {e.kind}" and e.size == f"{e.blocks}x{e.width}"


def test_every_registered_entry_gives_the_spec_recorded_before_the_registry():
    assert set(RECORDED) == set(model_registry.list_models())
    for name, digests in RECORDED.items():
        got = tuple(digest(model_registry.model(name).spec(s)) for s in (0, 1))
        assert got == digests, f"{name} would re-key its models"
    for (name, seed), text in RECORDED_JSON.items():
        assert config_json(model_registry.model(name).spec(seed)) == text


def test_every_old_word_names_the_entry_of_the_very_same_spec():
    for word, name in OLD_WORDS.items():
        for seed in (0, 1):
            assert old_spec(word, seed) == model_registry.model(name).spec(seed), word
            assert digest(old_spec(word, seed)) == RECORDED[name][seed], word
    # the pages' shared words keep their labels, blocks, families and tasks
    assert {w: (m.label, m.blocks, m.family, m.task) for w, m in model_registry.MODELS.items()} == {
        "plain": ("plain MLP", 7, "mlp", "synthetic"), "residual": ("residual MLP", 7, "mlp", "synthetic"),
        "layerdrop": ("residual MLP trained with LayerDrop (p = 0.5)", 8, "mlp", "synthetic"),
        "vit-sequential": ("ViT, trained in order", 6, "vit", "digits"),
        "vit-shuffle": ("ViT, trained with LayerShuffle", 6, "vit", "digits"),
        "vit-position": ("ViT, trained with LayerShuffle-position", 6, "vit", "digits"),
        "vit-predict": ("ViT, trained with LayerShuffle-predict", 6, "vit", "digits")}
    assert page_models.MATRIX_RECIPE_LABELS == {"sequential": "sequential", "ln-scale": "LayerNorm scaling",
                                      "layerdrop": "LayerDrop p = 0.5", "shuffle": "LayerShuffle",
                                      "looped": "looped 3 x 2", "early-exit": "early-exit loss"}
    assert page_models.matrix_label("looped", "mlp") == "looped 4 x 2"
    assert page_models.matrix_route("looped") == (0, 1, 2, 0, 1, 2)
    assert page_models.matrix_route("sequential", "mlp") == tuple(range(8))
    assert recipes.VIT_MODE_LABELS == {"sequential": "sequential", "shuffle": "LayerShuffle",
                                 "position": "LayerShuffle-position", "predict": "LayerShuffle-predict"}
    assert [page_models.layerdrop_blocks(m) for m in page_words.LAYERDROP_MODELS] == [8, 8]
    # "residual" is the 7-block MLP on every page that shares the word, the 8-block one where LayerDrop names it
    assert model_registry.model("residual").blocks == 7
    assert model_registry.model(page_words.layerdrop_name("residual", 0.0)).blocks == 8


def test_any_name_of_the_grammar_is_a_model_with_one_spelling():
    assert model_registry.model("mlp5-residual").spec(2) == page_models.mlp_spec("residual", 2, 5)
    assert model_registry.model("vit4.shuffle").spec(1) == page_models.vit_spec("shuffle", 4, 1)
    layerdrop = page_models.layerdrop_spec("residual", 0.37, 0)
    assert model_registry.model("mlp8-residual.layerdrop0.37").spec(0) == layerdrop
    assert page_words.layerdrop_name("vit", 0.2) == "vit8.layerdrop0.2"
    for bad, words in (("cnn", "unknown model"), ("vit6.sequential", "written 'vit6'"),
                       ("mlp8-residual.layerdrop0.50", "written 'mlp8-residual.layerdrop0.5'"),
                       ("vit06", "written 'vit6'"), ("mlp7-residual.position", "does not apply"),
                       ("vit6.layerdrop", "takes a number"), ("vit6.looped1", "at least twice"),
                       ("mlp99-plain", "1 to 63 blocks"), ("vit6.wobble", "unknown recipe")):
        with pytest.raises(ValueError, match=re.escape(words)):
            model_registry.model(bad)
    with pytest.raises(ValueError, match="registered already"):
        model_registry.register_model("vit6")


def test_list_models_filters_like_a_shell_pattern_in_registration_order():
    assert model_registry.list_models("vit6*") == [n for n in model_registry.list_models() if n.startswith("vit6")]
    assert "vit6" in model_registry.list_models("vit6*") and "vit8" not in model_registry.list_models("vit6*")
    assert model_registry.list_models("*layerdrop*") == ["mlp8-residual.layerdrop0.5", "vit8.layerdrop0.5",
                                                         "vit6.layerdrop0.5"]
    assert model_registry.list_models("mlp7-*") == ["mlp7-plain", "mlp7-residual"]
    assert model_registry.list_models("nothing*") == []


# -- the pages' text formats the entry's shape, never restates it ----------------------------------------------------
# A model's shape in words: "7-block", "8x128 MLP", "20-class", "(8 blocks", "MLPs of 7", "4 of 8 blocks", "6 or 7
# blocks", "3 blocks run twice", "6 pre-norm blocks", "6 runs". Settings of a page ("cut to 2 blocks", "Shallow: 3
# blocks", "one block deleted") are not shapes and do not match.
SHAPE = re.compile(r"\b\d+-block\b|\b\d+x\d+ (?:MLP|ViT)\b|\b\d+-class\b|\(\d+ (?:pre-norm |distinct )?blocks\b"
                   r"|\bof \d+ (?:deleted )?blocks\b|\b\d+ (?:or|to) \d+ blocks\b|\bMLPs? of \d+\b|\b\d+ blocks run\b"
                   r"|\b\d+ (?:pre-norm|distinct) blocks\b|\b\d+ runs\b")
TEXT_FILES = ("pages/*.py", "app/figures_*.py", "lab/experiments/*/descriptor.py", "lab/experiments/*/experiment.py")


def restated_shapes(source: str) -> list[str]:
    """The shape phrases written literally in a module's strings (f-strings' literal parts too), docstrings aside."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [f"line {n.lineno}: {m.group()!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
            for m in SHAPE.finditer(n.value)]


def test_the_shape_pattern_finds_restated_shapes_and_passes_settings():
    bad = ('print(f"Deleting blocks of an 8x128 MLP ({n} seeds)")', 'h = "a 6-block ViT on 8x8 digits"',
           'h = "MLPs of 7 blocks on a synthetic 20-class task"', 'h = "the LayerDrop page\'s MLP (8 blocks, p = 0.5)"',
           'h = "p = 0 pruned to 4 of 8 blocks"', 'h = "These networks have 6 or 7 blocks"',
           'h = "looped: 3 blocks run twice (6 runs)"', 'h = "Even 6 of 7 deleted blocks can recover"')
    for src in bad:
        assert restated_shapes(src), src
    good = ('h = f"a {e.title} on {e.data_words}"', 'h = "An ordinary model cut to 2 blocks"',
            'h = "Shallow: 3 blocks"', 'h = "one block deleted keeps"', '"""A 6-block docstring."""')
    for src in good:
        assert not restated_shapes(src), src


def test_no_page_or_descriptor_text_restates_a_models_shape():
    found = {str(p.relative_to(ROOT)): restated_shapes(p.read_text())
             for pattern in TEXT_FILES for p in sorted(ROOT.glob(pattern))}
    assert len(found) > 20
    assert not {f: hits for f, hits in found.items() if hits}, "format the registry entry's shape instead"


def test_the_generated_texts_name_the_models_the_pages_run(capsys):
    from lab.experiments.delete import descriptor as delete_d
    from lab.experiments.delete.experiment import DeleteConfig
    from lab.experiments.matrix import experiment as matrix

    class Stop(Exception):
        pass

    def pool(jobs, progress):  # the table's header is printed before any job runs
        raise Stop

    teacher = DeleteConfig().spec.model
    with pytest.raises(Stop):
        delete_d.table(argparse.Namespace(seeds=1, steps=10), pool)
    assert f"Deleting blocks of a {teacher.blocks}x{teacher.width} MLP" in capsys.readouterr().out  # not "8x128"
    assert f"MLP of {teacher.blocks} blocks" in delete_d.DESCRIPTOR.about
    assert page_models.MATRIX_MODEL_LABELS == {"vit": "ViT (6 blocks, 8x8 digits)",
                                     "mlp": "residual MLP (8 blocks, synthetic 20-class task)"}
    assert "6-block ViT on 8x8 digits" in matrix.MODEL_HELP and "8-block residual MLP" in matrix.MODEL_HELP
