"""A page with one control of each kind and two presets, for tests/test_query.py (no training, runs in ms)."""

import streamlit as st

from app import controls

k = controls.slider("K", "k", 0, 7, 2, help="a slider")
rec = controls.select("Recovery", "rec", ("none", "ce", "kd"), "kd", help="a select box")
seed = controls.number("Seed", "seed", 0, 99, 0, help="a number input")
p = controls.select_slider("p", "p", (0.0, 0.25, 0.5), 0.5, help="a select slider")
st.markdown(f"k={k} rec={rec} seed={seed} p={p}")
controls.preset("Minimum of everything", {"k": 0, "rec": "none", "seed": 0, "p": 0.0}, help="-", key="low")
controls.preset("Defaults", {"k": 2, "rec": "kd", "seed": 0, "p": 0.5}, help="-", key="defaults")
controls.preset("Others", {"k": 5, "rec": "ce", "seed": 7, "p": 0.25}, help="-", key="others")
st.button("Rerun", key="rerun")
