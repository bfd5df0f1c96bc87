// Static export only: the run page's jump to a step number or a time, in the browser, over runs/<id>/jump.json
// ({steps: [[index, elapsed seconds or null, page], ...]} of the agent trace). A jump opens the pre-rendered step
// page, steps/<page>.html#step-<index> (page 1 is this page). Searching the steps is the search page's
// (search/index.html, static/js/export_search.js).
(function () {
  "use strict";
  const jump = document.getElementById("static-jump");
  if (!jump) return;
  let index = null;

  function load() {
    if (!index) {
      index = fetch(jump.dataset.index).then(function (r) { return r.json(); });
    }
    return index;
  }

  function href(step) { return (step[2] === 1 ? "index.html" : "steps/" + step[2] + ".html") + "#step-" + step[0]; }

  // Seconds for "hour 7", "7h", "7.5", "7:30" (hours[:minutes]), null otherwise (as traces.views.parse_time_jump).
  function seconds(text) {
    const m = /^\s*(?:hour\s*)?(\d+(?:\.\d+)?)\s*h?\s*$|^\s*(\d+):([0-5]\d)\s*$/i.exec(text || "");
    if (!m) return null;
    return m[1] !== undefined ? parseFloat(m[1]) * 3600 : parseInt(m[2], 10) * 3600 + parseInt(m[3], 10) * 60;
  }

  jump.addEventListener("submit", function (event) {
    event.preventDefault();
    const step = parseInt(jump.elements.step.value, 10);
    const at = jump.elements.at ? seconds(jump.elements.at.value) : null;
    load().then(function (data) {
      if (!data.steps.length) return;
      let target = null;
      if (!isNaN(step)) {
        target = data.steps.find(function (s) { return s[0] >= step; }) || data.steps[data.steps.length - 1];
      } else if (at !== null) {
        target = data.steps.find(function (s) { return s[1] !== null && s[1] >= at; }) || data.steps[data.steps.length - 1];
      }
      if (target) window.location.href = href(target);
    });
  });
})();
