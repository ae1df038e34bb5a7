"""The one renderer of claims ("Against the paper" on every page): the verdict comes from the claim, never the page.
A claim is a `lab.claims.Claim` (or its plain dict), computed when its result is read.

Each claim is drawn as one markdown block whose first line is `<icon> **<verdict>** · <statement>`, so an AppTest
can read the rendered verdicts back (`rendered_verdicts`) and compare them with the result's claims. The verdict is
said as `verdict_words` says it ("cannot tell (one trained network)" for a recipe at one seed), and the block names
what it generalises over (`over_words`: "for these trained networks", "over training seeds 0, 1, 2").

Where a setting's models are quick to train (lab/classroom/seeds.default_seeds), the view's recipe claims are pooled
over MIN_SEEDS seeds without a click (one engine job per seed, a progress bar while they compute); where every one of
those seeds is stored already (a warmed course, a ViT's view too) they are pooled from the store without starting
anything; elsewhere the view offers the seeds that would settle its undecided claims ("Run N more seeds"). A claim
pooled over seeds shows each seed's own value beside the pooled one, a dot each on the rule's side or the other
(app/seed_dots.py), with the sign-flip p over the seeds: shown, not deciding.
"""

from __future__ import annotations

import html
import re
from typing import Any, Mapping, Sequence

import streamlit as st

from app import charts, jobs, stored_results
from app import seed_dots as dots
from lab.claims import MIN_SEEDS, over_words, verdict_words
from lab.classroom import seeds as lab_seeds

ICONS = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}
COLOURS = {True: "blue", False: "orange", None: "gray"}  # no red/green pair: readable without colour vision
# The verdict words, with the reason a claim cannot tell whatever its tests say ("cannot tell (one trained
# network)", "cannot tell (cannot be pooled: ...)"), escaped as `_md` escapes them.
_LINE = re.compile(r"\[\*\*((?:holds|does not hold|cannot tell)(?: \((?:[^\n*]|\\\*)+?\))?)\*\*\] · ([^\n]+?)  $",
                   re.M)


def _md(text: str) -> str:
    """Plain text for markdown: escape what Streamlit would interpret ($ for LaTeX, *, _, `, HTML)."""
    text = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_$\[\]])", r"\\\1", text)


def block(c: Mapping[str, Any]) -> str:
    """The markdown of one claim: verdict and statement, subject and what the verdict generalises over, then the
    numbers and the rule."""
    verdict = _md(verdict_words(c))
    recipe = c.get("over", "inputs") == "seeds"
    subject = f"**{_md(c['subject'])}**: " if c.get("subject") else ""
    head = f"{ICONS[c['holds']]} :{COLOURS[c['holds']]}[**{verdict}**] · {_md(c['claim'])}"
    # a pooled claim's detail opens with its seeds ("Over seeds 0, 1, 2: ..."), which `over_words` says: once
    detail = re.sub(r"^Over seeds [\d, ]+: ", "", str(c["detail"]))
    over = f":gray[{_md(over_words(c).capitalize())}.] "
    return (f"{head}  \n{subject}{over}{_md(detail)}  \n"
            f":gray[Rule: {_md(c['rule'])} · Error: {_md(error_words(c))} · Source: {_md(c['source'])}]"
            + (f"  \n:gray[To decide: {_md(settle_words(c['settle'], inputs=not c.get('why'), recipe=recipe))}]"
               if c.get("settle") else ""))


def error_words(c: Mapping[str, Any]) -> str:
    """How the deciding error was obtained, from the claim's tests (e.g. 'paired over 4,000 inputs, 212 discordant
    (McNemar), 0.3 pts')."""
    tests = c.get("tests") or []
    if not tests:
        m = c["measured"]
        return f"{m.get('se_kind', 'unknown')}, {100 * float(m.get('se', float('nan'))):.2f} pts"
    return "; ".join(f"{t['how'] or t['se_kind']} ({t['se_kind']}, se "
                     + (f"{100 * t['se']:.2f} pts)" if t.get("unit", "pts") == "pts" else f"{t['se']:.3f} {t['unit']})")
                     for t in tests)


def settle_words(s: dict[str, Any], inputs: bool = True, recipe: bool = True) -> str:
    """What would decide an undecided claim at the effect seen (at one seed, the between-seed spread is unknown).
    `inputs=False` for a claim that cannot tell whatever its tests say (a recipe at one trained network): more
    held-out inputs would not decide it, only seeds. `recipe=False` for a claim about these trained networks: the
    spread between seeds is not part of its error, so it is not named."""
    parts = []
    if s.get("seeds"):
        parts.append(f"about {s['seeds']} seeds in all (this verdict rests on {s.get('seeds_now', 1)})")
    if s.get("inputs") and inputs:
        parts.append(f"about {s['inputs']:,} held-out inputs")
    if not parts:
        return "no number of seeds or inputs within reach: the effect seen is at the rule's threshold"
    out = " or ".join(parts) + ", if the effect is what this run saw"
    if s.get("spread") == "unknown" and recipe:
        out += (f"; the between-seed spread is unknown at one seed; {MIN_SEEDS} seeds are the fewest that can "
                "estimate it")
    return out


def show(claims: Sequence[Mapping[str, Any]], intro: str = "", page: Any = None) -> None:
    """Draw claims, one bordered block each, in the order given. With the page (app/classroom.Page): where its
    models are quick to train, its recipe claims pooled over the default seeds (`_default_pool`), and a view whose
    claims still cannot tell offers the seeds that would settle them (`more_seeds`)."""
    if intro:
        st.markdown(intro)
    if not claims:
        st.info("This setting tests none of the papers' claims.")
        return
    over = _default_pool(claims, page) if page is not None else {}
    shown = []
    for c in claims:
        got = over.get(lab_seeds.ident(c)) if lab_seeds.needs_seeds(c) else None
        pooled, each = got if got is not None else (c, None)
        shown.append(pooled)
        with st.container(border=True):
            st.markdown(block(pooled) + (_each_words(each) if each else ""))
            if each:
                seed_dots(pooled, "default")
    if page is not None:
        more_seeds(shown, page)


def _each_words(each: Mapping[int, str]) -> str:
    return "  \n:gray[Each seed alone: " + _md(", ".join(f"{s}: {v}" for s, v in each.items())) + "]"


def seed_dots(c: Mapping[str, Any], where: str) -> None:
    """Each seed's own value beside the pooled one (app/seed_dots.py), with the sign-flip line; nothing for a claim
    whose tests list no seeds. `where` keeps the chart keys of the two pooled views apart."""
    fig = dots.figure(c)
    if fig is None:
        return
    st.caption(_md(dots.flip_words(c)))
    charts.show(fig, key=f"seed_dots_{where}_{lab_seeds.ident(c)}", what=dots.WHAT)


def _default_pool(claims: Sequence[Mapping[str, Any]], page: Any) -> dict[str, tuple[Mapping[str, Any], Any]]:
    """{claim: (pooled claim, each seed's own verdict words)} for the view's recipe claims, pooled over the seeds
    `default_seeds` gives (quick models: no click); {} where it gives none, or while the seeds compute (their
    progress bars are drawn here, and the claims at this seed below say "cannot tell (one trained network)")."""
    if getattr(page, "student", False) or not any(lab_seeds.needs_seeds(c) for c in claims):
        return {}
    settings = page.settings()
    seeds = lab_seeds.default_seeds(page.name, settings)
    if not seeds:
        return _stored_pool(page.name, settings)
    pending = jobs.Pending()
    per_seed = [pending.get(f"Recipe claims at seed {s}", lab_seeds.claims_at,
                            lab_seeds.SeedClaims.of(page.name, settings, s)) for s in seeds]
    done = [r for r in per_seed if r is not None]
    if len(done) < len(seeds):
        st.markdown(f"**Training seeds {', '.join(map(str, seeds))}** for the claims about recipes (a recipe is "
                    f"judged over at least {MIN_SEEDS} separately trained networks): {len(done)} of {len(seeds)} "
                    "computed.")
        pending.show()
        return {}
    return _by_claim(per_seed, seeds)


def _stored_pool(name: str, settings: dict[str, Any]) -> dict[str, tuple[Mapping[str, Any], Any]]:
    """The same pool over `course_seeds` where every seed's claims are stored already (a warmed course: its ViT
    views are judged over training seeds from the first look); nothing is started, and {} where a seed is missing
    (the view then offers the seeds)."""
    seeds = lab_seeds.course_seeds(name, settings)
    own = settings.get("seed")
    got: dict[int, Any] = {}
    # the other seeds first: in a course that was not warmed the first of them is missing, found by a file check,
    # before the view's own seed's claims are read (a fraction of a second the first time)
    for s in sorted(seeds, key=lambda s: s == own):
        got[s] = stored_results.stored(f"Recipe claims at seed {s}", lab_seeds.claims_at,
                             lab_seeds.SeedClaims.of(name, settings, s))
        if got[s] is None:
            return {}
    return _by_claim([got[s] for s in seeds], seeds) if seeds else {}


def _by_claim(per_seed: Sequence[Any], seeds: Sequence[int]) -> dict[str, tuple[Mapping[str, Any], Any]]:
    out = lab_seeds.pooled(per_seed, seeds)
    return {lab_seeds.ident(c): (c, out["per_seed_words"].get(lab_seeds.ident(c), {})) for c in out["claims"]}


SEEDS_KEY = "_layerlab_more_seeds"  # session_state: {(page, settings): seeds asked for}


def more_seeds(claims: Sequence[Mapping[str, Any]], page: Any) -> None:
    """"Cannot tell" to a decision: offer the seeds that would settle this view's undecided claims (at least
    MIN_SEEDS in all), run them on the engine (one job per seed, stored like any result), and show each claim's
    verdict over the seeds, or why it cannot be pooled."""
    from lab.catalog import descriptors

    d = descriptors().get(page.name)
    if d is None or d.claims is None or getattr(page, "student", False):
        return
    settings = page.settings()
    seed = int(settings.get("seed", 0))
    ident = (page.name, tuple(sorted((k, repr(v)) for k, v in settings.items())))
    asked = st.session_state.setdefault(SEEDS_KEY, {}).get(ident)
    offer = lab_seeds.extra_seeds(claims, seed)
    if asked is None and offer is None:
        return
    with st.container(border=True, key=f"layerlab_seeds_{page.name}"):
        if asked is None:
            undecided = sum(1 for c in claims if c["holds"] is None)
            recipes = sum(1 for c in claims if lab_seeds.needs_seeds(c))
            where = ("at this seed" if not any(len(c.get("seeds") or []) > 1 for c in claims if c["holds"] is None)
                     else "over the seeds run so far")
            st.markdown(f"**{undecided} claim{'s' if undecided > 1 else ''} cannot tell {where}**"
                        + (f" ({recipes} about a recipe, judged over separately trained networks: one network "
                           "cannot tell)" if recipes else "") + f". At the effects this run saw, about {len(offer)} "
                        f"seeds in all would decide {'them' if undecided > 1 else 'it'}: each seed trains this view "
                        "again from its own random draws, and the verdict is then judged on the mean over seeds "
                        f"with their spread as the error ({MIN_SEEDS} seeds are the fewest that can estimate it).")
            # at least MIN_SEEDS in all: fewer cannot estimate the between-seed spread a recipe is judged against
            n = st.number_input("Seeds in all", MIN_SEEDS, lab_seeds.MAX_SETTLE_SEEDS, max(len(offer), MIN_SEEDS),
                                key=f"seeds_n_{page.name}",
                                help="The current seed and the next ones. Each seed costs about as much as this view "
                                "did when it was first computed; stored seeds cost nothing.")
            if st.button(f"Run {n - 1} more seed{'s' if n > 2 else ''}", key=f"seeds_go_{page.name}", type="primary"):
                st.session_state[SEEDS_KEY][ident] = lab_seeds.seeds_around(seed, int(n))
                st.rerun()
            return
        # Extra seeds are extra work: a lecturer presenting gets them at the presets' priority, anyone else as a
        # custom setting (bounded per visitor by admission control, app/jobs.py).
        _pooled_view(page.name, settings, asked, standard=bool(getattr(page, "present", False)))


def _pooled_view(name: str, settings: dict[str, Any], seeds: Sequence[int], standard: bool) -> None:
    pending = jobs.Pending()
    per_seed = [pending.get(f"Claims at seed {s}", lab_seeds.claims_at, lab_seeds.SeedClaims.of(name, settings, s),
                            standard=standard) for s in seeds]
    done = [r for r in per_seed if r is not None]
    st.markdown(f"**Over seeds {', '.join(map(str, seeds))}** ({len(done)} of {len(seeds)} computed)")
    if len(done) < len(seeds):
        pending.show()
        return
    out = lab_seeds.pooled(per_seed, seeds)
    unpooled = [c for c in out["claims"] if str(c.get("why") or "").startswith("cannot be pooled")]
    if unpooled:
        st.markdown(f"{len(unpooled)} claim{'s' if len(unpooled) > 1 else ''} cannot be pooled (tests that differ "
                    "between seeds are not averaged); each says why, with each seed's own verdict beside.")
    for c in out["claims"]:
        with st.container(border=True):
            st.markdown(block(c) + _each_words(out["per_seed_words"].get(lab_seeds.ident(c), {})))
            seed_dots(c, "asked")


def pending() -> None:
    """What the section says while the numbers a claim needs are still computing."""
    st.info("The verdicts appear here when the numbers they rest on are computed (see the progress bars above).")


def rendered_verdicts(markdown_texts: Sequence[str]) -> list[tuple[str, str]]:
    """(verdict word, statement as rendered) pairs read back from markdown (for tests: the page equals its claims)."""
    out = []
    for t in markdown_texts:
        for m in _LINE.finditer(t):
            out.append((m.group(1), m.group(2)))
    return out


def expected_verdicts(claims: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The pairs `rendered_verdicts` must read back for these claims."""
    return [(_md(verdict_words(c)), _md(c["claim"])) for c in claims]
