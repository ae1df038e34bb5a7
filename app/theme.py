"""One palette for the whole lab (Okabe-Ito, safe for colour-blind viewers), used by every figure.

original = the trained model as it was; cut = after surgery, before recovery; recovered = after recovery.
"""

import plotly.graph_objects as go

ORIGINAL = "#0072B2"  # blue
CUT = "#D55E00"  # vermillion
RECOVERED = "#009E73"  # bluish green
CHANCE = "#7f7f7f"  # grey
PLAIN = "#E69F00"  # orange
RESIDUAL = "#56B4E9"  # sky blue
VIT = "#CC79A7"  # reddish purple
EXTRA = ("#F0E442", "#000000", "#999999")  # yellow, black, grey for further series

ARCH_COLOURS = {"plain": PLAIN, "residual": RESIDUAL, "vit": VIT}
QUALITATIVE = (ORIGINAL, CUT, RECOVERED, PLAIN, RESIDUAL, VIT, *EXTRA)

FONT_SIZE = 16  # figures are read on a projector from the back of the room


def layout(fig: go.Figure, title: str | None = None, height: int = 420, **kw: object) -> go.Figure:
    """Apply the lab's common figure style (returns the figure for chaining)."""
    # Title at the top of the figure, legend in its own band below the title, so they never overlap.
    fig.update_layout(
        title={"text": title, "y": 0.98, "yref": "container", "yanchor": "top"} if title else None,
        height=height,
        font={"size": FONT_SIZE},
        margin={"l": 60, "r": 20, "t": 100 if title else 40, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0},
        template="plotly_white",
        **kw,
    )
    return fig
