"""A page with one control of each kind and two presets, for tests/test_query.py (no training, runs in ms). Each
control is a `param` field of a small declared class, as every page's control is (app/controls.py)."""

from dataclasses import dataclass

import streamlit as st

from app import controls
from lab.experiment import param


@dataclass(frozen=True)
class Demo:
    k: int = param(2, "a slider", label="K", lo=0, hi=7)
    rec: str = param("kd", "a select box", label="Recovery", choices=("none", "ce", "kd"))
    seed: int = param(0, "a number input", label="Seed", lo=0, hi=99)
    p: float = param(0.5, "a select slider", label="p", lo=0.0, hi=0.5)


k = controls.param(Demo, "k", "slider")
rec = controls.param(Demo, "rec")
seed = controls.param(Demo, "seed", "number")
p = controls.param(Demo, "p", "select_slider", options=(0.0, 0.25, 0.5))
st.markdown(f"k={k} rec={rec} seed={seed} p={p}")
controls.preset("Minimum of everything", {"k": 0, "rec": "none", "seed": 0, "p": 0.0}, help="-", key="low")
controls.preset("Defaults", {"k": 2, "rec": "kd", "seed": 0, "p": 0.5}, help="-", key="defaults")
controls.preset("Others", {"k": 5, "rec": "ce", "seed": 7, "p": 0.25}, help="-", key="others")
st.button("Rerun", key="rerun")
