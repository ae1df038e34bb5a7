"""The worksheet: what this session ran, predicted and saw, kept in the session and saved as one offline HTML file
(the Reproduce expander offers it, app/reproduce_view.py)."""

from __future__ import annotations

import datetime as dt
import html
from typing import Any, Optional, Sequence
from urllib.parse import urlencode

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

LOG_KEY = "_layerlab_ws_log"  # the worksheet: what this session ran, predicted and saw
LOG_LIMIT = 30  # views kept for the worksheet (the oldest go first)


SECRET_PARAMS = ("key",)  # never written into a saved link: a lecturer key in a link is dropped unread anyway


def current_link() -> str:
    """This view's link (the app's URL and every query parameter but a lecturer key)."""
    try:
        base = st.context.url or ""
        params = {k: st.query_params.get_all(k) for k in st.query_params if k not in SECRET_PARAMS}
    except Exception:  # noqa: BLE001 - bare mode
        return ""
    return base + ("?" + urlencode(params, doseq=True) if params else "")


def log(entry: dict[str, Any]) -> None:
    """Add an entry to this session's worksheet (a view replaces an earlier entry of the same link)."""
    entries: list[dict[str, Any]] = st.session_state.setdefault(LOG_KEY, [])
    entry = {**entry, "at": dt.datetime.now(dt.UTC).strftime("%H:%M:%S UTC")}
    if entry["kind"] == "view":
        entries[:] = [e for e in entries if not (e["kind"] == "view" and e.get("link") == entry.get("link"))]
    entries.append(entry)
    views = [e for e in entries if e["kind"] == "view"]
    if len(views) > LOG_LIMIT:
        entries.remove(views[0])


def log_view(page: str, title: str, describe: str, fig: Optional[go.Figure]) -> None:
    log({"kind": "view", "page": page, "title": title, "describe": describe, "link": current_link(),
         "figure": fig.to_json() if fig is not None else None})


def worksheet_html(entries: Sequence[dict[str, Any]]) -> str:
    """An offline HTML page of the session's entries; Plotly's script is inlined once (no network needed)."""
    e = html.escape
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Layer Lab worksheet</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
             "line-height:1.5}section{border-top:1px solid #999;padding:0.5rem 0}.ok{font-weight:bold}"
             "code{word-break:break-all}</style></head><body>",
             "<h1>Layer Lab worksheet</h1>",
             f"<p>Saved {e(dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC'))}: the views you ran in "
             "this session, your predictions and what each run showed. Every figure works offline.</p>"]
    if not entries:
        parts.append("<p>Nothing yet: open a page of the lab and run a setting.</p>")
    plotly_js = True
    for item in entries:
        link = item.get("link") or ""
        href = f" (<a href='{e(link, quote=True)}'>open this view</a>)" if link.startswith(("http://", "https://")) \
            else ""
        if item["kind"] == "view":
            parts.append(f"<section><h2>{e(item.get('title', ''))}</h2><p>{e(item.get('at', ''))} · "
                         f"{e(item.get('describe', ''))}{href}</p>")
            if item.get("figure"):
                fig = pio.from_json(item["figure"])
                parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js,
                                         config={"displaylogo": False}))
                plotly_js = False
            parts.append("</section>")
        else:
            m = item.get("matched")
            verdict = "matched" if m else "did not match" if m is False else "could not be checked"
            parts.append(f"<section><h2>Prediction: {e(item.get('question', ''))}</h2><p>{e(item.get('at', ''))}"
                         f"{href}</p><p>You predicted <b>{e(item.get('chosen', ''))}</b>; it <span class='ok'>"
                         f"{e(verdict)}</span> the run.</p><p>What happened: {e(item.get('detail', ''))}"
                         f"{' (the claim: ' + e(item['verdict']) + ')' if item.get('verdict') else ''}</p></section>")
    parts.append("</body></html>")
    return "".join(parts)


def lesson_worksheet_html(title: str, code: str, rows: Sequence[dict[str, Any]]) -> str:
    """A student's worksheet of a lesson (app/lesson.py: worksheet_rows): per step the question, their counted
    prediction beside what the run showed once the answer was revealed to the room. Offline HTML, all text escaped;
    made from the class's code, the questions and the claims, never a link or a key."""
    e = html.escape
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Layer Lab worksheet: {e(title)}</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
             "line-height:1.5}section{border-top:1px solid #999;padding:0.5rem 0}.ok{font-weight:bold}"
             ".muted{color:#555}</style></head><body>",
             f"<h1>Layer Lab worksheet: {e(title)}</h1>",
             f"<p class='muted'>Class {e(code)} · saved {e(dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC'))}: "
             "your predictions in this lesson beside what each run showed.</p>"]
    for r in rows:
        mine = (f"You predicted <b>{e(r['mine'])}</b>" if r.get("mine") else "You made no counted prediction")
        if not r.get("revealed"):
            said = "<p class='muted'>The answer was not revealed to the room yet.</p>"
        else:
            m = r.get("matched")
            verdict = ("<span class='ok'>matched</span> the run" if m else "<span class='ok'>did not match</span> "
                       "the run" if m is False else "cannot be checked against this run")
            said = (f"<p>{mine}: it {verdict}." if r.get("mine") else f"<p>{mine}.")
            said += (f" The run's answer: <b>{e(r['answer'])}</b>." if r.get("answer") else "") + "</p>"
            said += (f"<p>The claim <b>{e(r.get('verdict', ''))}</b>"
                     f"{' (error: ' + e(r['error']) + ')' if r.get('error') else ''}. What happened: "
                     f"{e(r.get('detail', ''))}</p>")
        parts.append(f"<section><h2>Step {int(r['step'])}: {e(r.get('setting', ''))}</h2>"
                     f"<p><b>{e(r.get('question', ''))}</b></p><p class='muted'>Aim: {e(r.get('aim', ''))}</p>"
                     + (f"<p>{mine}.</p>" if not r.get("revealed") else "") + said + "</section>")
    parts.append("</body></html>")
    return "".join(parts)
