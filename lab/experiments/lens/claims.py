"""Layer lens: the papers' claims, pure functions of a lens profile's `checks` (experiment.py measures them): block
influence and angular distance against the cost of deleting (rank agreement), and the tuned lens against the logit
lens (KL to the final prediction). Computed when a profile is read (`profile_claims`), never stored in it."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

from lab import claims as C
from lab import estimates as E
from lab.claims import Claim, Z, reads
from lab.core import model_registry
from lab.core.page_models import ModelSeed
from lab.core.task_facts import config_task, task_words
from lab.experiment import Pool, serial
from lab.experiments.lens.experiment import BOOTSTRAP, MODELS, LensProfile, profile
from lab.runtime.progress import silent

RHO_BAR = 0.5  # "predicts": Spearman's rho at least this
P_BAR = 0.05  # and a random ranking of the blocks does as well at most this often


PLACEHOLDER = "Spearman rho"  # the test's one name, with a measurement or as the placeholder: see `_rank_claim`


def _rank_claim(key: str, statement: str, source: str, chk: dict[str, Any], what: str, items: str,
                subject: Optional[str]) -> Claim:
    """The rank claim as one test named PLACEHOLDER at every seed: rho against RHO_BAR with its bootstrap error, or,
    where nothing can be decided at this seed, an exact 0 against 0 (a placeholder: it cannot tell). Nothing can be
    decided where one side has no spread (rho undefined) or where rho passes its bar but a random ranking of so few
    items reaches it more often than P_BAR (the exact permutation p). The name does not change, so `claims.pool`
    sees the placeholder's shape and refuses to pool it with seeds that measured rho, rather than averaging a
    placeholder's 0 with a rho."""
    rho, se, p, n = chk["rho"], chk["se"], chk["p"], chk["n"]
    placeholder = None
    if math.isnan(rho) or math.isnan(se):
        placeholder = "no ranking: every item ties"
        why = "one side has no spread (every item ties), so no ranking can be compared"
    else:
        est = E.Estimate(rho, se, "bootstrap", n, f"bootstrap over the held-out inputs ({BOOTSTRAP} draws)")
        why = (f"ρ = {rho:.2f} ± {se:.2f} (bootstrap over the held-out inputs); a random ordering of the {n} {items} "
               f"reaches ρ with exact permutation p = {p:.3f}")
        test = C.test(PLACEHOLDER, est, ">=", RHO_BAR, unit="")
        if test["holds"] is True and p > P_BAR:
            # the inputs' noise would pass it, but so would a random ranking of this few items: undecided
            placeholder = f"permutation p = {p:.3f} > {P_BAR}: a random ranking of the items does as well"
            why += f": with {n} {items}, a random ranking does this well too often to decide"
    if placeholder is not None:
        test = C.test(PLACEHOLDER, E.exact(0.0, placeholder), ">=", 0.0, unit="")
    rule = (f"Spearman ρ between {what} at least {RHO_BAR} by more than {Z:g} bootstrap standard errors (over the "
            f"held-out inputs), and a random ordering of the {items} reaches ρ at most {P_BAR:.0%} of the time "
            f"(exact permutation test; more often: cannot tell, the test is then an exact 0 against 0); below "
            f"{RHO_BAR} by {Z:g} standard errors: does not hold; otherwise cannot tell")
    return C.claim(key, statement, source, {"rho": rho, "p": p, "n": n}, rule, [test], f"Over {n} {items}: {why}.",
                   subject, over="inputs")


def here(task: Optional[str]) -> str:
    """How a source opens this lab's setting: "Here:" on the model's own task (None; as it always read), else with the
    task the profile ran on ("Here, on MNIST-1D (3,500 train):")."""
    return "Here:" if task is None else f"Here, on {task_words(task)}:"


@reads(LensProfile)
def profile_claims(prof: LensProfile) -> list[Claim]:
    """The claims of a lens profile (or of a run, which carries its model's profile), computed when it is read."""
    return claims({f.name: getattr(prof, f.name) for f in dataclasses.fields(prof)})


def table_claims(t: dict[str, Any], pool: Pool = serial) -> list[Claim]:
    """Every claim of `experiment.table`'s answer, per model and seed (each marked with its seed), from the table's
    profiles (read from the store by `pool`, as the table computed them)."""
    jobs = [(mo, s) for mo in MODELS for s in t["seeds"]]
    profs = pool([(profile, ModelSeed(mo, s)) for mo, s in jobs], silent)
    return [dataclasses.replace(c, seed=s) for (_, s), p in zip(jobs, profs, strict=True) for c in profile_claims(p)]


def claims(prof: dict[str, Any]) -> list[Claim]:
    """The papers' claims on one profile (synthetic `checks` in the tests)."""
    models = model_registry.MODELS
    who = models[prof["model"]].label if prof.get("model") in models else prof.get("model")
    at = here(config_task(prof.get("config")))
    chk = prof["checks"]
    out = [
        _rank_claim("influence", "blocks that change their input least cost least to delete",
                    f"Men et al. 2024 (ShortGPT), Block Influence on LLMs, Sec. 3. {at} the lab's small models, "
                    "influence 1 − cos(input, output) per token averaged over tokens and held-out inputs, cost = "
                    "held-out accuracy lost when that one block is skipped, no retraining", chk["influence"],
                    "a block's influence and the accuracy lost by deleting it", "blocks", who),
        _rank_claim("angular", "the run of n blocks whose input and output are closest in angle costs least to "
                    "delete", "Gromov et al. 2024, The Unreasonable Ineffectiveness of the Deeper Layers, angular "
                    f"distance at the last token of LLMs, then healed. {at} n = 2 neighbours, the distance averaged "
                    "over every token (ViT) or the whole vector (MLP), no healing", chk["angular"],
                    "the angular distance across two neighbouring blocks and the accuracy lost by deleting both",
                    "pairs of neighbours", who),
    ]
    gain, se = chk["tuned"]["gain"], chk["tuned"]["se"]
    n_test = int(prof.get("n_test", 0))
    tests = [C.test(f"slot {i}", E.Estimate(g, s, "paired", n_test, "paired over the held-out inputs"), ">=", 0.0,
                     unit="nats") for i, (g, s) in enumerate(zip(gain, se, strict=True))]
    if not tests:
        tests = [C.test("no slot before the last", E.exact(0.0, "nothing to compare"), ">=", 0.0)]
    worst = min(range(len(gain)), key=lambda i: gain[i] / max(se[i], 1e-12)) if gain else 0
    out.append(C.claim(
        "tuned", "a tuned lens is closer to the final prediction than the logit lens at every layer",
        "Belrose et al. 2023, Eliciting Latent Predictions with the Tuned Lens (affine translators trained on the "
        f"KL to the final output, LLMs). {at} a closed-form least-squares map of what the head reads at each slot "
        "onto the final state, fitted on the training split",
        {"kl_gain": gain, "slots": len(gain)},
        f"at every slot before the last, the mean KL to the final prediction drops through the tuned lens by more "
        f"than {Z:g} standard errors (paired over the held-out inputs); a slot where it rises by that much: does "
        "not hold; otherwise cannot tell", tests,
        f"KL gain (logit lens minus tuned lens, nats) per slot: {', '.join(f'{g:+.3f}' for g in gain)}; the "
        f"weakest is slot {worst} ({gain[worst]:+.3f} ± {se[worst]:.3f})." if gain else "No slot before the last.",
        who, over="inputs"))
    return out
