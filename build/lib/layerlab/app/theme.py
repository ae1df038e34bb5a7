"""One palette for the whole lab, by meaning: a colour says the same thing on every figure of every page.

Meaning colours (Okabe-Ito, safe for the common colour-vision deficiencies):
  original / cut / recovered     blue / vermillion / bluish green: the model as trained, after surgery, after recovery
  plain / residual / ViT         orange / sky blue / reddish purple: the architecture
  trained order / random order   black / wine: which block order ran
  chance                         grey, always dotted
A training rate p is a position on one sequential scale (light to dark purple), never a categorical colour.
Strategies, selection methods and training modes are a categorical set (Paul Tol's "muted" minus the hues that
sit next to a meaning colour), so a strategy line can never be mistaken for "cut" or "p = 0.5".
Two series in one figure that differ in a second way (plain cut vs plain recovered) differ by dash and marker,
never by borrowing another meaning's colour.

Light and dark: a figure follows the browser's theme in the browser itself (app/charts.py draws with Streamlit's
theme, which sets the background, grid and text colours as it draws, and again when the theme changes), so one
cached figure serves both. Meaning colours are the same on both backgrounds. The one colour that cannot be the same
is black ink (the trained order, neutral marks, text): it is INK, Streamlit's placeholder for its text grey, which
the browser draws near-black on light and near-white on dark.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.colors import sample_colorscale

# -- ink: the theme's text colour --------------------------------------------------------------------------------
# Streamlit's frontend replaces these placeholders in a figure's JSON before drawing (streamlit_plotly_theme.py: GRAY_90
# and BG_COLOR): INK becomes its text grey (#262730 on light, #fafafa on dark), PAPER its background. Anywhere else
# (the worksheet's offline HTML, a notebook) they are what they say: near-black. tests/test_browser_screens.py
# checks the replacement in Chromium, so a Streamlit that drops it fails there.
INK = "#000037"
PAPER = "#000038"

# -- meaning colours --------------------------------------------------------------------------------------
ORIGINAL = "#0072B2"  # blue
CUT = "#D55E00"  # vermillion
RECOVERED = "#009E73"  # bluish green
PLAIN = "#E69F00"  # orange
RESIDUAL = "#56B4E9"  # sky blue
VIT = "#CC79A7"  # reddish purple
TRAINED_ORDER = INK  # black on light, white on dark: black lines would vanish on a dark background
RANDOM_ORDER = "#882255"  # wine
CHANCE = "#7f7f7f"  # grey
MARK = INK  # neutral marks: "you are here" lines, outlines (a dark grey would vanish on dark too)

ARCH_COLOURS = {"plain": PLAIN, "residual": RESIDUAL, "vit": VIT}

# -- categorical set: strategies, selection methods, training modes (none of them a meaning colour) ------------
CATEGORICAL = ("#332288", "#44AA99", "#AA4499", "#999933", "#6F4E37", "#DDAA33")  # indigo teal purple olive brown gold
STRATEGY_COLOURS = {"every-other": CATEGORICAL[0], "greedy": CATEGORICAL[1], "influence": CATEGORICAL[2],
                    "first": CATEGORICAL[3], "last": CATEGORICAL[4], "random": CATEGORICAL[5],
                    "optimal": CATEGORICAL[4], "evenly-spaced": CATEGORICAL[0]}
MODE_COLOURS = {"sequential": CATEGORICAL[0], "shuffle": CATEGORICAL[1], "position": CATEGORICAL[2],
                "predict": CATEGORICAL[3]}
# Operations on a trained model's blocks (the Rearrange page): a categorical set too, not "cut" or "recovered".
OPERATION_COLOURS = {"skip": CATEGORICAL[0], "swap": CATEGORICAL[1], "repeat": CATEGORICAL[2]}
# Ten labels (slots, blocks, digits) in a 2-D view: a labelling, not a meaning; Tol's muted ten, with its pale
# sand (#DDCC77) made amber (Tol's high-contrast yellow): pale yellow points vanish on a projector's white; its
# dark grey is INK, which stays readable on a dark background.
LABEL_COLOURS = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDAA33", "#CC6677", "#882255", "#AA4499",
                 INK)

# Candidate layer orders (the IOT page): order 0 is the trained order, so it takes that meaning's black; the
# others take the categorical set in turn. Eight orders outnumber it: from the seventh on the colours repeat with a
# hatch (ORDER_PATTERNS), so two orders never look alike and no meaning colour is borrowed.
ORDER_COLOURS = (TRAINED_ORDER,) + CATEGORICAL
ORDER_PATTERNS = ("", "/", "x")

# -- sequential: training rates p -----------------------------------------------------------------------------
P_SCALE = "Purples"
P_MAX = 0.7  # the lab's largest training rate (lab.experiments.layerdrop.P_MAX; not imported: theme stays leaf)


def p_colour(p: float) -> str:
    """The colour of training rate p: light (p = 0) to dark (p = P_MAX) on one scale, readable on white."""
    t = 0.35 + 0.65 * min(max(p / P_MAX, 0.0), 1.0)
    return sample_colorscale(P_SCALE, [t])[0]


# Heatmaps of an amount (similarity, share of inputs): one perceptually even scale, not a meaning colour's hue.
AMOUNT_SCALE = "Viridis"


# -- type -------------------------------------------------------------------------------------------------------
FONT_SIZE = 16  # figures are read on a projector from the back of the room
SMALL_FONT = 14  # the smallest text any figure draws (annotations, cell numbers, legends): legible at 1280x720


def layout(fig: go.Figure, title: str | None = None, height: int = 420, **kw: object) -> go.Figure:
    """Apply the lab's common figure style (returns the figure for chaining)."""
    # Title at the top of the figure, legend in its own band below the title, so they never overlap. Margins grow
    # to fit tick labels and axis titles (automargin), so a long title is never clipped at the edge.
    fig.update_layout(
        title={"text": title, "y": 0.98, "yref": "container", "yanchor": "top", "x": 0.01, "xanchor": "left"}
        if title else None,
        height=height,
        font={"size": FONT_SIZE},
        margin={"l": 60, "r": 20, "t": 100 if title else 40, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0,
                "font": {"size": SMALL_FONT}},
        template="plotly_white",
        **kw,
    )
    # Text in INK, set here because Streamlit's theme draws axis text in a pale grey (3.7:1 on white) that a
    # projector washes out; no background is set, so the browser's theme gives it (app/charts.py).
    fig.update_layout(font_color=INK)
    fig.update_xaxes(automargin=True, title_font={"size": FONT_SIZE, "color": INK},
                     tickfont={"size": SMALL_FONT, "color": INK})
    fig.update_yaxes(automargin=True, title_font={"size": FONT_SIZE, "color": INK},
                     tickfont={"size": SMALL_FONT, "color": INK})
    fig.update_annotations(font={"size": max(SMALL_FONT, FONT_SIZE - 1)})
    return fig
