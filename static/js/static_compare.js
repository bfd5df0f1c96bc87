// Static export only: the comparison page (compare/index.html?runs=a,b[,c,d]) built in the browser from one side
// file per run, runs/<id>/compare.json (traces.selectors.compare_side: the run's header, its rows as shown, its
// phase axis for each budget, its first steps), as the live /compare/?runs= renders traces/compare.html: the facts
// and facets tables with the rows that differ, the phase axes, and the agent traces side by side, aligned as
// traces.selectors.compare.read_aligned aligns them (by elapsed time when every run has clocks, else by position).
// Trace text is untrusted: every text goes in as a text node (textContent), never as HTML.
(function () {
  "use strict";
  const root = document.getElementById("static-compare");
  if (!root) return;
  const MAX = parseInt(root.dataset.maxRuns, 10) || 4;
  const SAFE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;  // a run id that can name a folder of the export

  // Every run id asked for in ?runs=a,b (or repeated runs=), each once in order: compare.asked_runs.
  function asked(params) {
    const ids = [];
    for (const item of params.getAll("runs")) {
      for (let part of item.split(",")) {
        part = part.trim().slice(0, 64);
        if (part && ids.indexOf(part) < 0 && ids.length < 64) ids.push(part);
      }
    }
    return ids;
  }

  // An element with attributes (className, other names as attributes) and children (strings become text nodes).
  function el(tag, attrs) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined) continue;
      if (name === "className") node.className = value;
      else node.setAttribute(name, value);
    }
    for (let i = 2; i < arguments.length; i++) {
      const child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function load(id) {
    if (!SAFE.test(id)) return Promise.resolve(null);
    return fetch(root.dataset.runsBase + encodeURIComponent(id) + "/" + root.dataset.side)
      .then(function (r) { return r.ok ? r.json() : null; })
      .catch(function () { return null; });
  }

  function runNo(n) { return el("span", {className: "run-no"}, String(n)); }

  // One table row: compare._row (differs when the values are not all the same), shown as the template shows it.
  function row(key, label, values) {
    const differs = new Set(values).size > 1;
    const tr = el("tr", {className: differs ? "differs" : "", "data-key": key}, el("th", {scope: "row"}, label));
    for (const v of values) tr.appendChild(el("td", {}, v || "–"));
    return tr;
  }

  function valueOf(list, key) {
    const found = list.find(function (r) { return r.key === key; });
    return found ? found.value : "";
  }

  function compareArrays(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return a.length - b.length;
  }

  // The rows of the facts table: compare._facts over the runs (judge rows sorted by judge, attempt, kind; a phase's
  // time shown when the run has phases on this comparison's axis or seconds in it).
  function factRows(sides, axes) {
    const rows = sides[0].facts.map(function (r) {
      return [r.key, r.label, sides.map(function (s) { return valueOf(s.facts, r.key); })];
    });
    const judges = new Map();
    for (const s of sides) for (const j of s.judges) if (!judges.has(j.key)) judges.set(j.key, j);
    const sorted = Array.from(judges.values()).sort(function (a, b) { return compareArrays(a.order, b.order); });
    for (const j of sorted) rows.push([j.key, j.label, sides.map(function (s) { return valueOf(s.judges, j.key); })]);
    for (const p of sides[0].phases) {
      rows.push([p.key, p.label, sides.map(function (s, i) {
        const mine = s.phases.find(function (q) { return q.key === p.key; });
        return mine && (axes[i].bins.length || mine.nonzero) ? mine.value : "";
      })]);
    }
    return rows;
  }

  // The rows of the facets table: compare._facet_rows (the facets' order in FACET_NAME, then the others by name).
  function facetRows(sides) {
    const all = new Map();
    for (const s of sides) for (const f of s.facets) if (!all.has(f.key)) all.set(f.key, f);
    const known = Array.from(all.values()).filter(function (f) { return f.rank !== null; })
      .sort(function (a, b) { return a.rank - b.rank; });
    const rest = Array.from(all.values()).filter(function (f) { return f.rank === null; })
      .sort(function (a, b) { return a.key < b.key ? -1 : a.key > b.key ? 1 : 0; });
    return known.concat(rest).map(function (f) {
      return [f.key, f.label, sides.map(function (s) { return valueOf(s.facets, f.key); })];
    });
  }

  // The first page of the aligned traces: compare.read_aligned from the start (after = -1 for every run).
  function aligned(sides) {
    const limit = sides[0].limit;
    const mode = sides.every(function (s) { return s.has_times; }) ? "time" : "index";
    const rows = [];
    let shown;
    if (mode === "index") {
      shown = sides.map(function (s) { return s.steps.slice(0, limit); });
      const n = Math.max(0, ...shown.map(function (s) { return s.length; }));
      for (let k = 0; k < n; k++) rows.push({at: null, cells: shown.map(function (s) { return s[k] || null; })});
    } else {
      let horizon = Infinity;
      for (const s of sides) if (s.steps.length > limit) horizon = Math.min(horizon, s.steps[limit - 1].at_s);
      shown = sides.map(function (s) {
        return s.steps.slice(0, limit).filter(function (st) { return st.at_s <= horizon; });
      });
      const merged = [];
      shown.forEach(function (list, col) { list.forEach(function (st) { merged.push([st.at_s, col, st]); }); });
      merged.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2].index - b[2].index; });
      for (const [, col, st] of merged) {
        if (!rows.length || rows[rows.length - 1].cells[col] !== null) {
          rows.push({at: st.at_text, cells: sides.map(function () { return null; })});
        }
        rows[rows.length - 1].cells[col] = st;
      }
    }
    const more = sides.some(function (s, i) { return s.steps.length > shown[i].length; });
    return {mode: mode, rows: rows, more: more};
  }

  function stepCell(st) {
    const td = el("td", {className: "cell"});
    if (!st) return td;
    const box = el("div", {className: "compare-step kind-" + st.kind + (st.is_error ? " error" : "")},
      el("a", {className: "step-link", href: st.href}, "step " + st.index), " ",
      el("span", {className: "kind"}, st.kind));
    if (st.tool) box.append(" ", el("span", {className: "tool"}, st.tool));
    if (st.elapsed_s !== null) box.append(" ", el("span", {className: "muted"}, st.elapsed_text));
    // White space between the parts as the template's lines have it (text that a copy or a reader keeps apart).
    if (st.input) box.append(" ", el("pre", {className: "input"}, st.input + (st.input_cut ? "…" : "")));
    if (st.output) box.append(" ", el("pre", {className: "output"}, st.output + (st.output_cut ? "…" : "")));
    td.appendChild(box);
    return td;
  }

  function table(id, head, rows) {
    const thead = el("thead", {}, el("tr", {}, ...head));
    const tbody = el("tbody", {}, ...rows.map(function (r) { return row(r[0], r[1], r[2]); }));
    return el("div", {className: "compare-scroll"}, el("table", {className: "compare", id: id}, thead, tbody));
  }

  function build(sides, ids, missing, askedCount, runsLink) {
    const n = sides.length;
    document.title = "Compare " + n + " runs · PostTrainBench Explorer";
    const parts = [el("h1", {}, "Compare " + n + " run" + (n === 1 ? "" : "s"))];
    if (askedCount > MAX) {
      parts.push(el("p", {className: "notice", id: "compare-capped"}, "Up to " + MAX + " runs side by side: the first "
        + MAX + " of the " + askedCount + " asked for are shown."));
    }
    if (n === 1) {
      parts.push(el("p", {className: "notice", id: "compare-one"}, "One run: pick another on the ",
        el("a", {href: runsLink}, "runs list"), " or from this run's page (\"Compare with\")."));
    }
    if (missing.length) {
      const note = el("p", {className: "notice"}, "No run ");
      missing.forEach(function (m, i) { note.append(el("code", {}, m), i < missing.length - 1 ? ", " : ""); });
      note.append(": left out.");
      parts.push(note);
    }
    const budget = Math.max(...sides.map(function (s) { return s.budget_s; }));
    const axes = sides.map(function (s) {
      return s.axes.find(function (a) { return a.budget_s === budget; }) ||
        {budget_s: budget, budget_hm: "", bins: [], titles: [], used_pct: null};
    });
    const budgetHm = (axes.find(function (a) { return a.budget_hm; }) || {budget_hm: ""}).budget_hm;
    const heads = sides.map(function (s, i) {
      return el("th", {className: "compare-run", "data-run": s.run_id}, runNo(i + 1), " ",
        el("a", {href: s.href}, s.title), el("br"), el("span", {className: "muted run-dir"}, s.method + "/" + s.run_dir));
    });
    parts.push(table("compare-facts", [el("th")].concat(heads), factRows(sides, axes)));
    parts.push(el("p", {className: "muted legend"}, el("span", {className: "differs-key"}, "Highlighted"),
      " rows differ between the runs."));

    parts.push(el("h2", {}, "Time in phases"));
    const phases = el("div", {className: "phase-axes", id: "compare-phases"});
    sides.forEach(function (s, i) {
      const axis = el("div", {className: "phase-axis", role: "img",
        "aria-label": "phases of " + s.title + " from 0 to " + budgetHm});
      axes[i].bins.forEach(function (b, k) {
        const bar = el("span", {className: "phase phase-" + b.phase, title: axes[i].titles[k]});
        bar.style.left = b.left_pct.toFixed(3) + "%";
        bar.style.width = b.width_pct.toFixed(3) + "%";
        axis.appendChild(bar);
      });
      if (!axes[i].bins.length) {
        axis.appendChild(el("span", {className: "muted no-phases"}, s.has_times ? "no phases" : "no clocks in this trace"));
      }
      if (axes[i].used_pct !== null) {
        const end = el("span", {className: "phase-end", title: s.used_title});
        end.style.left = axes[i].used_pct.toFixed(3) + "%";
        axis.appendChild(end);
      }
      phases.appendChild(el("div", {className: "phase-axis-row"},
        el("span", {className: "phase-axis-name", title: s.title}, runNo(i + 1), " " + s.name), " ", axis));
    });
    phases.appendChild(el("div", {className: "phase-axis-row"}, el("span", {className: "phase-axis-name"}),
      el("div", {className: "phase-scale"}, el("span", {}, "0:00"), el("span", {}, budgetHm + " (h:mm)"))));
    const legend = document.getElementById("compare-legend");
    if (legend) phases.appendChild(legend.content.cloneNode(true));
    parts.push(phases);

    const names = sides.map(function (s, i) { return el("th", {}, runNo(i + 1), " " + s.name); });
    const facets = facetRows(sides);
    if (facets.length) {
      parts.push(el("h2", {}, "What the agents did"));
      parts.push(table("compare-facets", [el("th", {}, "Facet")].concat(names), facets));
    }

    const steps = aligned(sides);
    parts.push(el("h2", {id: "steps"}, "The traces side by side"));
    parts.push(el("p", {className: "muted"}, (steps.mode === "time"
      ? "Aligned by elapsed time (h:mm:ss since each trace's first timestamp): steps on one row happened at about the same time."
      : "A run has no clocks: aligned by position (the k-th step of each run after the page's start).")
      + " " + steps.rows.length + " row" + (steps.rows.length === 1 ? "" : "s") + " here; each step links to its own page."));
    const body = el("tbody", {id: "compare-rows"});
    for (const r of steps.rows) {
      // Aligned by position, a row has no time: no first column (its "#" was empty on every row).
      const at = steps.mode === "time" ? [el("td", {className: "at"}, r.at || "")] : [];
      body.appendChild(el("tr", {}, ...at, ...r.cells.map(stepCell)));
    }
    if (steps.more) {
      body.appendChild(el("tr", {}, el("td", {colspan: String(steps.mode === "time" ? n + 1 : n), className: "muted"}, "More steps: on each run's page.")));
    }
    const stepNames = sides.map(function (s, i) { return el("th", {}, runNo(i + 1), " " + s.name); });
    parts.push(el("div", {className: "compare-scroll"}, el("table", {className: "compare-steps", id: "compare-steps"},
      el("thead", {}, el("tr", {}, ...(steps.mode === "time" ? [el("th", {className: "at"}, "Elapsed")] : []), ...stepNames)),
      body)));
    root.replaceChildren(...parts);
    root.dataset.ready = "true";
  }

  const ids = asked(new URLSearchParams(window.location.search));
  const runsLink = (root.querySelector("a[data-runs-list]") || {getAttribute: function () { return ""; }})
    .getAttribute("href");
  if (!ids.length) {
    root.dataset.ready = "true";
    return;
  }
  const shownIds = ids.slice(0, MAX);
  Promise.all(shownIds.map(load)).then(function (loaded) {
    const sides = loaded.filter(Boolean);
    const missing = shownIds.filter(function (id, i) { return !loaded[i]; });
    if (!sides.length) {
      const note = el("p", {className: "notice", id: "compare-none"}, "No run ");
      missing.forEach(function (m, i) { note.append(el("code", {}, m), i < missing.length - 1 ? ", " : ""); });
      note.append(" in this copy of the site.");
      root.replaceChildren(el("h1", {}, "Compare runs"), note);
      root.dataset.ready = "true";
      return;
    }
    build(sides, shownIds, missing, ids.length, runsLink);
  });
})();
