// Static export only (the live site does both on the server): sorts a table (the leaderboard, the runs list) by a
// clicked column header (a[data-sort], first click in data-first's direction, a second click flips it; empty cells
// stay last; a cell's data-sort-value, when it has one, is what it sorts by: seconds, an ISO date, a fraction; on the
// leaderboard, the grey reference rows stay apart from the agents as on the live site),
// moving the ▲/▼ arrow and aria-sort to that header, and filters the runs list by the page's query
// (?agent=&benchmark=&base_model=&state=&flagged=), like /runs/ does.
(function () {
  "use strict";

  function value(cell) {
    if (cell && cell.dataset.sortValue !== undefined) {
      const raw = cell.dataset.sortValue;
      const number = Number(raw);
      return raw === "" ? null : isNaN(number) ? raw.toLowerCase() : number;
    }
    const text = cell ? cell.textContent.trim() : "";
    const number = parseFloat(text);
    return isNaN(number) ? (text === "" || text === "–" ? null : text.toLowerCase()) : number;
  }

  document.addEventListener("click", function (event) {
    const link = event.target.closest("a[data-sort]");
    if (!link) return;
    event.preventDefault();
    const th = link.closest("th");
    const table = link.closest("table");
    const column = Array.from(th.parentNode.children).indexOf(th);
    const sameColumn = table.dataset.sort === link.dataset.sort;
    const dir = sameColumn ? (table.dataset.dir === "asc" ? "desc" : "asc") : link.dataset.first;
    const sign = dir === "asc" ? 1 : -1;
    let rows = Array.from(table.tBodies[0].rows);
    rows.forEach(function (row, i) { if (row.dataset.order === undefined) row.dataset.order = i; });
    function by(col, s) {
      return function (a, b) {
        const x = value(a.cells[col]);
        const y = value(b.cells[col]);
        if (x === null || y === null) return (x === null) - (y === null);
        return (x < y ? -1 : x > y ? 1 : 0) * s;
      };
    }
    if (table.classList.contains("leaderboard")) {
      // As the live leaderboard (leaderboard.selectors._sorted): by rank or average, the grey reference rows sit
      // where their average places them; by any other column the agents are sorted and the reference rows follow
      // them, in their first order.
      const heads = Array.from(th.parentNode.children);
      const average = heads.findIndex(function (h) { return h.querySelector('a[data-sort="average"]'); });
      if (link.dataset.sort === "rank" || link.dataset.sort === "average") {
        rows.sort(by(average, link.dataset.sort === "rank" ? -sign : sign));
      } else {
        const agents = rows.filter(function (r) { return !r.classList.contains("baseline"); }).sort(by(column, sign));
        const references = rows.filter(function (r) { return r.classList.contains("baseline"); });
        references.sort(function (a, b) { return a.dataset.order - b.dataset.order; });
        rows = agents.concat(references);
      }
    } else {
      rows.sort(by(column, sign));
    }
    rows.forEach(function (row) { table.tBodies[0].appendChild(row); });
    table.dataset.sort = link.dataset.sort;
    table.dataset.dir = dir;
    table.querySelectorAll("thead .sort-arrow").forEach(function (arrow) { arrow.remove(); });
    table.querySelectorAll("thead th[aria-sort]").forEach(function (head) { head.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    const arrow = document.createElement("span");
    arrow.className = "sort-arrow";
    arrow.setAttribute("aria-hidden", "true");
    arrow.textContent = dir === "asc" ? "▲" : "▼";
    link.appendChild(arrow);
  });

  const runs = document.querySelector("table.runs");
  if (!runs) return;
  const query = new URLSearchParams(window.location.search);
  const form = document.querySelector("form.filters");
  const truthy = {"1": "1", "true": "1", "yes": "1", "0": "0", "false": "0", "no": "0"};
  query.forEach(function (v, k) { if (form.elements[k]) form.elements[k].value = v; });
  const want = {
    agent: query.get("agent"), benchmark: query.get("benchmark"), baseModel: query.get("base_model"),
    state: query.get("state"), flagged: truthy[(query.get("flagged") || "").toLowerCase()],
  };
  let shown = 0;
  const rows = Array.from(runs.tBodies[0].rows);
  rows.forEach(function (row) {
    const d = row.dataset;
    const match = (!want.agent || d.agent === want.agent || d.method === want.agent)
      && (!want.benchmark || d.benchmark === want.benchmark) && (!want.baseModel || d.baseModel === want.baseModel)
      && (!want.state || d.state === want.state) && (!want.flagged || d.flagged === want.flagged);
    row.hidden = !match;
    shown += match ? 1 : 0;
  });
  const count = document.getElementById("runs-count");
  if (count) count.textContent = shown + " of " + rows.length + " runs match. " + count.textContent;
})();
