// Static export only: the run page's trace search and jump, in the browser, over runs/<id>/search.json
// ({chars, steps: [[index, kind, tool, elapsed seconds, page, lowercased text cut to chars], ...]}).
// Results and jumps link to the pre-rendered step pages, steps/<page>.html#step-<index> (page 1 is this page).
(function () {
  "use strict";
  const search = document.getElementById("static-search");
  const jump = document.getElementById("static-jump");
  const results = document.getElementById("static-results");
  if (!search) return;
  const MAX_RESULTS = 200;
  let index = null;

  function load() {
    if (!index) {
      index = fetch(search.dataset.index).then(function (r) { return r.json(); });
    }
    return index;
  }

  function href(step) { return (step[4] === 1 ? "index.html" : "steps/" + step[4] + ".html") + "#step-" + step[0]; }

  // Seconds for "hour 7", "7h", "7.5", "7:30" (hours[:minutes]), null otherwise (as traces.views.parse_time_jump).
  function seconds(text) {
    const m = /^\s*(?:hour\s*)?(\d+(?:\.\d+)?)\s*h?\s*$|^\s*(\d+):([0-5]\d)\s*$/i.exec(text || "");
    if (!m) return null;
    return m[1] !== undefined ? parseFloat(m[1]) * 3600 : parseInt(m[2], 10) * 3600 + parseInt(m[3], 10) * 60;
  }

  search.addEventListener("submit", function (event) {
    event.preventDefault();
    const kind = search.elements.kind.value;
    const tool = search.elements.tool.value;
    const q = search.elements.q.value.trim().toLowerCase();
    load().then(function (data) {
      const found = data.steps.filter(function (s) {
        return (!kind || s[1] === kind) && (!tool || s[2] === tool) && (!q || s[5].indexOf(q) !== -1);
      });
      results.replaceChildren();
      const head = document.createElement("li");
      head.className = "muted";
      head.textContent = found.length + " step" + (found.length === 1 ? "" : "s") + " match (searching the first "
        + data.chars + " characters of each step)" + (found.length > MAX_RESULTS ? "; the first " + MAX_RESULTS + ":" : ".");
      results.appendChild(head);
      found.slice(0, MAX_RESULTS).forEach(function (s) {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = href(s);
        a.textContent = "#" + s[0];
        li.appendChild(a);
        li.appendChild(document.createTextNode(" " + s[1] + (s[2] ? " " + s[2] : "") + ": " + s[5].slice(0, 160)));
        results.appendChild(li);
      });
      results.hidden = false;
    });
  });

  jump.addEventListener("submit", function (event) {
    event.preventDefault();
    const step = parseInt(jump.elements.step.value, 10);
    const at = seconds(jump.elements.at.value);
    load().then(function (data) {
      if (!data.steps.length) return;
      let target = null;
      if (!isNaN(step)) {
        target = data.steps.find(function (s) { return s[0] >= step; }) || data.steps[data.steps.length - 1];
      } else if (at !== null) {
        target = data.steps.find(function (s) { return s[3] !== null && s[3] >= at; }) || data.steps[data.steps.length - 1];
      }
      if (target) window.location.href = href(target);
    });
  });
})();
