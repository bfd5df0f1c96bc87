// Draws every figure of a plot page with the site's own plotly.min.js (never a CDN).
// <div data-figure="ID"> reads its figure from the json_script element ID; data-click-url makes a click on a
// point that carries an agent key (customdata[0]) open that agent's runs; data-click-href="...{0}..." opens that
// link with the point's customdata[0]; [data-download] saves a PNG. <div data-figure-src="URL"> fetches its figure
// (plotly JSON) after first paint instead, so a page does not carry a heavy figure in its own bytes. A page that
// does not load plotly.min.js itself names it in this script's data-plotly: it is loaded when a figure is drawn,
// so its 4.8 MB do not hold up the page's own scripts (the run page: a deep link scrolls to its step at once).
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

  function plot(el, figure) {
    const config = {
      responsive: true, displaylogo: false, displayModeBar: true,
      toImageButtonOptions: {format: "png", filename: el.dataset.filename, scale: 2},
    };
    return withPlotly(function () { return Plotly.newPlot(el, figure.data, figure.layout, config); }).then(function () {
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
