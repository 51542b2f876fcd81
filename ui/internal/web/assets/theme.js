// The theme a person chose with the toggle (dark or light), applied before the page paints;
// without a choice the system's prefers-color-scheme decides (app.css).
(function () {
  "use strict";
  try {
    var t = localStorage.getItem("sluice-theme");
    if (t === "dark" || t === "light") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage refused: the system decides */ }
})();
