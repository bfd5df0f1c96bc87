// Draws every figure of a plot page with the site's own plotly.min.js (never a CDN).
// <div data-figure="ID"> reads its figure from the json_script element ID; data-click-url makes a click on a
// point that carries an agent key (customdata[0]) open that agent's runs; data-click-href="...{0}..." opens that
// link with the point's customdata[0]; [data-download] saves a PNG. <div data-figure-src="URL"> fetches its figure
// (plotly JSON) after first paint instead, so a page does not carry a heavy figure in its own bytes.
// Point labels: a trace whose meta.labels lists text positions has its labels placed where nothing else is drawn
// (placeLabels below); data-drawn="true" is set once they are.
(function () {
  "use strict";

  function draw(el) {
    plot(el, JSON.parse(document.getElementById(el.dataset.figure).textContent));
  }

  function load(el) {
    el.setAttribute("aria-busy", "true");
    fetch(el.dataset.figureSrc, {headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) { throw new Error(response.status + " " + response.statusText); }
        return response.json();
      })
      .then(function (figure) { el.removeAttribute("aria-busy"); plot(el, figure); })
      .catch(function (error) {
        el.removeAttribute("aria-busy");
        el.textContent = "The chart could not be loaded (" + error.message + ").";
        el.dataset.drawn = "failed";
      });
  }

  // --- Point labels that nothing crosses -------------------------------------------------------------------
  // Each labelled point tries its trace's meta.labels positions in turn (plotly textposition values, most
  // preferred first); labels are judged in order of meta.label_rank, so a lower rank keeps its place and a later
  // label moves. A label is clear when its drawn box (1 px margin) stays inside the chart's SVG and touches no
  // line, error bar or shape path (sampled every pixel along the path), no marker or bar but its own point's, no
  // axis tick label, axis title or legend, and no label already kept. A label with no clear position is dropped:
  // the point keeps its hover text and its legend entry. Geometry is measured on the drawn chart, so it holds for
  // any font or width; it is redone after a zoom or resize (plotly_relayout).
  const SAMPLE_PX = 1;
  const PAD_PX = 1;
  const MAX_ROUNDS = 12;

  function asArray(value, n) {
    if (Array.isArray(value)) { return value.slice(); }
    const out = [];
    for (let i = 0; i < n; i++) { out.push(value); }
    return out;
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
      el._labelText[t].forEach(function (text, i) {
        if (text === undefined || text === null || text === "") { return; }
        plans.push({trace: t, point: i, text: String(text), rank: meta.label_rank || 0,
                    positions: meta.labels, at: 0, hidden: false});
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
        const original = el._labelText[plan.trace];
        texts.push(original.map(function () { return ""; }));
        positions.push(original.map(function () { return plan.positions[0]; }));
      }
      texts[k][plan.point] = plan.hidden ? "" : plan.text;
      positions[k][plan.point] = plan.positions[Math.min(plan.at, plan.positions.length - 1)];
    });
    return Plotly.restyle(el, {text: texts, textposition: positions}, traces);
  }

  function rect(r, pad) {
    return {left: r.left - pad, right: r.right + pad, top: r.top - pad, bottom: r.bottom + pad};
  }

  function overlaps(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }

  function contains(box, x, y) {
    return x >= box.left && x <= box.right && y >= box.top && y <= box.bottom;
  }

  // Every drawn path that is a line (traces' lines, error bars, shapes), as points every SAMPLE_PX in page pixels.
  function linePoints(el) {
    const points = [];
    el.querySelectorAll(".scatterlayer path.js-line, .errorbars path, .shapelayer path").forEach(function (path) {
      const matrix = path.getScreenCTM();
      if (!matrix || path.closest("[style*='display: none']")) { return; }
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

  function furnitureBoxes(el) {
    const boxes = [];
    el.querySelectorAll(".xtick text, .ytick text, .g-xtitle, .g-ytitle, .legend .bg, .annotation").forEach(
      function (node) {
        const r = node.getBoundingClientRect();
        if (r.width && r.height) { boxes.push(r); }
      });
    return boxes;
  }

  function labelNodes(el) {
    const nodes = {};
    el.querySelectorAll(".scatterlayer g.trace").forEach(function (group) {
      const cd = group.__data__;
      if (!cd || !cd[0] || !cd[0].trace) { return; }
      group.querySelectorAll("g.textpoint").forEach(function (node) {
        const datum = node.__data__;
        if (datum && node.textContent) { nodes[cd[0].trace.index + ":" + datum.i] = node; }
      });
    });
    return nodes;
  }

  // Labels that are not clear where they are now (in rank order, each judged against those kept before it).
  function clashes(el, plans) {
    const svg = el.querySelector(".main-svg").getBoundingClientRect();
    const lines = linePoints(el);
    const marks = markBoxes(el);
    const furniture = furnitureBoxes(el);
    const nodes = labelNodes(el);
    const kept = [];
    const bad = [];
    plans.forEach(function (plan) {
      if (plan.hidden) { return; }
      const node = nodes[plan.trace + ":" + plan.point];
      if (!node) { return; }
      const box = rect(node.getBoundingClientRect(), PAD_PX);
      const clear = box.left >= svg.left && box.right <= svg.right && box.top >= svg.top && box.bottom <= svg.bottom
        && !lines.some(function (p) { return contains(box, p.x, p.y); })
        && !marks.some(function (m) {
          return !(m.trace === plan.trace && m.point === plan.point) && overlaps(box, m.box);
        })
        && !furniture.some(function (f) { return overlaps(box, f); })
        && !kept.some(function (k) { return overlaps(box, k); });
      if (clear) { kept.push(box); } else { bad.push(plan); }
    });
    return bad;
  }

  function placeLabels(el) {
    if (el._placing) { el._placeAgain = true; return Promise.resolve(); }
    const plans = labelPlans(el);
    if (!plans.length) { return Promise.resolve(); }
    el._placing = true;
    let round = 0;
    function step() {
      return applyPlans(el, plans).then(function () {
        const bad = clashes(el, plans);
        if (!bad.length) { return null; }
        round += 1;
        bad.forEach(function (plan) {
          plan.at += 1;
          if (plan.at >= plan.positions.length || round >= MAX_ROUNDS) { plan.hidden = true; }
        });
        return step();
      });
    }
    return step().then(function () {
      el.dataset.labels = String(plans.filter(function (p) { return !p.hidden; }).length) + "/" + plans.length;
    }).finally(function () {
      el._placing = false;
      if (el._placeAgain) { el._placeAgain = false; return placeLabels(el); }
      return null;
    });
  }

  function plot(el, figure) {
    const config = {
      responsive: true, displaylogo: false, displayModeBar: true,
      toImageButtonOptions: {format: "png", filename: el.dataset.filename, scale: 2},
    };
    Plotly.newPlot(el, figure.data, figure.layout, config).then(function () {
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
      Plotly.downloadImage(el, {format: "png", filename: el.dataset.filename,
                                width: el.offsetWidth, height: el.offsetHeight, scale: 2});
    });
  });
})();
