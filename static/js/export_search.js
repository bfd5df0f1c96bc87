// Static export only: the search page (search/index.html) over the Pagefind bundle in ../pagefind/ (export/search.py
// writes it: one record per step of every run's traces, the step's whole text). pagefind.js is imported the first
// time the search is used (typing, a filter, or a ?q= in the address), and it fetches only the parts of the index a
// search needs. The address keeps the search (?q=&run=&agent=...), so a search can be linked; the run page's form
// sends ?run=<id> (and trace, kind, tool) to search one run.
(function () {
  "use strict";
  const form = document.getElementById("search-form");
  if (!form) return;
  const input = form.elements.q;
  const results = document.getElementById("search-results");
  const status = document.getElementById("search-status");
  const more = document.getElementById("search-more");
  const runNote = document.getElementById("search-run");
  const PAGE = 20;
  const selects = Array.from(form.querySelectorAll("select"));
  const wanted = new URLSearchParams(window.location.search);
  let pagefind = null;
  let generation = 0;
  let found = [];
  let shown = 0;

  input.value = wanted.get("q") || "";
  form.elements.run.value = wanted.get("run") || "";

  function say(text) { status.textContent = text; }

  // Pagefind's excerpt is the step's text with "<" and ">" escaped and the matched words in <mark>...</mark>: it is
  // rebuilt here as text nodes and <mark> elements, never parsed as HTML (trace text is never markup on this site).
  function excerpt(target, text) {
    let mark = null;
    text.split(/(<mark>|<\/mark>)/).forEach(function (part) {
      if (part === "<mark>") {
        mark = target.appendChild(document.createElement("mark"));
      } else if (part === "</mark>") {
        mark = null;
      } else if (part) {
        const plain = part.replace(/&lt;|&gt;/g, function (e) { return e === "&lt;" ? "<" : ">"; });
        (mark || target).appendChild(document.createTextNode(plain));
      }
    });
  }

  function load() {
    if (!pagefind) {
      say("Loading the search index…");
      pagefind = import(new URL(form.dataset.pagefind, document.baseURI).href).then(async function (pf) {
        await pf.options({ excerptLength: 40 });
        await pf.init();
        const counts = await pf.filters();
        selects.forEach(function (select) {
          const values = Object.keys(counts[select.name] || {}).sort();
          const want = wanted.get(select.name) || "";
          if (want && values.indexOf(want) === -1) values.unshift(want);
          values.forEach(function (value) { select.appendChild(new Option(value, value)); });
          select.value = want;
        });
        return pf;
      }, function (error) {
        pagefind = null;
        say("The search index could not be loaded: this copy of the site must be served over http(s), not opened "
          + "as files (" + error + ").");
        throw error;
      });
    }
    return pagefind;
  }

  function filters() {
    const chosen = {};
    selects.concat([form.elements.run]).forEach(function (el) { if (el.value) chosen[el.name] = el.value; });
    return chosen;
  }

  function remember(q, chosen) {
    const url = new URL(window.location.href);
    url.search = new URLSearchParams(Object.assign(q ? { q: q } : {}, chosen)).toString();
    history.replaceState(null, "", url);
  }

  // A hit's page with ?mark=<query> before its #step-N: the step page wraps the query's words in <mark> (trace.js).
  // Pagefind's URLs start at the site's root ("/runs/..."): made relative to this page (search/index.html), so the
  // export works from any folder of a web server.
  function marked(url, q) {
    if (url.charAt(0) === "/") url = ".." + url;
    const at = url.indexOf("#");
    const page = at < 0 ? url : url.slice(0, at);
    return page + (page.indexOf("?") < 0 ? "?" : "&") + "mark=" + encodeURIComponent(q) + (at < 0 ? "" : url.slice(at));
  }

  function hit(data) {
    const li = document.createElement("li");
    li.className = "search-hit";
    li.dataset.run = data.meta.run;
    li.dataset.step = data.meta.step;
    const head = li.appendChild(document.createElement("div"));
    head.className = "hit-head";
    const link = head.appendChild(document.createElement("a"));
    link.href = marked(data.url, input.value.trim());
    link.textContent = data.meta.title;
    const where = head.appendChild(document.createElement("span"));
    where.className = "muted";
    where.textContent = "step " + data.meta.step + " · " + data.meta.kind + (data.meta.tool ? " " + data.meta.tool : "")
      + (data.meta.trace === "agent" ? "" : " · " + data.meta.trace + " trace");
    const text = li.appendChild(document.createElement("p"));
    text.className = "excerpt";
    excerpt(text, data.excerpt);
    return li;
  }

  // The next PAGE results (their records fetched now), after those shown; the first page replaces the last search's.
  async function showMore(mine) {
    const page = await Promise.all(found.slice(shown, shown + PAGE).map(function (r) { return r.data(); }));
    if (mine !== generation) return false;
    if (!shown) results.replaceChildren();
    page.forEach(function (data) { results.appendChild(hit(data)); });
    shown += page.length;
    more.hidden = shown >= found.length;
    if (form.elements.run.value && page.length) {
      runNote.querySelector(".run-title").textContent = page[0].meta.title;
    }
    return true;
  }

  async function search(wait) {
    const mine = ++generation;
    const run = form.elements.run.value;
    runNote.hidden = !run;
    if (run && !runNote.querySelector(".run-title").textContent) runNote.querySelector(".run-title").textContent = run;
    const pf = await load();  // first: it fills the filters' choices (and picks those the address names)
    if (mine !== generation) return;
    const q = input.value.trim();
    const chosen = filters();
    remember(q, chosen);
    if (!q) {
      results.replaceChildren();
      more.hidden = true;
      say("Type a word to search every step.");
      return;
    }
    const answer = wait ? await pf.debouncedSearch(q, { filters: chosen }, 250) : await pf.search(q, { filters: chosen });
    if (answer === null || mine !== generation) return;  // a newer search replaced this one
    found = answer.results;
    shown = 0;
    if (!(await showMore(mine))) return;
    say(found.length + " step" + (found.length === 1 ? " matches" : "s match") + " “" + q + "”"
      + (found.length > PAGE ? "; the best " + PAGE + " first." : "."));
    results.dataset.query = q;  // the search these results answer
  }

  input.addEventListener("input", function () { search(true); });
  selects.forEach(function (select) { select.addEventListener("change", function () { search(false); }); });
  form.addEventListener("submit", function (event) { event.preventDefault(); search(false); });
  more.addEventListener("click", function () { showMore(generation); });
  if (input.value || form.elements.run.value) search(false);
})();
