// Keyboard moves through a trace: j / ArrowDown next step, k / ArrowUp previous step; the URL follows (?step=N).
// Past the last step shown, j loads the next page (in place on the live site, the next file on a static copy);
// before the first, k loads the earlier page the same way ("Earlier steps") and goes on from its last step, so a
// reader opened deep in a trace (?step=20000) walks back across pages; while that page loads its button says so.
(function () {
  let walkingBackFrom = null;  // the first step shown when k asked for the earlier page (live site)
  function steps() { return Array.from(document.querySelectorAll("#steps li.step")); }
  function current(list) {
    const focused = document.querySelector("#steps li.step.focus");
    return focused ? list.indexOf(focused) : -1;
  }
  function show(el) {
    steps().forEach(function (other) { other.classList.remove("focus"); });
    el.classList.add("focus");
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "center" });
    const url = new URL(window.location.href);
    if (url.pathname.endsWith(".html")) {  // a static copy: the file is the page, the hash the step
      url.hash = "step-" + el.dataset.index;
    } else {
      url.searchParams.set("step", el.dataset.index);
      url.searchParams.delete("at");
      url.hash = "step-" + el.dataset.index;
    }
    history.replaceState(null, "", url);
  }
  function back(list) {
    const earlier = document.querySelector("#steps li.load-earlier button");
    if (earlier) {
      if (walkingBackFrom) return true;  // already loading: one request, whatever the number of key presses
      walkingBackFrom = list[0];
      earlier.click();
      // Feedback while the earlier page loads (htmx replaces this item with the steps when they arrive).
      earlier.textContent = "Loading earlier steps…";
      earlier.classList.add("loading");
      earlier.setAttribute("aria-busy", "true");
      return true;
    }
    const link = document.querySelector("#steps li.load-earlier a[rel=prev], nav.pager a[rel=prev]");
    if (link && !link.closest("noscript")) {
      // The previous page's last step is the one before this page's first: land there.
      window.location.href = link.href.split("#")[0] + "#step-" + (Number(list[0].dataset.index) - 1);
      return true;
    }
    return false;
  }
  function go(delta) {
    const list = steps();
    if (!list.length) return;
    let i = current(list) + delta;
    if (i < 0) {
      if (current(list) === 0 && back(list)) return;
      i = 0;
    }
    if (i >= list.length) {
      // The live page loads more in place (htmx button); a static step page links to the next page.
      const more = document.querySelector("#steps li.load-more button, #steps li.load-more a[rel=next]");
      if (more) more.click();
      i = list.length - 1;
    }
    show(list[i]);
  }
  document.addEventListener("keydown", function (event) {
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); go(1); }
    if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); go(-1); }
  });
  // A search or filter answered by htmx (the #trace-results partial): open the step of the first match, mark it
  // as the current step and scroll the match itself into view, as a browser's find does.
  document.addEventListener("htmx:afterSettle", function (event) {
    if (walkingBackFrom) {
      // The earlier page is in: go on from its last step, the one just before where k was.
      const previous = walkingBackFrom.previousElementSibling;
      walkingBackFrom = null;
      if (previous && previous.matches("li.step")) show(previous);
      return;
    }
    if (!event.detail.target || event.detail.target.id !== "trace-results") return;
    const mark = document.querySelector("#steps mark");
    const step = mark ? mark.closest("li.step") : document.querySelector("#steps li.step");
    if (!step) return;
    steps().forEach(function (el) { el.classList.remove("focus"); });
    step.classList.add("focus");
    step.focus({ preventScroll: true });
    (mark || step).scrollIntoView({ block: "center" });
  });
  // Static copies: a link within the page (an evidence link, a cited step: "#step-N") is no new page, so the step
  // it names becomes the current one here, as the live site's ?step=N does.
  window.addEventListener("hashchange", function () {
    const target = /^#step-\d+$/.test(window.location.hash) && document.querySelector("#steps li" + window.location.hash);
    if (!target) return;
    steps().forEach(function (el) { el.classList.remove("focus"); });
    target.classList.add("focus");
    target.focus({ preventScroll: true });
  });
  // Static copies: a search hit opens its step page with ?mark=<the query>; each of its words is wrapped in <mark>
  // in the step's text, as the live site's search marks matches (text nodes only: trace text is never markup).
  function markWords(root, query) {
    const words = query.split(/\s+/).filter(function (w) { return w.length > 0; });
    if (!root || !words.length) return;
    const pattern = new RegExp(words.map(function (w) { return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }).join("|"), "gi");
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      const text = node.nodeValue;
      const parts = [];
      let at = 0;
      let m;
      pattern.lastIndex = 0;
      while ((m = pattern.exec(text)) !== null) {
        parts.push(document.createTextNode(text.slice(at, m.index)));
        const mark = document.createElement("mark");
        mark.textContent = m[0];
        parts.push(mark);
        at = m.index + m[0].length;
      }
      if (!parts.length) return;
      parts.push(document.createTextNode(text.slice(at)));
      node.replaceWith.apply(node, parts);
    });
    root.querySelectorAll("details").forEach(function (d) { if (d.querySelector("mark")) d.open = true; });
  }
  document.addEventListener("htmx:afterRequest", function (event) {
    // The earlier page did not come: say so on its button, and let k try again.
    const button = document.querySelector("#steps li.load-earlier button.loading");
    if (!walkingBackFrom || event.detail.successful || !button) return;
    walkingBackFrom = null;
    button.textContent = "Earlier steps (they did not load: press k or click to try again)";
    button.classList.remove("loading");
    button.removeAttribute("aria-busy");
  });
  document.addEventListener("DOMContentLoaded", function () {
    // A static step page opened at #step-N (a search result, or k from the page after) starts at that step.
    const hashed = /^#step-\d+$/.test(window.location.hash) && document.querySelector("#steps li" + window.location.hash);
    if (hashed && !document.querySelector("#steps li.step.focus")) hashed.classList.add("focus");
    const marked = new URLSearchParams(window.location.search).get("mark");
    if (hashed && marked && window.location.pathname.endsWith(".html")) markWords(hashed, marked);
    const focused = document.querySelector("#steps li.step.focus") || document.querySelector("#steps mark");
    if (focused) focused.scrollIntoView({ block: "center" });
  });
})();
