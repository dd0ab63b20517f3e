// The league page's live parts: replaced in place from /events (server-sent events).
(function () {
  "use strict";
  var section = document.getElementById("season");
  var status = document.getElementById("live-status");
  if (!section || !window.EventSource) { return; }
  var season = section.getAttribute("data-season");
  var source = new EventSource("/events?season=" + encodeURIComponent(season));
  var updates = 0;
  source.addEventListener("live", function (message) {
    var data = JSON.parse(message.data);
    Object.keys(data.fragments).forEach(function (id) {
      var el = document.getElementById(id);
      if (el && el.innerHTML !== data.fragments[id]) { el.innerHTML = data.fragments[id]; }
    });
    updates += 1;
    section.setAttribute("data-updates", String(updates));
    section.setAttribute("data-settled", String(data.progress.done + data.progress.failed));
    if (status) {
      status.textContent = "live: updated " + new Date(data.updated_ms).toLocaleTimeString();
    }
  });
  source.addEventListener("problem", function (message) {
    if (status) { status.textContent = "live updates paused: " + JSON.parse(message.data); }
  });
  source.onerror = function () {
    if (status) { status.textContent = "live updates: reconnecting"; }
  };
})();
