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
  // keep remembers the focused element of <main> by what names it (id, form field name, link
  // target, button text) and its place among the elements so named, with what a person typed
  // into it and where the caret was; restore finds it again in the new <main>, so a live update
  // moves neither the keyboard focus nor the caret, and never wipes a field being typed in.
  function keyOf(el) {
    if (el.id) return "#" + el.id;
    var name = el.getAttribute("name") || el.getAttribute("href") || el.textContent.trim();
    return el.tagName + "|" + name;
  }
  function keep(el) {
    if (!el || el === main || !main.contains(el)) return null;
    var key = keyOf(el), same = [].filter.call(main.querySelectorAll(el.tagName), function (o) { return keyOf(o) === key; });
    var k = { key: key, tag: el.tagName, index: same.indexOf(el) };
    if ("value" in el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA")) {
      k.value = el.value;
      try { k.start = el.selectionStart; k.end = el.selectionEnd; } catch (e) { k.start = null; }
    }
    return k;
  }
  function restore(k) {
    if (!k) return;
    var same = [].filter.call(main.querySelectorAll(k.tag), function (o) { return keyOf(o) === k.key; });
    var el = same[Math.min(k.index, same.length - 1)];
    if (!el) return;
    if (k.value !== undefined) {
      el.value = k.value;
      if (k.start !== null && k.start !== undefined) { try { el.setSelectionRange(k.start, k.end); } catch (e) { /* not a text field */ } }
    }
    el.focus({ preventScroll: true });
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Sluice-Refresh": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        if (!next) return;
        var kept = keep(document.activeElement);
        main.innerHTML = next.innerHTML;
        main.setAttribute("data-updates", String(Number(main.getAttribute("data-updates") || 0) + 1));
        restore(kept);
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
