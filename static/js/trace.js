// Keyboard moves through a trace: j / ArrowDown next step, k / ArrowUp previous step; the URL follows (?step=N).
(function () {
  function steps() { return Array.from(document.querySelectorAll("#steps li.step")); }
  function current(list) {
    const focused = document.querySelector("#steps li.step.focus");
    return focused ? list.indexOf(focused) : -1;
  }
  function go(delta) {
    const list = steps();
    if (!list.length) return;
    let i = current(list) + delta;
    if (i < 0) i = 0;
    if (i >= list.length) {
      // The live page loads more in place (htmx button); a static step page links to the next page.
      const more = document.querySelector("#steps li.load-more button, #steps li.load-more a[rel=next]");
      if (more) more.click();
      i = list.length - 1;
    }
    list.forEach(function (el) { el.classList.remove("focus"); });
    const el = list[i];
    el.classList.add("focus");
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "center" });
    const url = new URL(window.location.href);
    url.searchParams.set("step", el.dataset.index);
    url.searchParams.delete("at");
    url.hash = "step-" + el.dataset.index;
    history.replaceState(null, "", url);
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
    if (!event.detail.target || event.detail.target.id !== "trace-results") return;
    const mark = document.querySelector("#steps mark");
    const step = mark ? mark.closest("li.step") : document.querySelector("#steps li.step");
    if (!step) return;
    steps().forEach(function (el) { el.classList.remove("focus"); });
    step.classList.add("focus");
    step.focus({ preventScroll: true });
    (mark || step).scrollIntoView({ block: "center" });
  });
  document.addEventListener("DOMContentLoaded", function () {
    const focused = document.querySelector("#steps li.step.focus") || document.querySelector("#steps mark");
    if (focused) focused.scrollIntoView({ block: "center" });
  });
})();
