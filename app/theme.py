"""One palette for the whole lab, by meaning: a colour says the same thing on every figure of every page.

Every colour that marks data (a line, a bar, a dot) reaches 3:1 against the figure's paper on a light page (#ffffff)
and on a dark one (DARK_PAPER), as WCAG 2.1 asks of graphical objects (1.4.11): a colour with a hue keeps its value
on both papers, so its relative luminance lies between about 0.12 and 0.29; a neutral grey turns into its opposite on
a dark page (see "Light and dark" below), so it is checked light on white and inverted on the dark paper
(tests/test_contrast.py computes both). Okabe-Ito's and Tol's lightest and darkest hues cannot do that: they are
kept in hue and moved in lightness (CIELAB) into that band (orange, sky blue, wine; Tol's indigo, teal, purple,
olive, brown, gold and cyan).

Meaning colours (Okabe-Ito, safe for the common colour-vision deficiencies):
  original / cut / recovered     blue / vermillion / bluish green: the model as trained, after surgery, after recovery
  plain / residual / ViT         orange / sky blue / reddish purple: the architecture
  trained order / random order   black / wine: which block order ran
  chance                         grey, always dotted
  holds side / other side        the verdict words' blue / orange: a seed's value against a pooled claim's rule
A training rate p is a position on one sequential scale (light to dark purple), never a categorical colour.
Strategies, selection methods and training modes are a categorical set (Paul Tol's "muted" minus the hues that
sit next to a meaning colour), so a strategy line can never be mistaken for "cut" or "p = 0.5".
Two series in one figure that differ in a second way (plain cut vs plain recovered) differ by dash and marker,
never by borrowing another meaning's colour.

Light and dark: every figure is built for a light page (white paper, black ink); `dark(spec)` draws the same figure
for a dark page (app/charts.py picks by the browser's theme). Its colours by meaning stay as they are; what swaps is
the paper and the ink: every neutral grey, black and white included, becomes its opposite (the trained order's
black line turns white, a grey faded toward white fades toward the dark paper, a white outline turns dark), and the
template becomes a dark one on the page's own dark background.
"""

from __future__ import annotations

import json
import re
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sample_colorscale

# -- meaning colours --------------------------------------------------------------------------------------
ORIGINAL = "#0072B2"  # blue
CUT = "#D55E00"  # vermillion
RECOVERED = "#009E73"  # bluish green
PLAIN = "#C18503"  # orange (Okabe-Ito's #E69F00, darker: 2.25:1 on white)
RESIDUAL = "#3299CD"  # sky blue (Okabe-Ito's #56B4E9, darker: 2.31:1 on white)
VIT = "#CC79A7"  # reddish purple
TRAINED_ORDER = "#000000"  # black
RANDOM_ORDER = "#A7406F"  # wine (Tol's #882255, lighter: 2.17:1 on the dark paper)
CHANCE = "#7f7f7f"  # grey
CHANCE_WORDS = "#767676"  # chance's grey for words: 4.5:1 on white, and inverted 5.4:1 on the dark paper
MARK = "#444444"  # neutral marks: "you are here" lines, outlines

# Verdicts: a value on a rule's "holds" side or its other side (each seed's dot beside a pooled claim, app/seed_dots.py)
# takes the colour of the verdict words on the page (app/claims_view.COLOURS: Streamlit's blue "holds", orange "does
# not hold"), in shades apart from "original"'s blue and "plain"'s orange and readable on light and dark paper.
HOLDS_SIDE = "#1C83E1"  # Streamlit's blue
AGAINST_SIDE = "#E2660C"  # Streamlit's orange

ARCH_COLOURS = {"plain": PLAIN, "residual": RESIDUAL, "vit": VIT}

# -- categorical set: strategies, selection methods, training modes (none of them a meaning colour) ------------
# Tol's muted indigo, teal, purple, olive, brown and gold moved into the band (their old values: #332288, #44AA99,
# #AA4499, #999933, #6F4E37, #DDAA33), purple and olive a little darker than teal and gold, so that each pair stays
# apart in lightness where a red-green deficiency merges their hues.
CATEGORICAL = ("#6D52BF", "#359E8D", "#C55DB2", "#787A10", "#7E5C44", "#BA8B09")  # indigo teal purple olive brown gold
STRATEGY_COLOURS = {"every-other": CATEGORICAL[0], "greedy": CATEGORICAL[1], "influence": CATEGORICAL[2],
                    "first": CATEGORICAL[3], "last": CATEGORICAL[4], "random": CATEGORICAL[5],
                    "optimal": CATEGORICAL[4], "evenly-spaced": CATEGORICAL[0]}
MODE_COLOURS = {"sequential": CATEGORICAL[0], "shuffle": CATEGORICAL[1], "position": CATEGORICAL[2],
                "predict": CATEGORICAL[3]}
# Operations on a trained model's blocks (the Rearrange page): a categorical set too, not "cut" or "recovered".
OPERATION_COLOURS = {"skip": CATEGORICAL[0], "swap": CATEGORICAL[1], "repeat": CATEGORICAL[2]}
# Ten labels (slots, blocks, digits) in a 2-D view: a labelling, not a meaning; Tol's muted ten, with its pale
# sand (#DDCC77) made amber (Tol's high-contrast yellow): pale yellow points vanish on a projector's white; its
# indigo, cyan, teal, olive, amber and wine moved into the band as above (the grey is a neutral: it inverts).
LABEL_COLOURS = ("#6D52BF", "#4299C9", "#359E8D", "#117733", "#787A10", "#BA8B09", "#CC6677", "#A7406F", "#AA4499",
                 "#444444")

# Candidate layer orders (the IOT page): order 0 is the trained order, so it takes that meaning's black; the
# others take the categorical set in turn. Eight orders outnumber it: from the seventh on the colours repeat with a
# hatch (ORDER_PATTERNS), so two orders never look alike and no meaning colour is borrowed.
ORDER_COLOURS = (TRAINED_ORDER,) + CATEGORICAL
ORDER_PATTERNS = ("", "/", "x")

# -- sequential: training rates p -----------------------------------------------------------------------------
P_SCALE = "Purples"
P_MAX = 0.7  # the lab's largest training rate (lab.experiments.layerdrop.P_MAX; not imported: theme stays leaf)
# The part of the scale a line may take: its lightest end reaches 3:1 on white, its darkest 3:1 on the dark paper
# (Purples from 0.35 to 1 went from 1.7:1 on white to 1.4:1 on the dark paper).
P_LIGHTEST, P_DARKEST = 0.56, 0.74


def p_colour(p: float) -> str:
    """The colour of training rate p: light (p = 0) to dark (p = P_MAX) on one scale, readable on either paper."""
    t = P_LIGHTEST + (P_DARKEST - P_LIGHTEST) * min(max(p / P_MAX, 0.0), 1.0)
    return sample_colorscale(P_SCALE, [t])[0]


# Heatmaps of an amount (similarity, share of inputs): one perceptually even scale, not a meaning colour's hue.
AMOUNT_SCALE = "Viridis"


# -- type -------------------------------------------------------------------------------------------------------
FONT_SIZE = 16  # figures are read on a projector from the back of the room
SMALL_FONT = 14  # the smallest text any figure draws (annotations, cell numbers, legends): legible at 1280x720
TITLE_LINE = 20  # pixels a title's line break moves its first line up (Plotly's title is 1.4 x FONT_SIZE)


def layout(fig: go.Figure, title: str | None = None, height: int = 420, **kw: object) -> go.Figure:
    """Apply the lab's common figure style (returns the figure for chaining)."""
    # Title at the top of the figure, legend in its own band below the title, so they never overlap. Margins grow
    # to fit tick labels and axis titles (automargin), so a long title is never clipped at the edge.
    fig.update_layout(
        # Plotly anchors a title of several lines by its first line's baseline, not its top: each further line
        # would push the first above the figure's edge (measured: 20 px a line, cut off), so the anchor moves down.
        title={"text": title, "y": 0.98 - TITLE_LINE * title.count("<br>") / height, "yref": "container",
               "yanchor": "top", "x": 0.01, "xanchor": "left"}
        if title else None,
        height=height,
        font={"size": FONT_SIZE},
        margin={"l": 60, "r": 20, "t": 100 if title else 40, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0,
                "font": {"size": SMALL_FONT}},
        template="plotly_white",
        **kw,
    )
    fig.update_xaxes(automargin=True, title_font={"size": FONT_SIZE}, tickfont={"size": SMALL_FONT})
    fig.update_yaxes(automargin=True, title_font={"size": FONT_SIZE}, tickfont={"size": SMALL_FONT})
    fig.update_annotations(font={"size": max(SMALL_FONT, FONT_SIZE - 1)})
    return fig


# -- dark pages -------------------------------------------------------------------------------------------------
DARK_PAPER = "#0e1117"  # Streamlit's dark background (.streamlit/config.toml): the figure sits on the page seamlessly
# plotly_dark on that background (its own is rgb(17,17,17): a visible edge around every chart)
DARK_TEMPLATE = go.layout.Template(json.loads(
    json.dumps(pio.templates["plotly_dark"].to_plotly_json()).replace('"rgb(17,17,17)"', f'"{DARK_PAPER}"')))
# A colour as a whole JSON string: #rgb, #rrggbb, rgb(...) or rgba(...), or a named neutral.
_COLOUR = re.compile(r'"(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|rgba?\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*(?:,\s*[0-9.]+\s*)?\)'
                     r'|black|white)"')


def _inverted(m: re.Match[str]) -> str:
    """The matched colour with its lightness swapped when it is a neutral grey (r = g = b); any hue as it is."""
    c = m.group(1)
    if c in ("black", "white"):
        return '"white"' if c == "black" else '"black"'
    if c.startswith("#"):
        h = c[1:] if len(c) == 7 else "".join(ch * 2 for ch in c[1:])
        r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
        return f'"#{255 - r:02x}{255 - g:02x}{255 - b:02x}"' if r == g == b else m.group(0)
    parts = [p.strip() for p in c[c.index("(") + 1:-1].split(",")]
    r, g, b = (int(v) for v in parts[:3])
    if not r == g == b:
        return m.group(0)
    v = 255 - r
    return f'"rgba({v},{v},{v},{parts[3]})"' if len(parts) == 4 else f'"rgb({v},{v},{v})"'


def dark(spec: dict[str, Any]) -> dict[str, Any]:
    """A figure's dict drawn for a dark page: the dark template, and every neutral colour's lightness swapped
    (see the module docstring); colours with a hue, the meaning colours, are unchanged. `spec` is not changed."""
    layout = {k: v for k, v in spec.get("layout", {}).items() if k != "template"}
    body = json.loads(_COLOUR.sub(_inverted, json.dumps({"data": spec.get("data", []), "layout": layout})))
    body["layout"]["template"] = DARK_TEMPLATE.to_plotly_json()
    return body
