// Live pages: a page names what it shows (data-watch: keys such as Kind/namespace/name) when it
// opens its stream; the server sends, as server-sent events, only those of its keys whose
// objects changed, and the page fetches itself again and swaps its <main>. Nothing polls.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var search = document.getElementById("q");
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (e.key === "/" && t !== "INPUT" && t !== "SELECT" && t !== "TEXTAREA") { e.preventDefault(); search.focus(); }
  });
  // The theme toggle: auto (the system's preference), dark, light; remembered in this browser.
  var themeButton = document.getElementById("theme");
  function showTheme() {
    var t = document.documentElement.getAttribute("data-theme") || "auto";
    themeButton.textContent = "Theme: " + t;
  }
  if (themeButton) {
    themeButton.hidden = false;
    showTheme();
    themeButton.addEventListener("click", function () {
      var order = ["auto", "dark", "light"];
      var now = document.documentElement.getAttribute("data-theme") || "auto";
      var next = order[(order.indexOf(now) + 1) % order.length];
      if (next === "auto") document.documentElement.removeAttribute("data-theme");
      else document.documentElement.setAttribute("data-theme", next);
      try { if (next === "auto") localStorage.removeItem("sluice-theme"); else localStorage.setItem("sluice-theme", next); } catch (e) { /* not kept */ }
      showTheme();
    });
  }
  // Times come in UTC; each is shown in the reader's time zone, with UTC kept on hover.
  var localFormat = window.Intl ? new Intl.DateTimeFormat(undefined, { weekday: "short", year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" }) : null;
  function localTimes(root) {
    if (!localFormat) return;
    var times = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < times.length; i++) {
      var d = new Date(times[i].getAttribute("datetime"));
      if (!isNaN(d)) times[i].textContent = localFormat.format(d);
    }
  }
  // The day labels of a gate's timeline go where their midnight falls (CSSOM, which the
  // Content-Security-Policy allows, unlike style attributes); without this they are a list.
  function placeDays(root) {
    var rows = root.querySelectorAll(".week .days");
    for (var i = 0; i < rows.length; i++) {
      var spans = rows[i].querySelectorAll("span[data-percent]");
      for (var j = 0; j < spans.length; j++) spans[j].style.left = spans[j].getAttribute("data-percent") + "%";
      rows[i].classList.add("placed");
    }
  }
  var main = document.getElementById("main");
  localTimes(main);
  placeDays(main);
  var watch = (main.getAttribute("data-watch") || "").split(",").filter(Boolean);
  if (!window.EventSource || watch.length === 0) { live.textContent = ""; return; }
  var busy = false, again = false, synced = false;
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
        localTimes(main);
        placeDays(main);
        main.setAttribute("data-updates", String(Number(main.getAttribute("data-updates") || 0) + 1));
        restore(kept);
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); return; }
        if (!synced) { synced = true; live.textContent = "live"; live.className = "live on"; }
      });
  }
  // "Gate" too, for the header's count of closed gates.
  var es = new EventSource("/events?watch=" + encodeURIComponent(watch.concat(["Gate"]).join(",")));
  // A page left for another closes its stream at once: a browser opens only six connections to
  // one host, and streams of pages kept in its back/forward cache would use them up.
  window.addEventListener("pagehide", function () { es.close(); });
  // Once subscribed, and again after each reconnection, the page fetches itself once: a change
  // made between rendering this page (or losing the stream) and subscribing would be missed. It
  // says "live" once that fetch is in.
  es.addEventListener("ready", function () {
    synced = false;
    refresh();
  });
  es.addEventListener("error", function () { live.textContent = "reconnecting"; live.className = "live"; });
  // The header's count of closed gates follows the gates on every page.
  var frozen = document.getElementById("frozen");
  function refreshFrozen() {
    fetch("/frozen/count", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (t) { if (t && frozen) frozen.textContent = t; })
      .catch(function () {});
  }
  es.addEventListener("change", function (e) {
    var keys = e.data.split(",");
    if (keys.indexOf("Gate") >= 0 || keys.indexOf("*") >= 0) refreshFrozen();
    for (var i = 0; i < keys.length; i++) {
      if (keys[i] === "*" || watch.indexOf(keys[i]) >= 0) { refresh(); return; }
    }
  });
})();
