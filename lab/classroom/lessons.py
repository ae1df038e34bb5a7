"""Lessons: ordered steps a lecturer paces the room through (app/lesson.py draws them; no Streamlit here).

A step is a page, a complete setting of it and one of that page's workshop questions (lab/experiments/NAME/
questions.py), with a one-line aim. The setting is a preset's key ("" for the page's default view) or a pinned
link's setting (the text of a `pin=` value, `arch.plain_k.1`: the controls that differ from their defaults), and the
question must be the one the page asks at that setting (`questions.question_for`), so what the room predicts is
what the page shows. The lab ships `LESSONS`; a lecturer builds one from `menu()` or imports a lesson file
(`from_json`, validated: every problem is named, with the step it is in). A lesson started with a class is stored
with it (lab/classroom/class_tables.py: `class_lessons`, the JSON of `to_json`).

`outcome` keeps what a run said about a step's question (the claim's verdict, its numbers and the error of its
tests); `report_rows`, `report_csv` and `report_html` make the lesson's report from the class's tallies and those
outcomes: self-contained files, with nothing of the class's key in them (they are made from counts and claims).
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from lab.catalog import descriptors
from lab.classroom import questions as lab_questions
from lab.classroom import where as where_questions

FORMAT = 1  # the "layerlab_lesson" mark of a lesson file: files of another format are refused, not guessed at
MAX_BYTES = 32_000  # a lesson file is small: 30 steps of a few hundred characters
MAX_STEPS = 30
TITLE_CHARS = 100
AIM_CHARS = 200
MINUTES_PER_STEP = 6  # a step: read the question, vote, reveal, discuss (the shipped lessons' pace)
MAX_DEPTH = 8  # a lesson file nests 3 deep (the lesson, its steps, a step); json's parser recurses once per level
MAX_NUMBER_CHARS = 20  # Python refuses to read a whole number of more than 4,300 digits (a ValueError of its own)
KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
PIN_PAIR = re.compile(r"([a-z][a-z0-9]*)\.(.+)")


class LessonError(ValueError):
    """A lesson (or lesson file) that cannot be used; the message names every problem, for the lecturer."""


@dataclass(frozen=True)
class Step:
    """One step: a page, its setting (a preset's key, "" for the default view, or a pinned setting such as
    `arch.plain_k.1`), the question the room predicts there (its key) and the step's aim in one line."""

    page: str
    setting: str
    question: str
    aim: str

    @property
    def settings(self) -> dict[str, Any]:
        """Every control's value at this step (a LessonError when the setting is not one of the page's)."""
        return settings_of(self.page, self.setting)

    @property
    def asked(self) -> lab_questions.Question:
        """The step's question (a LessonError when the page has no such question)."""
        found = {q.key: q for q in where_questions.asked(self.page)}
        if self.question not in found:
            raise LessonError(f"page {self.page!r} has no question {self.question!r}; its questions: "
                              f"{', '.join(found) or 'none'}")
        return found[self.question]


@dataclass(frozen=True)
class Lesson:
    """An ordered list of steps with a title and its length in minutes; `key` names it (the warm's --lesson)."""

    key: str
    title: str
    minutes: int
    steps: tuple[Step, ...]


def settings_of(page: str, setting: str) -> dict[str, Any]:
    """The complete setting a step names: its preset's, the page's defaults (""), or a pinned setting's
    (`key.value` pairs joined by "_", each value read by its control's rules; the rest at their defaults)."""
    d = descriptors().get(page)
    if d is None:
        raise LessonError(f"{page!r} is not a page of this lab; its pages: {', '.join(descriptors())}")
    if setting == "":
        return dict(d.defaults)
    by_key = {p.key: p for p in d.presets}
    if setting in by_key:
        return by_key[setting].settings
    if "." not in setting:
        raise LessonError(f"{page}: no preset {setting!r}; its presets: {', '.join(by_key)} (or \"\" for the "
                          f"default view, or a pinned setting such as k.1_arch.plain)")
    ctrls = {c.name: c for c in d.controls}
    out = dict(d.defaults)
    for pair in setting.split("_"):
        m = PIN_PAIR.fullmatch(pair)
        if m is None or m.group(1) not in ctrls:
            raise LessonError(f"{page}: {pair[:40]!r} in the pinned setting is not control.value of one of its "
                              f"controls ({', '.join(ctrls)})")
        name, text = m.groups()
        out[name] = _value(ctrls[name], text, page)
    return out


def _value(ctrl: Any, text: str, page: str) -> Any:
    """A control's value from its link text, by the rules app/controls.py's link_parser applies on a page (lab/
    cannot import app/): a multi-select's options comma-separated ("none" for none), one of a menu's options, or a
    whole number in range."""
    choices = tuple(ctrl.choices or ())
    bad = LessonError(f"{page}: {ctrl.name}={text[:40]!r} is not a value of that control")
    if isinstance(ctrl.default, tuple):
        picked = [] if text == "none" else text.split(",")
        if any(p not in [str(c) for c in choices] for p in picked) or len(set(picked)) != len(picked):
            raise bad
        return tuple(c for c in choices if str(c) in picked)
    if choices:
        for c in choices:
            if str(c) == text:
                return c
        raise bad
    lo, hi = ctrl.bounds
    if not re.fullmatch(r"[+-]?[0-9]{1,12}", text) or not int(lo) <= int(text) <= int(hi):
        raise bad
    return int(text)


def problems(lesson: Lesson) -> list[str]:
    """Everything wrong with a lesson, in words (empty when it can be used): its title, length and key, and for each
    step its page, setting, question (which must be the one the page asks at that setting) and aim."""
    out: list[str] = []
    if not KEY.fullmatch(lesson.key):
        out.append("its key must be 1-40 lowercase letters, digits and dashes")
    if not _line(lesson.title, TITLE_CHARS):
        out.append(f"its title must be one line of 1-{TITLE_CHARS} characters")
    if not isinstance(lesson.minutes, int) or isinstance(lesson.minutes, bool) or not 1 <= lesson.minutes <= 240:
        out.append("its length must be 1-240 minutes")
    if not 1 <= len(lesson.steps) <= MAX_STEPS:
        out.append(f"it must have 1-{MAX_STEPS} steps")
    seen: set[str] = set()
    for n, s in enumerate(lesson.steps, start=1):
        where = f"step {n}"
        if not _line(s.aim, AIM_CHARS):
            out.append(f"{where}: its aim must be one line of 1-{AIM_CHARS} characters")
        if s.question in seen:
            out.append(f"{where}: question {s.question!r} is asked by an earlier step (each step asks its own)")
        seen.add(s.question)
        try:
            settings = s.settings  # first: an unknown page is said as such
            q = s.asked
        except LessonError as why:
            out.append(f"{where}: {why}")
            continue
        if q.study:  # a where-question is asked beside its study's map, whatever the view shows
            if s.setting != "":
                out.append(f"{where}: question {q.key!r} is about a study's map, so its setting is the default view "
                           f"(\"\"), not {s.setting!r}")
            continue
        d = descriptors()[s.page]
        asked = lab_questions.question_for(lab_questions.of(s.page), d.presets, d.defaults, settings)
        if asked is None or asked.key != q.key:
            at = f"its setting {s.setting!r}" if s.setting else "its default view"
            out.append(f"{where}: {s.page} asks {repr(asked.key) if asked else 'no question'} at {at}, not "
                       f"{q.key!r} (question {q.key!r} is asked at "
                       f"{repr(q.preset) if q.preset else 'the default view'})")
    return out


def _line(text: Any, limit: int) -> bool:
    return isinstance(text, str) and 0 < len(text.strip()) <= limit and text.isprintable()


def check(lesson: Lesson) -> Lesson:
    """The lesson itself when it can be used; a LessonError naming every problem otherwise."""
    found = problems(lesson)
    if found:
        raise LessonError(f"lesson {lesson.title[:TITLE_CHARS]!r} cannot be used: " + "; ".join(found))
    return lesson


def to_json(lesson: Lesson) -> str:
    """The lesson as its small file (what export writes and import reads)."""
    return json.dumps({"layerlab_lesson": FORMAT, "key": lesson.key, "title": lesson.title,
                       "minutes": lesson.minutes,
                       "steps": [{"page": s.page, "setting": s.setting, "question": s.question, "aim": s.aim}
                                 for s in lesson.steps]}, indent=1)


def from_json(text: str | bytes) -> Lesson:
    """A lesson from its file, validated; LessonError saying what is wrong (not JSON, not a lesson file, a missing
    or mistyped field, a step the lab cannot show)."""
    if len(text) > MAX_BYTES:
        raise LessonError(f"a lesson file is at most {MAX_BYTES // 1000} kB; this one is {len(text) // 1000} kB")
    try:
        if isinstance(text, bytes):
            text = text.decode(json.detect_encoding(text))
    except UnicodeDecodeError:
        raise LessonError("not a lesson file: it is not text (UTF-8)") from None
    if _depth(text) > MAX_DEPTH:
        raise LessonError(f"not a lesson file: it nests lists or objects more than {MAX_DEPTH} deep (a lesson file "
                          "nests 3 deep)")
    try:
        data = json.loads(text, parse_int=_number(int), parse_float=_number(float))
    except json.JSONDecodeError as e:
        raise LessonError(f"not a lesson file: it is not JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:  # not reached within MAX_DEPTH; kept so no file can end a page in a traceback
        raise LessonError(f"not a lesson file: it nests more than {MAX_DEPTH} deep") from None
    if not isinstance(data, dict) or data.get("layerlab_lesson") != FORMAT:
        raise LessonError(f'not a lesson file: it has no "layerlab_lesson": {FORMAT} (export one from the lab to '
                          f"see the format)")
    wrong = [f"{name} must be {kind.__name__}" for name, kind in (("key", str), ("title", str), ("minutes", int),
                                                                   ("steps", list))
             if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool)]
    if wrong:
        raise LessonError("not a usable lesson file: " + "; ".join(wrong))
    steps = []
    for n, s in enumerate(data["steps"][:MAX_STEPS + 1], start=1):
        fields = ("page", "setting", "question", "aim")
        if not isinstance(s, dict) or any(not isinstance(s.get(f), str) for f in fields):
            raise LessonError(f"not a usable lesson file: step {n} must give {', '.join(fields)}, each as text")
        steps.append(Step(*(s[f] for f in fields)))
    return check(Lesson(data["key"], data["title"], data["minutes"], tuple(steps)))


def _depth(text: str) -> int:
    """How deep the lists and objects of a JSON text nest (brackets inside strings do not count): one pass over its
    characters (a regular expression for strings would rescan from every quote of an unterminated one)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _number(kind: type) -> Callable[[str], Any]:
    """json's reader of a number, refusing one written with more than MAX_NUMBER_CHARS characters."""
    def read(literal: str) -> Any:
        if len(literal) > MAX_NUMBER_CHARS:
            raise LessonError(f"not a lesson file: it holds a number of {len(literal):,} characters (at most "
                              f"{MAX_NUMBER_CHARS})")
        return kind(literal)
    return read


def menu() -> list[Step]:
    """Every question of every page as a step a lecturer can pick, in navigation order; its aim is the setting's
    own description (the preset's help, or the page's summary for its default view)."""
    out = []
    for name, d in descriptors().items():
        helps = {p.key: p.help for p in d.presets}
        for q in lab_questions.of(name):
            aim = helps.get(q.preset, d.summary).strip().splitlines()[0][:AIM_CHARS] or d.title
            out.append(Step(name, q.preset, q.key, aim))
        for q in where_questions.of(name):
            study = where_questions.study_of(q)
            aim = f"Predict where it begins, then see the map: {study.title if study else q.prompt}"
            out.append(Step(name, "", q.key, _cut(aim, AIM_CHARS)))
    return out


def built(title: str, steps: Sequence[Step], minutes: Optional[int] = None) -> Lesson:
    """A lesson a lecturer put together (its key made from the title), checked."""
    key = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "lesson"
    return check(Lesson(key, title.strip(), minutes or MINUTES_PER_STEP * max(1, len(steps)), tuple(steps)))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def step_title(step: Step) -> str:
    """A step in words: its page's title and its setting's name (a where-question's: the page's study map)."""
    d = descriptors()[step.page]
    if step.question.startswith(where_questions.PREFIX):
        return f"{d.title} · Where it appears"
    labels = {p.key: p.label for p in d.presets}
    return f"{d.title} · {labels.get(step.setting, 'default view' if step.setting == '' else 'pinned setting')}"


def question_words(step: Step, limit: int = 90) -> str:
    """A step's question, cut to `limit` characters (a menu's line)."""
    prompt = step.asked.prompt
    return prompt if len(prompt) <= limit else prompt[:limit - 1].rstrip() + "…"


# -- what a run said about a step's question, and the report --------------------------------------------------
def error_words(claim: Mapping[str, Any]) -> str:
    """The error of a claim's verdict: each test's estimate with its standard error against its threshold."""
    parts = []
    for t in claim.get("tests") or []:
        try:
            if t.get("unit", "pts") == "pts":
                parts.append(f"{t['name']} {100 * t['value']:+.1f} pts ± {100 * t['se']:.1f} (se) against "
                             f"{100 * t['threshold']:+.1f}")
            else:
                unit = f" {t['unit']}" if t.get("unit") else ""
                parts.append(f"{t['name']} {t['value']:+.3f}{unit} ± {t['se']:.3f} (se) against "
                             f"{t['threshold']:+.3f}")
        except (KeyError, TypeError, ValueError):
            continue
    return "; ".join(parts)


def outcome(question: lab_questions.Question, claims: Sequence[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """What a run says about a question, as stored with the class: the claim, its verdict, its numbers, the error of
    its tests and the option that predicted it (None when the run has no such claim)."""
    ans = lab_questions.answer(question, claims)
    if ans.claim is None:
        return None
    c = ans.claim
    holds = c.get("holds")
    out = {"claim": str(c.get("claim", "")), "holds": holds if holds in (True, False) else None,
           "detail": str(c.get("detail", "")), "rule": str(c.get("rule", "")), "error": error_words(c),
           "correct": ans.correct, "why": str(c.get("why") or "")}
    if question.study:  # a study's answer is its map's sentence, not one claim's verdict
        out["verdict"] = str(c.get("verdict") or c.get("detail") or "")
    return out


VERDICT_WORDS = {True: "holds", False: "does not hold", None: "cannot tell"}


def verdict_of(out: Mapping[str, Any]) -> str:
    """A stored outcome's verdict as the pages say it (lab/claims.verdict_words): "cannot tell (one trained network)"
    where the claim is about a recipe judged at one seed (`why`; outcomes stored before it say the bare word)."""
    if isinstance(out.get("verdict"), str) and out["verdict"]:
        return out["verdict"]
    holds = out.get("holds")
    return VERDICT_WORDS.get(holds if holds in (True, False) else None, "cannot tell") + (
        f" ({out['why']})" if out.get("why") and holds is None else "")


def report_rows(lesson: Lesson, tallies: Mapping[str, Mapping[int, int]],
                outcomes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per step: the question, the class's distribution, the verdict with its error and how many predicted
    what happened. `tallies` {question: {option: count}}; `outcomes` {question: outcome} (missing: not seen yet)."""
    rows = []
    for n, s in enumerate(lesson.steps, start=1):
        q = s.asked
        counts = [int(tallies.get(q.key, {}).get(i, 0)) for i in range(len(q.options))]
        out = outcomes.get(q.key)
        correct = out.get("correct") if out else None
        correct = correct if isinstance(correct, int) and 0 <= correct < len(q.options) else None
        rows.append({
            "step": n, "page": descriptors()[s.page].title, "setting": step_title(s), "question": q.prompt,
            "aim": s.aim, "options": list(q.texts), "counts": counts, "votes": sum(counts),
            "answer": q.texts[correct] if correct is not None else "",
            "predicted": counts[correct] if correct is not None else None,
            "verdict": verdict_of(out) if out else "not run in class",
            "claim": out.get("claim", "") if out else "", "detail": out.get("detail", "") if out else "",
            "error": out.get("error", "") if out else ""})
    return rows


def predicted_words(row: Mapping[str, Any]) -> str:
    """"N of M predicted what happened", or why it cannot be said."""
    if row["predicted"] is None:
        return "no option is confirmed by this run" if row["verdict"] != "not run in class" else "not run in class"
    return f"{row['predicted']} of {row['votes']} predicted what happened"


def report_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The report as CSV, one line per step (the distribution as "option: count" separated by " | ")."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["step", "page", "setting", "question", "aim", "votes", "distribution", "answer_this_run",
                "predicted_it", "verdict", "error", "what_happened"])
    for r in rows:
        w.writerow([r["step"], r["page"], r["setting"], _cell(r["question"]), _cell(r["aim"]), r["votes"],
                    _cell(" | ".join(f"{t}: {n}" for t, n in zip(r["options"], r["counts"], strict=True))),
                    _cell(r["answer"]), "" if r["predicted"] is None else r["predicted"], r["verdict"],
                    _cell(r["error"]), _cell(r["detail"])])
    return out.getvalue()


def _cell(text: str) -> str:
    """A spreadsheet reads a cell that starts with =, +, - or @ as a formula: such text is quoted."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def report_html(lesson: Lesson, code: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """The report as one self-contained HTML page (inline style, no script, every text escaped)."""
    e = html.escape
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Layer Lab lesson report: {e(lesson.title)}</title><style>"
             "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
             "section{border-top:1px solid #999;padding:0.4rem 0 0.8rem}table{border-collapse:collapse}"
             "td{padding:0.1rem 0.5rem;vertical-align:middle}.bar{background:#4a6fa5;height:0.9rem}"
             ".ans td{font-weight:bold}.muted{color:#555}</style></head><body>",
             f"<h1>{e(lesson.title)}</h1>",
             f"<p class='muted'>Class {e(code)} · {len(rows)} steps · saved "
             f"{e(dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC'))}. Per step: the question, the class's "
             f"predictions, what the run showed (the claim's verdict, with the error of its tests) and how many "
             f"predicted it.</p>"]
    for r in rows:
        top = max([1, *r["counts"]])
        bars = "".join(
            f"<tr{' class=ans' if t == r['answer'] and r['answer'] else ''}><td>{e(t)}"
            f"{' ✓' if t == r['answer'] and r['answer'] else ''}</td><td>{n}</td><td style='width:12rem'>"
            f"<div class='bar' style='width:{100 * n / top:.0f}%'></div></td></tr>"
            for t, n in zip(r["options"], r["counts"], strict=True))
        parts.append(
            f"<section><h2>Step {r['step']}: {e(r['setting'])}</h2><p><b>{e(r['question'])}</b></p>"
            f"<p class='muted'>Aim: {e(r['aim'])}</p><table>{bars}</table>"
            f"<p><b>{e(predicted_words(r))}</b> ({r['votes']} predictions).</p>"
            f"<p>The claim{' (' + e(r['claim']) + ')' if r['claim'] else ''}: <b>{e(r['verdict'])}</b>"
            f"{'. Error: ' + e(r['error']) if r['error'] else ''}.</p>"
            f"{'<p>What happened: ' + e(r['detail']) + '</p>' if r['detail'] else ''}</section>")
    parts.append("</body></html>")
    return "".join(parts)


# -- the lessons the lab ships ---------------------------------------------------------------------------------
def _s(page: str, setting: str, question: str, aim: str) -> Step:
    return Step(page, setting, question, aim)


LESSONS: tuple[Lesson, ...] = (
    Lesson("layers-equal", "Are all layers equal?", 36, (
        _s("delete", "plain1", "delete.plain1", "Find out whether a plain MLP has a layer it can lose."),
        _s("delete", "res4", "delete.res4", "Compare three ways of choosing which blocks to delete: a greedy search, "
                                            "ranking by influence, and chance."),
        _s("reinit", "", "reinit.default", "Test whether the first layer's trained weights matter, by putting back "
                                           "their initial draw."),
        _s("reinit", "resblock", "reinit.resblock", "Ask the same of a middle block of a residual network: does the "
                                                    "skip connection make it spare?"),
        _s("layerdrop", "", "layerdrop.default", "See whether training with random layer dropping prepares a network "
                                                 "for pruning."),
        _s("layerdrop", "first", "layerdrop.first", "Halve the depth two ways, every other block or a contiguous run, "
                                                    "and see which the network survives better."),
    )),
    Lesson("order-matters", "Does order matter?", 36, (
        _s("shuffle", "seq", "shuffle.seq", "Check whether an ordinary ViT depends on the order its blocks run in."),
        _s("shuffle", "", "shuffle.default", "See whether training in random orders makes a ViT work in any order."),
        _s("shuffle", "position", "shuffle.position", "Look inside: can the features tell which slot a block ran "
                                                      "in?"),
        _s("rearrange", "", "rearrange.default", "Skip one middle block of an ordinary ViT: how much does the middle "
                                                 "rely on each block?"),
        _s("rearrange", "repeat", "rearrange.repeat", "Compare repeating a block with skipping it: which breaks the "
                                                      "network more?"),
        _s("iot", "", "iot.default", "Ask whether different inputs prefer different orders of the same blocks."),
    )),
    Lesson("answer-decided", "Where is the answer decided?", 36, (
        _s("lens", "", "lens.default", "Watch the prediction form block by block, through the logit lens and the "
                                       "tuned lens."),
        _s("lens", "plain", "lens.plain", "Test whether the blocks that change their input least are the cheapest "
                                          "to delete."),
        _s("lens", "layerdrop", "lens.layerdrop", "Test the same idea by angle, on neighbouring pairs of a network "
                                                  "trained with LayerDrop."),
        _s("matrix", "exits", "matrix.exits", "Compare early answers across recipes: does an early-exit loss move the "
                                              "answer earlier?"),
        _s("matrix", "linear", "matrix.linear", "Measure how linear each block is: how much of the work is a simple "
                                                "map?"),
        _s("matrix", "influence", "matrix.influence", "Delete blocks by influence, or simply the last ones: which "
                                                      "loses less?"),
    )),
    Lesson("where-it-appears", "Where does each effect appear?", 30, (
        _s("delete", "", "where.delete-plain-depth", "Predict from which depth one deletion leaves a plain MLP near "
                                                     "chance, then see the map over five seeds."),
        _s("reinit", "", "where.reinit-plain-epochs", "Predict after how many epochs of training the first layer of a "
                                                      "plain MLP becomes critical, then see the map."),
        _s("shuffle", "", "where.shuffle-sequential-depth", "Predict from which depth an ordinary ViT falls near "
                                                            "chance in random orders."),
        _s("layerdrop", "", "where.layerdrop-kept-fraction", "Predict at which kept fraction LayerDrop beats the same "
                                                             "depth trained from scratch."),
        _s("iot", "", "where.iot-orders", "Predict from how many candidate orders single inputs prefer one beyond "
                                          "the seed control."),
    )),
)


def shipped() -> dict[str, Lesson]:
    """{key: lesson} of the lessons the lab ships, in order."""
    return {x.key: x for x in LESSONS}


def get(name: str) -> Lesson:
    """A shipped lesson by its key; LessonError naming the shipped ones for an unknown name."""
    found = shipped()
    if name not in found:
        raise LessonError(f"unknown lesson {name!r}; the lab ships: {', '.join(found)}")
    return found[name]
