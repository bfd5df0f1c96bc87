// Draws every figure of a plot page with the site's own plotly.min.js (never a CDN).
// <div data-figure="ID"> reads its figure from the json_script element ID; data-click-url makes a click on a
// point that carries an agent key (customdata[0]) open that agent's runs; data-click-href="...{0}..." opens that
// link with the point's customdata[0]; [data-download] saves a PNG. <div data-figure-src="URL"> fetches its figure
// (plotly JSON) after first paint instead, so a page does not carry a heavy figure in its own bytes. A page that
// does not load plotly.min.js itself names it in this script's data-plotly: it is loaded when a figure is drawn,
// so its 4.8 MB do not hold up the page's own scripts (the run page: a deep link scrolls to its step at once).
// Point labels: a trace whose meta.labels lists text positions has its labels placed where nothing else is drawn
// (placeLabels below); data-drawn="true" is set once they are.
(function () {
  "use strict";

  const plotlySrc = document.currentScript && document.currentScript.dataset.plotly;
  let plotlyLoading = null;

  function withPlotly(fn) {
    if (window.Plotly) { return Promise.resolve(fn()); }
    if (!plotlyLoading) {
      plotlyLoading = new Promise(function (resolve, reject) {
        const script = document.createElement("script");
        script.src = plotlySrc;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("plotly.min.js did not load")); };
        document.head.appendChild(script);
      });
    }
    return plotlyLoading.then(fn);
  }

  function draw(el) {
    plot(el, JSON.parse(document.getElementById(el.dataset.figure).textContent));
  }

  function load(el) {
    el.setAttribute("aria-busy", "true");
    if (plotlySrc) { withPlotly(function () {}).catch(function () {}); }  // fetch both at once
    fetch(el.dataset.figureSrc, {headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) { throw new Error(response.status + " " + response.statusText); }
        return response.json();
      })
      .then(function (figure) { return plot(el, figure).then(function () { el.removeAttribute("aria-busy"); }); })
      .catch(function (error) {
        el.removeAttribute("aria-busy");
        el.textContent = "The chart could not be loaded (" + error.message + ").";
        el.dataset.drawn = "failed";
      });
  }

  // --- Point labels that nothing crosses -------------------------------------------------------------------
  // Each labelled point may take any of its trace's meta.labels positions (plotly textposition values, most
  // preferred first); labels are placed in order of meta.label_rank, so a lower rank keeps its first choice and a
  // later label moves. A label is clear when its box (1 px margin) stays inside the chart's SVG and touches no
  // line, error bar or shape path (sampled every pixel along the path), no marker or bar but its own point's, no
  // axis tick label, axis title or legend, and no label already placed. A label with no clear position is
  // dropped: the point keeps its hover text and its legend entry.
  // Each label is drawn once at its first position and measured; its box at every other position follows from
  // plotly's own offsets (textPointPosition: r = marker radius / 0.8 + 1, dx = +-r, baseline dy = 0.75 fs + sign r
  // + (sign - 1) fs / 2). After the chosen positions are drawn, every label is measured again: one that clashes
  // after all loses that position and the choice is made again (a few rounds at most), so what is shown is what
  // was checked. Redone after a zoom or resize (plotly_relayout); labels stay hidden while they are placed.
  const SAMPLE_PX = 1;
  const PAD_PX = 1;
  const ROUNDS = 4;
  const SIGN = {start: 1, end: -1, middle: 0, bottom: 1, top: -1};

  function asArray(value, n) {
    if (Array.isArray(value)) { return value.slice(); }
    const out = [];
    for (let i = 0; i < n; i++) { out.push(value); }
    return out;
  }

  function anchors(position) {
    return {h: position.indexOf("left") !== -1 ? "end" : position.indexOf("right") !== -1 ? "start" : "middle",
            v: position.indexOf("top") !== -1 ? "top" : position.indexOf("bottom") !== -1 ? "bottom" : "middle"};
  }

  // The labelled points of a figure, from the figure as given (so a redraw starts again from the first choices).
  function labelPlans(el) {
    const plans = [];
    el.data.forEach(function (trace, t) {
      const meta = trace.meta;
      if (!meta || !Array.isArray(meta.labels) || !meta.labels.length) { return; }
      if (!el._labelText) { el._labelText = {}; }
      if (!(t in el._labelText)) {
        const n = (trace.x || trace.y || []).length;
        el._labelText[t] = asArray(trace.text, n);
      }
      const full = el._fullData[t] || {};
      const markers = (full.mode || "").indexOf("markers") !== -1 && full.marker && typeof full.marker.size === "number";
      el._labelText[t].forEach(function (text, i) {
        if (text === undefined || text === null || text === "") { return; }
        plans.push({trace: t, point: i, text: String(text), rank: meta.label_rank || 0, positions: meta.labels,
                    at: 0, hidden: false, failed: {}, box: null,
                    r: markers ? full.marker.size / 2 / 0.8 + 1 : 0,
                    fs: (full.textfont && full.textfont.size) || 12});
      });
    });
    plans.sort(function (a, b) { return a.rank - b.rank || a.trace - b.trace || a.point - b.point; });
    return plans;
  }

  function applyPlans(el, plans) {
    const traces = [];
    const texts = [];
    const positions = [];
    plans.forEach(function (plan) {
      let k = traces.indexOf(plan.trace);
      if (k < 0) {
        k = traces.push(plan.trace) - 1;
        texts.push(el._labelText[plan.trace].map(function () { return ""; }));
        positions.push(el._labelText[plan.trace].map(function () { return plan.positions[0]; }));
      }
      texts[k][plan.point] = plan.hidden ? "" : plan.text;
      positions[k][plan.point] = plan.positions[plan.at];
    });
    return Plotly.restyle(el, {text: texts, textposition: positions}, traces);
  }

  function overlaps(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }

  // Every drawn path that is a line (traces' lines, error bars, shapes), as points every SAMPLE_PX in page pixels.
  function linePoints(el) {
    const points = [];
    el.querySelectorAll(".scatterlayer path.js-line, .errorbars path, .shapelayer path").forEach(function (path) {
      const matrix = path.getScreenCTM();
      if (!matrix) { return; }
      const length = path.getTotalLength();
      for (let s = 0; s <= length; s += SAMPLE_PX) {
        const p = path.getPointAtLength(s);
        points.push(new DOMPoint(p.x, p.y).matrixTransform(matrix));
      }
    });
    return points;
  }

  // Markers and bars with the (trace, point) they draw, so that a label may sit on its own point's marker only.
  function markBoxes(el) {
    const boxes = [];
    el.querySelectorAll(".scatterlayer g.trace, .barlayer g.trace").forEach(function (group) {
      const cd = group.__data__;
      const trace = cd && cd[0] && cd[0].trace ? cd[0].trace.index : -1;
      group.querySelectorAll("path.point, g.point path").forEach(function (node) {
        const datum = node.__data__ || (node.parentNode && node.parentNode.__data__) || {};
        const r = node.getBoundingClientRect();
        if (r.width || r.height) { boxes.push({trace: trace, point: datum.i, box: r}); }
      });
    });
    return boxes;
  }

  // What labels must keep clear of; labels do not move it.
  function obstacles(el) {
    const furniture = [];
    el.querySelectorAll(".xtick text, .ytick text, .g-xtitle, .g-ytitle, .legend .bg, .annotation").forEach(
      function (node) {
        const r = node.getBoundingClientRect();
        if (r.width && r.height) { furniture.push(r); }
      });
    return {svg: el.querySelector(".main-svg").getBoundingClientRect(), lines: linePoints(el), marks: markBoxes(el),
            furniture: furniture};
  }

  function labelBoxes(el) {
    const boxes = {};
    el.querySelectorAll(".scatterlayer g.trace").forEach(function (group) {
      const cd = group.__data__;
      if (!cd || !cd[0] || !cd[0].trace) { return; }
      group.querySelectorAll("g.textpoint").forEach(function (node) {
        const r = node.getBoundingClientRect();
        if (node.__data__ && node.textContent && r.width) { boxes[cd[0].trace.index + ":" + node.__data__.i] = r; }
      });
    });
    return boxes;
  }

  // The box a label drawn at plan.positions[0] with box `drawn` would have at `position` (plotly's offsets).
  function boxAt(plan, drawn, position) {
    const first = anchors(plan.positions[0]);
    const next = anchors(position);
    const w = drawn.right - drawn.left;
    const fraction = {end: 1, start: 0, middle: 0.5};
    const x = drawn.left + fraction[first.h] * w - SIGN[first.h] * plan.r;  // the point's centre
    const left = x + SIGN[next.h] * plan.r - fraction[next.h] * w;
    const dy = function (v) { return 0.75 * plan.fs + SIGN[v] * plan.r + (SIGN[v] - 1) * plan.fs / 2; };
    const top = drawn.top + dy(next.v) - dy(first.v);
    return {left: left, right: left + w, top: top, bottom: top + (drawn.bottom - drawn.top)};
  }

  function clear(plan, box, found, kept) {
    const b = {left: box.left - PAD_PX, right: box.right + PAD_PX, top: box.top - PAD_PX, bottom: box.bottom + PAD_PX};
    const svg = found.svg;
    return b.left >= svg.left && b.right <= svg.right && b.top >= svg.top && b.bottom <= svg.bottom
      && !found.lines.some(function (p) { return p.x >= b.left && p.x <= b.right && p.y >= b.top && p.y <= b.bottom; })
      && !found.marks.some(function (m) { return !(m.trace === plan.trace && m.point === plan.point) && overlaps(b, m.box); })
      && !found.furniture.some(function (f) { return overlaps(b, f); })
      && !kept.some(function (k) { return overlaps(b, k); });
  }

  // Each label (in rank order) at its first position not known to fail that is clear of what is placed before it.
  function choose(plans, found) {
    const kept = [];
    plans.forEach(function (plan) {
      plan.hidden = true;
      if (!plan.box) { return; }
      for (let k = 0; k < plan.positions.length; k++) {
        if (plan.failed[k]) { continue; }
        const box = boxAt(plan, plan.box, plan.positions[k]);
        if (clear(plan, box, found, kept)) {
          plan.at = k;
          plan.hidden = false;
          kept.push(box);
          return;
        }
      }
    });
  }

  // Labels that are not clear where they are drawn now (each judged against the labels kept before it).
  function clashes(el, plans, found) {
    const drawn = labelBoxes(el);
    const kept = [];
    return plans.filter(function (plan) {
      const box = plan.hidden ? null : drawn[plan.trace + ":" + plan.point];
      if (!box) { return false; }
      if (clear(plan, box, found, kept)) { kept.push(box); return false; }
      return true;
    });
  }

  function placeLabels(el) {
    if (el._placing) { el._placeAgain = true; return Promise.resolve(); }
    const plans = labelPlans(el);
    if (!plans.length) { return Promise.resolve(); }
    el._placing = true;
    el.classList.add("placing-labels");
    let found = null;
    let round = 0;
    function again() {
      return applyPlans(el, plans).then(function () {
        const bad = clashes(el, plans, found);
        if (!bad.length) { return null; }
        round += 1;
        bad.forEach(function (plan) { plan.failed[plan.at] = true; });
        if (round >= ROUNDS) { bad.forEach(function (plan) { plan.hidden = true; }); return applyPlans(el, plans); }
        choose(plans, found);
        return again();
      });
    }
    // Every label at its first position, measured; then chosen, drawn and checked.
    plans.forEach(function (plan) { plan.at = 0; plan.hidden = false; });
    return applyPlans(el, plans).then(function () {
      found = obstacles(el);
      const drawn = labelBoxes(el);
      plans.forEach(function (plan) { plan.box = drawn[plan.trace + ":" + plan.point] || null; });
      choose(plans, found);
      return again();
    }).then(function () {
      // Measured afresh once more (should a redraw have moved an axis): a label that clashes now is dropped.
      const bad = clashes(el, plans, obstacles(el));
      bad.forEach(function (plan) { plan.hidden = true; });
      return bad.length ? applyPlans(el, plans) : null;
    }).then(function () {
      el.dataset.labels = String(plans.filter(function (p) { return !p.hidden; }).length) + "/" + plans.length;
    }).finally(function () {
      el._placing = false;
      el.classList.remove("placing-labels");
      if (el._placeAgain) { el._placeAgain = false; return placeLabels(el); }
      return null;
    });
  }

  // A phone's width: a legend at the right of the plot would leave the plot ~60 px of a 390 px screen, drawn under
  // the legend. There the legend goes below the plot, and the figure grows by its height so the plot keeps its own.
  const NARROW_PX = 600;

  function legendBelow(el, layout) {
    const legend = layout.legend || {};
    if (el.clientWidth >= NARROW_PX || layout.showlegend === false || legend.orientation === "h") { return null; }
    layout.legend = Object.assign({}, legend, {orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0,
                                              yanchor: "bottom"});  // at the figure's foot: the margin makes room
    return layout.height || el.clientHeight || 450;
  }

  function growForLegend(el, height) {
    const legend = el.querySelector("g.legend");
    if (height === null || !legend) { return null; }
    return Plotly.relayout(el, {height: height + Math.ceil(legend.getBoundingClientRect().height)});
  }

  // A phone's width: an x axis title longer than the chart is wide ("base model's score on the benchmark (%)" of the
  // calibration chart, "Mean wall time used (h:mm, of the 10:00 budget; ...)" of the time charts) ran past the
  // screen's edge and was cut. There it is broken at spaces into lines the chart's width holds (plotly's <br>), and
  // the bottom margin and the figure grow by the added lines, so the plot keeps its height.
  function wrapTitles(el) {
    if (el.clientWidth >= NARROW_PX) { return null; }
    const full = el._fullLayout, chart = el.getBoundingClientRect(), update = {};
    let added = 0;
    Object.keys(full).filter(function (name) { return /^xaxis\d*$/.test(name); }).forEach(function (name) {
      const title = full[name].title || {}, text = title.text || "";
      const node = el.querySelector(".g-" + name.replace("axis", "") + "title text");
      if (!node || !text || text.indexOf("<br>") >= 0) { return; }
      const box = node.getBoundingClientRect(), centre = box.left + box.width / 2;  // centred on the plot area
      const width = box.width, room = 2 * (Math.min(centre - chart.left, chart.right - centre) - 8);
      if (width <= room) { return; }
      const chars = Math.max(8, Math.floor(text.length * room / width));  // the characters a line holds
      const lines = [];
      text.split(" ").forEach(function (word) {
        const last = lines.length - 1;
        if (last >= 0 && (lines[last] + " " + word).length <= chars) { lines[last] += " " + word; } else { lines.push(word); }
      });
      update[name + ".title.text"] = lines.join("<br>");
      added = Math.max(added, (lines.length - 1) * Math.ceil(((title.font && title.font.size) || 14) * 1.3));
    });
    if (!added) { return null; }
    update["margin.b"] = full.margin.b + added;
    update.height = full.height + added;
    return Plotly.relayout(el, update);
  }

  function plot(el, figure) {
    const config = {
      responsive: true, displaylogo: false, displayModeBar: true,
      toImageButtonOptions: {format: "png", filename: el.dataset.filename, scale: 2},
    };
    const layout = Object.assign({}, figure.layout);
    const height = legendBelow(el, layout);
    return withPlotly(function () {
      return Plotly.newPlot(el, figure.data, layout, config)
        .then(function () { return wrapTitles(el); })
        .then(function () { return growForLegend(el, height === null ? null : el._fullLayout.height); });
    }).then(function () {
      if (el.dataset.clickHref) {
        // A link template: "{0}" is replaced by the clicked point's customdata[0] (a step index, a run id).
        el.on("plotly_click", function (event) {
          const point = event.points[0];
          const target = point && point.customdata && point.customdata[0];
          if (target !== undefined && target !== null) {
            window.location.href = el.dataset.clickHref.split("{0}").join(encodeURIComponent(target));
          }
        });
      }
      if (el.dataset.clickUrl) {
        el.on("plotly_click", function (event) {
          const point = event.points[0];
          const key = point && point.customdata && point.customdata[0];
          if (key) {
            window.location.href = el.dataset.clickUrl + "?agent=" + encodeURIComponent(key);
          }
        });
      }
      el.on("plotly_relayout", function () { placeLabels(el); });
      return placeLabels(el);
    }).then(function () {
      el.dataset.drawn = "true";
    });
  }

  document.querySelectorAll("[data-figure]").forEach(draw);
  document.querySelectorAll("[data-figure-src]").forEach(load);
  document.querySelectorAll("[data-download]").forEach(function (button) {
    button.addEventListener("click", function () {
      const el = document.getElementById(button.dataset.download);
      if (!window.Plotly) { return; }  // nothing drawn yet
      Plotly.downloadImage(el, {format: "png", filename: el.dataset.filename,
                                width: el.offsetWidth, height: el.offsetHeight, scale: 2});
    });
  });
})();
