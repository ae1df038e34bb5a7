"""From "cannot tell" to a decision: a page's claims at more seeds, pooled.

A claim that cannot tell carries `settle` (lab/claims.py): about how many seeds would decide it at the effect this
run saw. `SeedClaims` is one engine job, the claims of a page setting at one seed (`Descriptor.claims`, which
computes and stores whatever they rest on); `pooled` joins the claims of several seeds into one verdict per claim
with the seeds' spread as its error (`claims.pool`). The page (app/claims_view.py) runs one job per seed, so a
cluster spreads them over its workers, and the CLI's `python -m lab seeds NAME --seeds 0 1 2` does the same.

A claim about a recipe or an architecture (`over: "seeds"`) cannot tell at one seed ("one trained network"). Where a
setting's models are quick to train (MLPs), its view pools those claims over MIN_SEEDS seeds without a click:
`default_seeds` is the one place that decides it (a descriptor may say otherwise: `Descriptor.seeds_by_default`).
Warming (lab/classroom/warm.py) computes `course_seeds` for every default view, a ViT's too, and a view whose seeds
are all stored pools them without a click as well (app/claims_view.py): a warmed course judges every recipe over
training seeds from the first look.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from lab import claims as lab_claims
from lab.catalog import descriptors, presets
from lab.claims import MIN_SEEDS, Claim
from lab.estimates import MAX_SETTLE_SEEDS
from lab.runtime import settings as lab_settings
from lab.runtime.progress import Progress, silent, span


@dataclass(frozen=True)
class SeedClaims:
    """The claims of page `page` at `settings` (a sorted tuple of control values), with the seed set to `seed`."""

    page: str
    settings: tuple[tuple[str, Any], ...]
    seed: int

    @classmethod
    def of(cls, page: str, settings: dict[str, Any], seed: int) -> "SeedClaims":
        return cls(page, tuple(sorted((k, v) for k, v in settings.items() if k != "seed")), int(seed))


def claims_at(cfg: SeedClaims, progress: Progress = silent) -> list[Claim]:
    """The page's claims at one seed (what `Descriptor.claims` returns), computing what is not stored."""
    d = descriptors().get(cfg.page)
    if d is None or d.claims is None:
        raise ValueError(f"page {cfg.page!r} has no claims to compute at other seeds")
    needs = seed_needs(cfg.page, dict(cfg.settings), cfg.seed)
    # What the claims rest on, one stored result after another with its own progress; the claims then read them.
    for i, need in enumerate(needs):
        need.fn(need.cfg, progress=span(progress, i / (len(needs) + 1), (i + 1) / (len(needs) + 1)))
    progress(len(needs) / (len(needs) + 1), f"seed {cfg.seed}: the claims")
    out = d.claims({**dict(cfg.settings), "seed": cfg.seed})
    progress(1.0, f"seed {cfg.seed} done")
    return out


def seed_needs(page: str, settings: Mapping[str, Any], seed: int) -> list[presets.Need]:
    """The calls the page's claims at `seed` rest on: its plan at that seed, the calls it always makes that its
    claims read (`Need.for_claims`: a view's embedding is not computed at seeds nobody looks at); what `claims_at`
    computes one after another, and what a page may start beside its own (app/jobs.py `head_start`)."""
    d = descriptors()[page]
    return [n for n in presets.always(d.plan({**dict(settings), "seed": int(seed)})) if n.for_claims]


def extra_seeds(claims: Sequence[Mapping[str, Any]], seed: int) -> Optional[tuple[int, ...]]:
    """The seeds that would settle this view's undecided claims, beside `seed` (the current one): the largest
    `settle.seeds` among them (settle never offers fewer than MIN_SEEDS in all: the pool's t-scaled spread needs
    them), capped at MAX_SETTLE_SEEDS; None when no more seeds can settle any of them."""
    wanted = [c["settle"]["seeds"] for c in claims
              if c["holds"] is None and c.get("settle") and c["settle"].get("seeds")]
    if not wanted:
        return None
    total = min(max(MIN_SEEDS, *wanted), MAX_SETTLE_SEEDS)
    return seeds_around(seed, total)


def needs_seeds(c: Mapping[str, Any]) -> bool:
    """A claim about a recipe that rests on fewer than MIN_SEEDS training seeds (it cannot tell until they run)."""
    return c.get("over", "inputs") == "seeds" and len(c.get("seeds") or []) < MIN_SEEDS


def _model_words(cfg: Any) -> list[Any]:
    """The models a config names: its `model` and `arch` fields, and those of the configs inside it; a config of a
    model that names none (the Shuffle page's ViT: `mode` and `depth`) gives None, an unknown model."""
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        return []
    names = {f.name for f in dataclasses.fields(cfg)}
    out: list[Any] = [getattr(cfg, n) for n in ("model", "arch") if n in names]
    if not out and {"mode", "depth"} <= names:
        out.append(None)
    for f in dataclasses.fields(cfg):
        out += _model_words(getattr(cfg, f.name))
    return out


def _is_mlp(word: Any) -> bool:
    if not isinstance(word, str) or "vit" in word:
        return False
    if word in ("plain", "residual", "mlp") or word.startswith("mlp"):
        return True
    from lab.core import model_registry

    try:
        return model_registry.model(word).family == "mlp"
    except (ValueError, KeyError):
        return False


def quick_models(settings_plan: Sequence[Any]) -> bool:
    """Whether every call of a plan (its `Need`s) trains only MLPs (seconds each): a ViT, or a model this cannot
    name, is not quick."""
    words = [w for need in settings_plan for w in _model_words(need.cfg)]
    return bool(words) and all(_is_mlp(w) for w in words)


def course_seeds(page: str, settings: Mapping[str, Any]) -> tuple[int, ...]:
    """The training seeds a view of `page` at `settings` judges its recipe claims over once they are stored: the
    seed and the next ones, LAYERLAB_RECIPE_SEEDS in all (3 unless set), wherever the page has claims and a seed,
    a ViT's view included; () where the setting asks for fewer than MIN_SEEDS. Warming a course computes them for
    every default view (lab/classroom/warm.py), and a view pools them without a click where they are stored
    (app/claims_view.py) or quick to train (`default_seeds`)."""
    d = descriptors().get(page)
    if d is None or d.claims is None or "seed" not in settings:
        return ()
    n = int(lab_settings.get("LAYERLAB_RECIPE_SEEDS"))
    return seeds_around(int(settings["seed"]), n) if n >= MIN_SEEDS else ()


def default_seeds(page: str, settings: Mapping[str, Any]) -> tuple[int, ...]:
    """The training seeds a view of `page` at `settings` pools its recipe claims over without a click: the seed
    and the next ones, LAYERLAB_RECIPE_SEEDS in all (3 unless set), where its models are quick to train
    (`Descriptor.seeds_by_default`, else `quick_models` of its plan); () where they are not (a ViT: the view offers
    the seeds instead), the setting asks for fewer than MIN_SEEDS, or the page has no claims or no seed."""
    seeds = course_seeds(page, settings)
    if not seeds:
        return ()
    d = descriptors()[page]
    rule = d.seeds_by_default
    try:
        cheap = rule(dict(settings)) if rule is not None else quick_models(presets.always(d.plan(dict(settings))))
    except ValueError:  # a setting its plan refuses: nothing to pool
        return ()
    return seeds if cheap else ()


def seeds_around(seed: int, total: int, seed_max: int = 99) -> tuple[int, ...]:
    """`total` seeds including `seed`: the current one, then the next ones (wrapping within 0..seed_max)."""
    if not 1 <= total <= seed_max + 1:
        raise ValueError(f"choose between 1 and {seed_max + 1} seeds, not {total}")
    return tuple((seed + i) % (seed_max + 1) for i in range(total))


def pooled(per_seed: Sequence[Sequence[Mapping[str, Any]]], seeds: Sequence[int]) -> dict[str, Any]:
    """One verdict per claim over the seeds (each `over: "seeds"` with its seeds listed; a claim whose tests differ
    between seeds says it cannot be pooled, and why), and each seed's own verdicts (for the spread shown beside):
    `per_seed` {claim: {seed: holds}}, `per_seed_words` the same in words ("cannot tell (one trained network)")."""
    verdicts: dict[str, dict[int, Optional[bool]]] = {}
    words: dict[str, dict[int, str]] = {}
    for s, cs in zip(seeds, per_seed, strict=True):
        for c in cs:
            ident = f"{c['key']}|{c.get('subject') or ''}"
            verdicts.setdefault(ident, {})[s] = c["holds"]
            words.setdefault(ident, {})[s] = lab_claims.verdict_words(c)
    return {"seeds": list(seeds), "claims": lab_claims.pool(per_seed, seeds), "per_seed": verdicts,
            "per_seed_words": words}


def ident(c: Mapping[str, Any]) -> str:
    """How `pooled` names a claim: its key and subject."""
    return f"{c['key']}|{c.get('subject') or ''}"


def as_shown(page: str, settings: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The claims as a view of `page` at `settings` shows them once its default seeds are in: each recipe claim
    (`needs_seeds`) replaced by its pool over `default_seeds` (computing what is not stored), the others as they
    are. What a page test compares the rendered verdicts with (app/claims_view.show draws the same)."""
    seeds = default_seeds(page, settings)
    if not seeds or not any(needs_seeds(c) for c in claims):
        return list(claims)
    per_seed = [claims_at(SeedClaims.of(page, dict(settings), s)) for s in seeds]
    over = {ident(c): c for c in lab_claims.pool(per_seed, seeds)}
    return [over.get(ident(c), c) if needs_seeds(c) else c for c in claims]
