// Live pages: the server names the kinds that changed, as server-sent events; a page showing
// one of them fetches itself again and swaps its <main>. Nothing polls.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var search = document.getElementById("q");
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (e.key === "/" && t !== "INPUT" && t !== "SELECT" && t !== "TEXTAREA") { e.preventDefault(); search.focus(); }
  });
  var main = document.getElementById("main");
  var watch = (main.getAttribute("data-watch") || "").split(",").filter(Boolean);
  if (!window.EventSource || watch.length === 0) { live.textContent = ""; return; }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Sluice-Refresh": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        if (!next) return;
        var focused = document.activeElement && document.activeElement.id;
        main.innerHTML = next.innerHTML;
        main.setAttribute("data-updates", String(Number(main.getAttribute("data-updates") || 0) + 1));
        if (focused) { var el = document.getElementById(focused); if (el) el.focus(); }
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/events");
  es.addEventListener("ready", function () { live.textContent = "live"; live.className = "live on"; });
  es.addEventListener("error", function () { live.textContent = "reconnecting"; live.className = "live"; });
  es.addEventListener("change", function (e) {
    var kinds = e.data.split(",");
    for (var i = 0; i < kinds.length; i++) {
      if (kinds[i] === "*" || watch.indexOf(kinds[i]) >= 0) { refresh(); return; }
    }
  });
})();
