/* markertools fleet view (VEW-1). Reads the JSON island once; draws only the rows in
   sight (a virtual list), so 10,000 tasks stay smooth. Every text from the data goes
   into the page through textContent, never as markup (VEW-3). */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("fleet-data").textContent);
  var T = D.tasks, N = T.length, ROW = 24, OVERSCAN = 12;
  var KNOWN = ["queued", "running", "completed", "failed", "interrupted", "merged", "merge-failed"];
  var collapsed = new Uint8Array(N), keep = new Uint8Array(N), visible = new Int32Array(N);
  var shown = 0, selected = -1, filtering = false, lowIds = null, lowNames = null;
  var statusOn = D.statuses.map(function () { return true; });
  var creatorAt = -1, query = "";
  var box = document.getElementById("tree"), spacer = document.getElementById("tree-spacer");
  var detail = document.getElementById("detail"), counter = document.getElementById("shown-count");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function statusClass(i) {
    var name = D.statuses[i];
    return "chip " + (KNOWN.indexOf(name) >= 0 ? "st-" + name : "st-other");
  }

  function recompute() {
    filtering = query !== "" || creatorAt >= 0 || statusOn.indexOf(false) >= 0;
    var i;
    if (filtering) {
      if (query !== "" && lowIds === null) {
        lowIds = T.map(function (t) { return t.i.toLowerCase(); });
        lowNames = T.map(function (t) { return t.n.toLowerCase(); });
      }
      keep.fill(0);
      for (i = 0; i < N; i++) {
        var t = T[i];
        if (!statusOn[t.s] || (creatorAt >= 0 && t.c !== creatorAt)) continue;
        if (query !== "" && lowIds[i].indexOf(query) < 0 && lowNames[i].indexOf(query) < 0) continue;
        keep[i] = 2;  /* a match */
        for (var p = t.p; p >= 0 && keep[p] === 0; p = T[p].p) keep[p] = 1;  /* its ancestors: context */
      }
    }
    shown = 0;
    i = 0;
    while (i < N) {
      if (filtering && keep[i] === 0) { i += T[i].z; continue; }
      visible[shown++] = i;
      i += collapsed[i] ? T[i].z : 1;
    }
    spacer.style.height = (shown * ROW) + "px";
    counter.textContent = shown + " of " + N + " tasks shown";
    paint(true);
  }

  var painted = {first: -1, last: -1};
  function paint(force) {
    var top = box.scrollTop, height = box.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    var last = Math.min(shown, Math.ceil((top + height) / ROW) + OVERSCAN);
    if (!force && first === painted.first && last === painted.last) return;
    painted.first = first; painted.last = last;
    var frag = document.createDocumentFragment();
    for (var r = first; r < last; r++) frag.appendChild(row(visible[r], r));
    spacer.replaceChildren(frag);
  }

  function row(i, r) {
    var t = T[i];
    var div = el("div", "row");
    div.style.top = (r * ROW) + "px";
    div.dataset.index = String(i);
    div.setAttribute("role", "treeitem");
    div.setAttribute("aria-level", String(t.d + 1));
    if (i === selected) div.classList.add("sel");
    if (filtering && keep[i] === 1) div.classList.add("context");
    var indent = el("span");
    indent.style.display = "inline-block";
    indent.style.width = (t.d * 18) + "px";
    indent.style.flex = "none";
    div.appendChild(indent);
    if (t.z > 1) {
      var b = el("button", "toggle", collapsed[i] ? "\u25b8" : "\u25be");
      b.setAttribute("aria-label", (collapsed[i] ? "expand " : "collapse ") + t.i);
      b.setAttribute("aria-expanded", collapsed[i] ? "false" : "true");
      div.appendChild(b);
    } else {
      div.appendChild(el("span", "leaf"));
    }
    div.appendChild(el("span", statusClass(t.s), D.statuses[t.s]));
    div.appendChild(el("span", "tid", t.i));
    div.appendChild(el("span", "name", t.n));
    var meta = (D.creators[t.c] || "no creator") + " \u00b7 gen " + t.g + " \u00b7 " + t.k + (t.k === 1 ? " child" : " children");
    div.appendChild(el("span", "meta", meta));
    if (t.g >= D.limits.generation) div.appendChild(el("span", "cap", "generation limit"));
    if (t.k >= D.limits.children) div.appendChild(el("span", "cap", "children cap"));
    if (t.ap) div.appendChild(el("span", "cap approval", t.ap === 1 ? "awaiting approval" : t.ap + " awaiting approval"));
    return div;
  }

  function field(dl, name, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", null, name));
    dl.appendChild(el("dd", null, value));
  }
  function table(head, rows) {
    var tb = el("table"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    tb.appendChild(tr);
    rows.forEach(function (cells) {
      var line = el("tr");
      cells.forEach(function (c, n) {
        var td = el("td", null, c);
        if (head[n] === "outcome") td.className = "o-" + (c === "done" || c === "rejected" ? c : "other");
        line.appendChild(td);
      });
      tb.appendChild(line);
    });
    return tb;
  }

  function show(i) {
    selected = i;
    var t = T[i], x = t.x || {};
    var out = [];
    var h = el("h2");
    h.appendChild(el("span", statusClass(t.s), D.statuses[t.s]));
    h.appendChild(document.createTextNode(" " + t.i));
    out.push(h);
    if (t.n) out.push(el("div", "name-line", t.n));
    var dl = el("dl");
    field(dl, "project", x.pr);
    field(dl, "creator", D.creators[t.c] || "none");
    field(dl, "created", t.t);
    field(dl, "generation", t.g + " (limit " + D.limits.generation + ": a task of generation " + D.limits.generation + " may not spawn)");
    field(dl, "direct children", t.k + " of " + D.limits.children);
    field(dl, "executor", x.x);
    field(dl, "model", x.m);
    field(dl, "auto-resumes", x.ar);
    field(dl, "interrupted", x.ir);
    (x.ex || []).forEach(function (pair) { field(dl, pair[0], pair[1]); });
    out.push(dl);
    if (x.pi) {
      var pl = el("p");
      if (t.p >= 0) {
        pl.appendChild(document.createTextNode("parent: "));
        var pb = el("button", "linkish", x.pi);
        pb.dataset.goto = String(t.p);
        pl.appendChild(pb);
      } else {
        pl.textContent = "parent: " + x.pi + (x.cy ? " (a loop of parent links)" : " (not in this view)");
      }
      out.push(pl);
    } else if (x.cy) {
      out.push(el("p", "muted", "in a loop of parent links"));
    }
    if (x.q) { out.push(el("h3", null, "prompt")); out.push(el("pre", "text", x.q)); }
    if (x.r) { out.push(el("h3", null, "result")); out.push(el("pre", "text", x.r)); }
    if (x.e) { out.push(el("h3", null, "error")); out.push(el("pre", "text", x.e)); }
    out.push(el("h3", null, "cost"));
    if (x.co) {
      // no dollar figure when no row is priced (x.co[0] is then ""), never a zero one
      var parts = x.co[0] ? [x.co[0]] : [];
      parts.push(x.co[1] + " tokens", x.co[2] + " rounds");
      if (x.co[3]) parts.push(x.co[0] ? x.co[3] + " unpriced" : "unpriced");
      if (x.co[4]) parts.push("estimated");
      out.push(el("p", null, parts.join(" \u00b7 ")));
    } else {
      out.push(el("p", "muted", "no cost recorded"));
    }
    if (x.ap) {
      out.push(el("h3", null, "approval requests"));
      out.push(table(["id", "kind", "asks for", "status", "answered by", "asked", "reason"], x.ap));
    }
    var quota = document.querySelector('[data-quota-for="' + t.c + '"]');
    if (quota) out.push(el("p", null, "creator's quota: " + quota.textContent));
    out.push(el("h3", null, "marker actions by turn"));
    if (x.tu) {
      x.tu.forEach(function (turn) {
        var s = el("div", "turn-block");
        s.appendChild(el("h3", null, "turn " + turn[0] + " \u00b7 " + turn[1]));
        s.appendChild(table(["kind", "outcome", "target", "reason"], turn[2]));
        out.push(s);
      });
    } else {
      out.push(el("p", "muted", "no audit records"));
    }
    out.push(el("h3", null, "attempts"));
    if (x.at) {
      out.push(table(["#", "kind", "resume reason", "checkpoint", "at", "error", "result"], x.at));
    } else {
      out.push(el("p", "muted", "no attempts recorded"));
    }
    detail.replaceChildren.apply(detail, out);
    paint(true);
  }

  function reveal(i) {
    for (var p = T[i].p; p >= 0; p = T[p].p) collapsed[p] = 0;
    recompute();
    for (var r = 0; r < shown; r++) {
      if (visible[r] === i) { box.scrollTop = Math.max(0, r * ROW - box.clientHeight / 3); break; }
    }
    show(i);
  }

  box.addEventListener("scroll", function () { window.requestAnimationFrame(function () { paint(false); }); });
  box.addEventListener("click", function (ev) {
    var target = ev.target instanceof Element ? ev.target : null;
    var rowEl = target && target.closest(".row");
    if (!rowEl) return;
    var i = Number(rowEl.dataset.index);
    if (target.closest(".toggle")) { collapsed[i] = collapsed[i] ? 0 : 1; recompute(); return; }
    show(i);
  });
  detail.addEventListener("click", function (ev) {
    var target = ev.target instanceof Element ? ev.target.closest("[data-goto]") : null;
    if (target) reveal(Number(target.dataset.goto));
  });
  document.querySelectorAll("input[data-status]").forEach(function (box) {
    box.addEventListener("change", function () {
      statusOn[Number(box.dataset.status)] = box.checked;
      recompute();
    });
  });
  document.getElementById("creator").addEventListener("change", function (ev) {
    creatorAt = Number(ev.target.value);
    recompute();
  });
  document.getElementById("search").addEventListener("input", function (ev) {
    query = String(ev.target.value).trim().toLowerCase();
    recompute();
  });
  document.getElementById("collapse-all").addEventListener("click", function () {
    for (var i = 0; i < N; i++) collapsed[i] = T[i].z > 1 ? 1 : 0;
    recompute();
  });
  document.getElementById("expand-all").addEventListener("click", function () {
    collapsed.fill(0);
    recompute();
  });
  recompute();
  document.documentElement.dataset.ready = "1";
  window.__viewReadyMs = performance.now();
})();
