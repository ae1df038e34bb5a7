"""From "cannot tell" to a decision: a page's claims at more seeds, pooled.

A claim that cannot tell carries `settle` (lab/claims.py): about how many seeds would decide it at the effect this
run saw. `SeedClaims` is one engine job, the claims of a page setting at one seed (`Descriptor.claims`, which
computes and stores whatever they rest on); `pooled` joins the claims of several seeds into one verdict per claim
with the seeds' spread as its error (`claims.pool`). The page (app/claims_view.py) runs one job per seed, so a
cluster spreads them over its workers, and the CLI's `python -m lab seeds NAME --seeds 0 1 2` does the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from lab import claims as lab_claims
from lab.catalog import descriptors, presets
from lab.claims import Claim
from lab.estimates import MAX_SETTLE_SEEDS
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
    settings = {**dict(cfg.settings), "seed": cfg.seed}
    needs = presets.always(d.plan(settings))  # the page's own calls at this seed
    # What the claims rest on, one stored result after another with its own progress; the claims then read them.
    for i, need in enumerate(needs):
        need.fn(need.cfg, progress=span(progress, i / (len(needs) + 1), (i + 1) / (len(needs) + 1)))
    progress(len(needs) / (len(needs) + 1), f"seed {cfg.seed}: the claims")
    out = d.claims(settings)
    progress(1.0, f"seed {cfg.seed} done")
    return out


def extra_seeds(claims: Sequence[Mapping[str, Any]], seed: int) -> Optional[tuple[int, ...]]:
    """The seeds that would settle this view's undecided claims, beside `seed` (the current one): the largest
    `settle.seeds` among them, capped at MAX_SETTLE_SEEDS; None when no more seeds can settle any of them."""
    wanted = [c["settle"]["seeds"] for c in claims
              if c["holds"] is None and c.get("settle") and c["settle"].get("seeds")]
    if not wanted:
        return None
    total = min(max(wanted), MAX_SETTLE_SEEDS)
    return seeds_around(seed, total)


def seeds_around(seed: int, total: int, seed_max: int = 99) -> tuple[int, ...]:
    """`total` seeds including `seed`: the current one, then the next ones (wrapping within 0..seed_max)."""
    if not 1 <= total <= seed_max + 1:
        raise ValueError(f"choose between 1 and {seed_max + 1} seeds, not {total}")
    return tuple((seed + i) % (seed_max + 1) for i in range(total))


def pooled(per_seed: Sequence[Sequence[Mapping[str, Any]]], seeds: Sequence[int]) -> dict[str, Any]:
    """One verdict per claim over the seeds, and each seed's own verdicts (for the spread shown beside)."""
    verdicts = {}
    for s, cs in zip(seeds, per_seed, strict=True):
        for c in cs:
            verdicts.setdefault(f"{c['key']}|{c.get('subject', '')}", {})[s] = c["holds"]
    return {"seeds": list(seeds), "claims": lab_claims.pool(per_seed, seeds), "per_seed": verdicts}
