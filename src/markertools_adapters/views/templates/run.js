/* markertools run timeline (VEW-2). The bars and marks are drawn by the page itself
   (SVG); this script only shows what a selected turn or mark holds, read from the JSON
   island once, always through textContent (VEW-3). */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("run-data").textContent);
  var pane = document.getElementById("turn-detail");
  var svg = document.getElementById("timeline");
  var current = null;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function field(dl, name, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", null, name));
    dl.appendChild(el("dd", null, value));
  }
  function select(g) {
    if (current) current.classList.remove("sel");
    current = g;
    g.classList.add("sel");
  }

  function showTurn(i, g) {
    var t = D.turns[i];
    select(g);
    var out = [el("h2", null, t.role + " \u00b7 turn " + t.n + " \u00b7 " + t.outcome)];
    var dl = el("dl");
    field(dl, "started", t.start);
    field(dl, "ended", t.outcome === "live" ? "still running (as far as the log shows)" : t.end);
    field(dl, "took", t.took);
    field(dl, "thread", t.thread);
    field(dl, "turn id", t.turn);
    field(dl, "decision id", t.decision);
    out.push(dl);
    out.push(el("h3", null, "instruction"));
    out.push(el("pre", "text instruction", t.instruction || "(not in the log)"));
    out.push(el("h3", null, "reply (head" + (t.replyChars ? ", " + t.replyChars + " characters in all" : "") + ")"));
    out.push(el("pre", "text reply", t.reply || "(no reply)"));
    pane.replaceChildren.apply(pane, out);
  }

  function showMark(i, g) {
    var m = D.marks[i];
    select(g);
    var out = [el("h2", null, m.kind + " \u00b7 " + m.at), el("p", null, m.label)];
    if (m.detail) out.push(el("pre", "text", m.detail));
    pane.replaceChildren.apply(pane, out);
  }

  function activate(target) {
    var g = target instanceof Element ? target.closest("g.turn, g.mark") : null;
    if (!g) return;
    if (g.classList.contains("turn")) showTurn(Number(g.dataset.turn), g);
    else showMark(Number(g.dataset.mark), g);
  }
  svg.addEventListener("click", function (ev) { activate(ev.target); });
  svg.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); activate(ev.target); }
  });
  document.documentElement.dataset.ready = "1";
  window.__viewReadyMs = performance.now();
})();
