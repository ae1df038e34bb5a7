// The light student view (app/hall_route.py): join, follow the room's step as the server pushes it, vote, and see
// the answer once the lecturer reveals it. Every text from the server is set as text (never as markup).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const code = (params.get("class") || params.get("join") || "").trim().toUpperCase();
  let room = null, mine = {}, picked = {}, source = null, shownFigure = "", plotly = null;

  function say(text, calm) { const s = $("status"); s.textContent = text || ""; s.className = calm ? "calm" : ""; }

  function post(path, fields) {
    return fetch(path, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) })
      .then((r) => r.json().catch(() => ({ message: "the server did not answer" })).then((b) => [r.status, b]));
  }

  function retryAfter(message) { const m = /(\d+) s\b/.exec(message || ""); return m ? Number(m[1]) : 10; }

  function enter(message) {
    $("enter").hidden = false; $("step").hidden = true; say(message || "");
    if (code) { $("code").value = code; }
    $("code").focus();
  }

  function join() {
    say("Joining class " + code + " …", true);
    post("hall/join", { code: code }).then(([status, body]) => {
      if (status === 200) { follow(); return; }
      if (status === 429) {
        const wait = retryAfter(body.message);
        say("Not yet: " + body.message + ". This page tries again by itself.");
        setTimeout(join, wait * 1000);
        return;
      }
      if (status === 503) { say(body.message + "; trying again …"); setTimeout(join, 5000); return; }
      enter(body.message);
    }).catch(() => { say("No connection to the lab: trying again …"); setTimeout(join, 5000); });
  }

  function follow() {
    fetch("hall/state?class=" + encodeURIComponent(code), { credentials: "same-origin" })
      .then((r) => r.json().then((b) => [r.status, b])).then(([status, body]) => {
        if (status !== 200) { say(body.message); return; }
        if (body.room && body.room.question && body.mine !== null) { mine[body.room.question] = body.mine; }
        say("", true);
        draw(body.room);
        listen();
      }).catch(() => { say("No connection to the lab: trying again …"); setTimeout(follow, 5000); });
  }

  function listen() {
    if (source) { source.close(); }
    source = new EventSource("hall/events?class=" + encodeURIComponent(code));
    source.onmessage = (e) => { say("", true); draw(JSON.parse(e.data)); };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) { say("Connection lost: joining again …"); setTimeout(join, 3000); }
      else { say("Reconnecting …", true); }
    };
  }

  function options(r) {
    const box = $("options");
    if (box.dataset.question === r.question) { return; }
    box.dataset.question = r.question;
    box.replaceChildren();
    r.options.forEach((text, i) => {
      const row = document.createElement("div"); row.className = "option";
      const input = document.createElement("input");
      input.type = "radio"; input.name = "pick"; input.id = "pick-" + i; input.value = String(i);
      input.addEventListener("change", () => { picked[r.question] = i; controls(); });
      const label = document.createElement("label"); label.htmlFor = input.id; label.textContent = text;
      row.append(input, label); box.append(row);
    });
  }

  function controls() {
    const r = room; if (!r || !r.lesson) { return; }
    const done = mine[r.question] !== undefined && mine[r.question] !== null;
    const choice = done ? mine[r.question] : picked[r.question];
    document.querySelectorAll("#options input").forEach((input) => {
      input.checked = choice !== undefined && Number(input.value) === choice;
      input.disabled = done || r.window !== "open";
    });
    $("send").disabled = done || r.window !== "open" || choice === undefined;
    $("send").hidden = done || r.revealed;
    const note = $("mine");
    if (done) { note.textContent = "Your prediction is counted: " + r.options[mine[r.question]] + "."; }
    else if (r.window === "waiting") { note.textContent = "Voting opens when your lecturer opens it: pick, then send."; }
    else if (r.window === "closed") { note.textContent = "Voting on this question is closed."; }
    else if (r.revealed) { note.textContent = "Your lecturer revealed the answer before you predicted this one."; }
    else { note.textContent = choice === undefined ? "Pick one, then send it. You can send once." : ""; }
  }

  function tally(r) {
    const list = $("tally"); list.replaceChildren();
    const counts = r.tally || [], total = counts.reduce((a, b) => a + b, 0);
    const right = r.answer ? r.answer.correct : null;
    r.options.forEach((text, i) => {
      const n = counts[i] || 0, li = document.createElement("li");
      const what = document.createElement("div"); what.className = "what";
      const name = document.createElement("span"); name.textContent = (i === right ? "✓ " : "") + text;
      if (i === right) { name.className = "right"; }
      const count = document.createElement("span"); count.textContent = n + " of " + total;
      what.append(name, count);
      const track = document.createElement("div"); track.className = "track";
      const fill = document.createElement("div"); fill.className = "fill";
      fill.style.width = (total ? (100 * n / total) : 0).toFixed(1) + "%";
      track.append(fill); li.append(what, track); list.append(li);
    });
  }

  function loadPlotly() {
    if (plotly) { return plotly; }
    plotly = new Promise((done, fail) => {
      const s = document.createElement("script"); s.src = "hall/plotly.js";
      s.onload = () => done(window.Plotly); s.onerror = fail; document.head.append(s);
    });
    return plotly;
  }

  function figure(r) {
    const box = $("figure");
    if (!r.revealed || !r.figure) { box.hidden = true; shownFigure = ""; return; }
    const id = r.question + "@" + r.figure;
    if (id === shownFigure) { return; }
    shownFigure = id; box.hidden = false;
    Promise.all([loadPlotly(), fetch("hall/figure?class=" + encodeURIComponent(code) + "&question=" +
      encodeURIComponent(r.question), { credentials: "same-origin" }).then((x) => x.ok ? x.json() : null)])
      .then(([P, fig]) => {
        if (!fig || shownFigure !== id) { return; }
        const layout = Object.assign({}, fig.layout || {}, { autosize: true, width: null, height: 340 });
        P.react(box, fig.data || [], layout, { responsive: true, displayModeBar: false, staticPlot: false });
      }).catch(() => { box.hidden = true; });
  }

  function draw(r) {
    room = r;
    $("enter").hidden = true;
    $("where").textContent = "· class " + r.code;
    $("full").href = "../?" + new URLSearchParams({ join: r.code }).toString();
    if (!r.open) { $("step").hidden = true; say("Class " + r.code + " is not open: check the code with your lecturer."); return; }
    if (!r.lesson) { $("step").hidden = true; say("Your lecturer has not started a lesson yet: this page follows it when they do.", true); return; }
    $("step").hidden = false;
    $("step-no").textContent = r.lesson + " · step " + r.step + " of " + r.steps;
    $("prompt").textContent = r.prompt;
    $("aim").textContent = r.aim ? "Aim: " + r.aim : "";
    options(r);
    controls();
    $("answer").hidden = !r.revealed;
    if (r.revealed) {
      const a = r.answer;
      const said = a ? a.verdict.charAt(0).toUpperCase() + a.verdict.slice(1) : "";
      // a study's verdict is its map's whole sentence, full stop included; a view's is a word ("holds")
      $("verdict").textContent = a ? said + (/[.?!]$/.test(said) ? "" : ".") : "Your lecturer's run said nothing about this question yet.";
      $("detail").textContent = a && a.detail !== a.verdict ? a.detail : "";
      tally(r);
    }
    figure(r);
  }

  $("send").addEventListener("click", () => {
    const r = room, choice = picked[r.question];
    if (choice === undefined) { return; }
    $("send").disabled = true;
    post("hall/vote", { class: code, question: r.question, option: String(choice) }).then(([status, body]) => {
      if (status === 200) { mine[r.question] = choice; say("", true); }
      else if (status === 403) { say(body.message + " …"); join(); }
      else { say("Not counted: " + body.message + "."); }
      controls();
    }).catch(() => { say("No connection to the lab: your prediction was not sent. Try again."); controls(); });
  });

  $("enter").addEventListener("submit", (e) => {
    e.preventDefault();
    const typed = $("code").value.trim().toUpperCase();
    if (typed) { location.search = "?" + new URLSearchParams({ class: typed }).toString(); }
  });

  if (code) { join(); } else { enter(""); }
})();
