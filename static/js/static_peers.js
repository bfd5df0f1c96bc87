// Static export only: the run page's "Compare with" fills in each peer's state and score from its cell's file
// (section#compare-with's data-cell: cells/<suite>/<benchmark>/<base model>.json, {"runs": {id: {"state", "score"}}},
// traces.selectors.cell_facts), worded as the live page words them: "(state, score)". The page itself carries only
// what names each peer (links, relation, seed), so a peer's new score changes one file of its cell, not the page of
// every run that offers it. Text nodes only; without script the links are there, the state and score are not.
(function () {
  "use strict";
  const section = document.getElementById("compare-with");
  if (!section || !section.dataset.cell) return;
  fetch(section.dataset.cell).then(function (response) {
    if (!response.ok) throw new Error("cell file: " + response.status);
    return response.json();
  }).then(function (cell) {
    section.querySelectorAll("li[data-run] .peer-facts").forEach(function (span) {
      const id = span.closest("li").dataset.run;
      if (!Object.prototype.hasOwnProperty.call(cell.runs, id)) return;
      const facts = cell.runs[id];
      span.textContent = "(" + String(facts.state) + (facts.score === null ? "" : ", " + String(facts.score)) + ")";
    });
  }).catch(function () { /* the links stay; the states and scores are not shown */ });
})();
