// Static export only: the search page (search/index.html) over the Pagefind bundle in ../pagefind/ (export/search.py
// writes it: one record per exported page of steps, each step's whole text under its own heading, so a matching
// page answers one sub-result per matching step). pagefind.js is imported the first time the search is used
// (typing, a filter, or a ?q= in the address), and it fetches only the parts of the index a search needs. The runs
// changed since the bundle was built have small indexes of their own, merged here (pagefind/shards.json: "merge",
// and "stale", the runs whose records in the bundle are hidden by the "not" filter). The address keeps the search
// (?q=&run=&agent=...), so a search can be linked; the run page's form sends ?run=<id> (and trace, kind, tool) to
// search one run. Links are made from the site's root as this page sees it, so the copy can live under any path.
// key=value words of the query (benchmark=gsm8k, agent="Opus 4.6", kind=tool_call), as the live search reads them
// (traces.selectors.search.split_filters), choose that filter when this page has it and one of its values is the
// value (case aside); the page says what it understood; the rest stay words. Read from the address (the header's
// box on every page sends q) and on Enter, not while typing.
(function () {
  "use strict";
  const form = document.getElementById("search-form");
  if (!form) return;
  const input = form.elements.q;
  const results = document.getElementById("search-results");
  const status = document.getElementById("search-status");
  const more = document.getElementById("search-more");
  const runNote = document.getElementById("search-run");
  const typedNote = document.getElementById("typed-filters");
  const TYPED = /(^|\s)([a-z_]+)=(?:"([^"]*)"|(\S+))(?=\s|$)/g;
  const PAGE = 20;
  const selects = Array.from(form.querySelectorAll("select"));
  const wanted = new URLSearchParams(window.location.search);
  const root = new URL("../", document.baseURI).pathname;  // this page is <root>search/index.html
  let pagefind = null;
  let stale = [];
  let generation = 0;
  let found = [];
  let loaded = 0;
  let shown = 0;
  let queue = [];

  input.value = wanted.get("q") || "";
  form.elements.run.value = wanted.get("run") || "";

  function say(text) { status.textContent = text; }

  // Pagefind's excerpt of a sub-result is words [start, start + length) of the record's text, split on white space,
  // with "<" and ">" escaped (not "&") and the sub-result's locations wrapped in <mark>...</mark>: a "&lt;" written in
  // a trace reads there as an escaped "<". So the excerpt is rebuilt from the record's own text (``data.content``) at
  // the same words: the start found where the words, escaped and marked as Pagefind marks them, give its excerpt
  // back. Returns [[text, marked], ...] (the words with their spaces), or null when no start does (a record holding a
  // zero-width space, which Pagefind splits on instead).
  function escaped(word) { return word.replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function excerptWords(data, sub) {
    if (data.raw_content.indexOf("\u200B") >= 0) return null;
    const words = data.content.split(/[\r\n\s]+/g);
    const at = new Set(sub.locations);
    const tokens = sub.excerpt.split(" ");
    const first = tokens.findIndex(function (t) { return t.indexOf("<mark>") === 0; });
    const starts = sub.locations.map(function (l) { return l - Math.max(first, 0); });
    for (const start of starts) {
      for (let length = tokens.length; start >= 0 && length <= tokens.length + 2; length++) {
        const span = words.slice(start, start + length);
        const built = span.map(function (w, i) {
          return at.has(start + i) ? "<mark>" + escaped(w) + "</mark>" : escaped(w);
        }).join(" ").trim();
        if (built !== sub.excerpt) continue;
        const parts = [];
        span.forEach(function (w, i) {
          if (w) parts.push([parts.length ? " " + w : w, at.has(start + i)]);
        });
        if (parts.length && parts[0][0] === "\u00b7" && !parts[0][1]) parts.shift();  // the step heading's "·"
        if (parts.length) parts[0][0] = parts[0][0].replace(/^ /, "");
        return parts;
      }
    }
    return null;
  }

  // Pagefind's excerpt parsed, where excerptWords could not rebuild it: "<" and ">" unescaped (a "&lt;" of the
  // trace itself reads as "<" here).
  function parsedWords(text) {
    const parts = [];
    let marked = false;
    text.replace(/^\u00b7\s*/, "").split(/(<mark>|<\/mark>)/).forEach(function (part) {
      if (part === "<mark>") marked = true;
      else if (part === "</mark>") marked = false;
      else if (part) parts.push([part.replace(/&lt;|&gt;/g, function (e) { return e === "&lt;" ? "<" : ">"; }), marked]);
    });
    return parts;
  }

  // The excerpt as text nodes and <mark> elements, never parsed as HTML (trace text is never markup on this site).
  // Pagefind marks a whole token between spaces ('"""Supervised', 'loss,'): the mark is narrowed to the token's
  // letters and digits, its space and the punctuation around them left outside.
  const EDGES = /^([^\p{L}\p{N}]*)([\s\S]*?)([^\p{L}\p{N}]*)$/u;
  function excerpt(target, parts) {
    parts.forEach(function (part) {
      const edges = part[1] ? EDGES.exec(part[0]) : null;
      if (edges && edges[2]) {
        if (edges[1]) target.appendChild(document.createTextNode(edges[1]));
        target.appendChild(document.createElement("mark")).textContent = edges[2];
        if (edges[3]) target.appendChild(document.createTextNode(edges[3]));
      } else {
        target.appendChild(document.createTextNode(part[0]));
      }
    });
  }

  function load() {
    if (!pagefind) {
      say("Loading the search index…");
      const script = new URL(form.dataset.pagefind, document.baseURI);
      pagefind = import(script.href).then(async function (pf) {
        await pf.options({ excerptLength: 40, baseUrl: root });
        await pf.init();
        const shards = await (await fetch(new URL("shards.json", script))).json();
        stale = shards.stale;
        await Promise.all(shards.merge.map(function (path) {
          return pf.mergeIndex(new URL(path, script).pathname, { baseUrl: root });
        }));
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

  // Takes the key=value words of the search box that name a filter of this page and one of its values out of it,
  // choosing that value; says so in #typed-filters (as text). A known filter with an unknown value stays words.
  function readTyped() {
    const understood = [];
    const refused = [];
    const rest = input.value.replace(TYPED, function (all, space, key, quoted, bare) {
      const select = selects.find(function (s) { return s.name === key; });
      if (!select) return all;
      const value = (quoted !== undefined ? quoted : bare).trim().toLowerCase();
      const option = Array.from(select.options).find(function (o) { return o.value && o.value.toLowerCase() === value; });
      const label = select.parentNode.firstChild.textContent.trim();
      if (!option) {
        refused.push([all.trim(), label]);
        return all;
      }
      select.value = option.value;
      understood.push([all.trim(), label + ": " + option.value]);
      return space;
    }).replace(/\s+/g, " ").trim();
    if (!understood.length && !refused.length) {
      typedNote.hidden = true;  // this search typed none: the last one's note no longer applies
      return;
    }
    if (understood.length) input.value = rest;
    typedNote.replaceChildren();
    function add(tag, text) {
      const el = typedNote.appendChild(document.createElement(tag));
      el.textContent = text;
    }
    if (understood.length) {
      typedNote.append("Read as filters: ");
      understood.forEach(function (u, i) {
        if (i) typedNote.append(", ");
        add("code", u[0]);
        typedNote.append(" is ");
        add("strong", u[1]);
      });
      typedNote.append(rest ? ", searching " : ".");
      if (rest) { add("q", rest); typedNote.append("."); }
    }
    refused.forEach(function (r) {
      if (typedNote.childNodes.length) typedNote.append(" ");
      add("code", r[0]);
      typedNote.append(": not a value of the filter " + r[1] + " in this copy of the site: searched as words.");
    });
    typedNote.hidden = false;
  }

  function filters() {
    const chosen = {};
    selects.concat([form.elements.run]).forEach(function (el) { if (el.value) chosen[el.name] = el.value; });
    return chosen;
  }

  // Pagefind's filters for the chosen ones: a record (a page of steps) lists every kind and tool of its steps, and
  // the records of the base bundle whose run changed since are left out.
  function pagefindFilters(chosen) {
    return Object.assign({}, chosen, stale.length ? { not: { base: stale } } : {});
  }

  function remember(q, chosen) {
    const url = new URL(window.location.href);
    url.search = new URLSearchParams(Object.assign(q ? { q: q } : {}, chosen)).toString();
    history.replaceState(null, "", url);
  }

  // A hit's page with ?mark=<query> before its #step-N: the step page wraps the query's words in <mark> (trace.js).
  // Pagefind's URLs start at the site's root (``root``, "/.../runs/..."): made relative to this page
  // (search/index.html), so the export works from any folder of a web server.
  function marked(url, q) {
    if (url.indexOf(root) === 0) url = "../" + url.slice(root.length);
    else if (url.charAt(0) === "/") url = ".." + url;
    const at = url.indexOf("#");
    const page = at < 0 ? url : url.slice(0, at);
    return page + (page.indexOf("?") < 0 ? "?" : "&") + "mark=" + encodeURIComponent(q) + (at < 0 ? "" : url.slice(at));
  }

  // One result per matching step: a record's sub-results (one per step heading, "step-N"), narrowed to the chosen
  // kind and tool (the record's meta "steps" says each step's).
  function stepHits(data) {
    const steps = {};
    JSON.parse(data.meta.steps || "[]").forEach(function (s) { steps["step-" + s[0]] = s; });
    return data.sub_results.map(function (sub) {
      const step = steps[sub.url.split("#")[1]];
      return step && { url: sub.url, excerpt: excerptWords(data, sub) || parsedWords(sub.excerpt), title: data.meta.title,
        run: data.meta.run, trace: data.meta.trace, index: step[0], kind: step[1], tool: step[2] };
    }).filter(function (h) {
      return h && (!form.elements.kind.value || h.kind === form.elements.kind.value)
        && (!form.elements.tool.value || h.tool === form.elements.tool.value);
    });
  }

  function hit(step) {
    const li = document.createElement("li");
    li.className = "search-hit";
    li.dataset.run = step.run;
    li.dataset.step = step.index;
    const head = li.appendChild(document.createElement("div"));
    head.className = "hit-head";
    const link = head.appendChild(document.createElement("a"));
    link.href = marked(step.url, input.value.trim());
    link.textContent = step.title;
    const where = head.appendChild(document.createElement("span"));
    where.className = "muted";
    where.textContent = "step " + step.index + " · " + step.kind + (step.tool ? " " + step.tool : "")
      + (step.trace === "agent" ? "" : " · " + step.trace + " trace");
    const text = li.appendChild(document.createElement("p"));
    text.className = "excerpt";
    excerpt(text, step.excerpt);
    return li;
  }

  // The next PAGE matching steps, after those shown, loading the records (pages of steps) they come from as needed;
  // the first page replaces the last search's.
  async function showMore(mine) {
    while (queue.length < PAGE && loaded < found.length) {
      const batch = await Promise.all(found.slice(loaded, loaded + PAGE).map(function (r) { return r.data(); }));
      if (mine !== generation) return false;
      loaded += batch.length;
      batch.forEach(function (data) { queue = queue.concat(stepHits(data)); });
    }
    if (mine !== generation) return false;
    if (!shown) results.replaceChildren();
    const page = queue.splice(0, PAGE);
    page.forEach(function (step) { results.appendChild(hit(step)); });
    shown += page.length;
    more.hidden = !queue.length && loaded >= found.length;
    if (form.elements.run.value && page.length) {
      runNote.querySelector(".run-title").textContent = page[0].title;
    }
    return true;
  }

  function counted(q) {
    const steps = shown + queue.length;
    if (loaded >= found.length) {
      return steps + " step" + (steps === 1 ? " matches" : "s match") + " \u201c" + q + "\u201d"
        + (steps > PAGE ? "; the best " + PAGE + " first." : ".");
    }
    return steps + " steps match \u201c" + q + "\u201d in the best " + loaded + " of the " + found.length
      + " pages of steps that hold the words; more below.";
  }

  async function search(wait, typed) {
    const mine = ++generation;
    const run = form.elements.run.value;
    runNote.hidden = !run;
    if (run && !runNote.querySelector(".run-title").textContent) runNote.querySelector(".run-title").textContent = run;
    const pf = await load();  // first: it fills the filters' choices (and picks those the address names)
    if (mine !== generation) return;
    if (typed) readTyped();
    const q = input.value.trim();
    const chosen = filters();
    remember(q, chosen);
    if (!q) {
      results.replaceChildren();
      more.hidden = true;
      say("Type a word to search every step.");
      return;
    }
    const options = { filters: pagefindFilters(chosen) };
    const answer = wait ? await pf.debouncedSearch(q, options, 250) : await pf.search(q, options);
    if (answer === null || mine !== generation) return;  // a newer search replaced this one
    found = answer.results;
    loaded = 0;
    shown = 0;
    queue = [];
    if (!(await showMore(mine))) return;
    say(counted(q));
    results.dataset.query = q;  // the search these results answer
  }

  input.addEventListener("input", function () { search(true); });
  selects.forEach(function (select) { select.addEventListener("change", function () { search(false); }); });
  form.addEventListener("submit", function (event) { event.preventDefault(); search(false, true); });
  more.addEventListener("click", async function () {
    const mine = generation;
    if (await showMore(mine)) say(counted(input.value.trim()));
  });
  if (input.value || form.elements.run.value) search(false, true);
})();
