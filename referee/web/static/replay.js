// The visual replay: frames from /api/replay/<id>, stepped forward/back, played at a speed,
// each seat's view or the full view; the URL (?step=N&view=V) is the permalink.
(function () {
  "use strict";
  var root = document.getElementById("replay");
  if (!root) { return; }
  var A = window.Arena, data = null, step = 0, view = "full", timer = null;
  var $ = function (id) { return document.getElementById(id); };

  function render() {
    var frame = data.frames[step];
    var board = $("board");
    board.textContent = "";
    var seatIndex = view === "full" ? -1 : parseInt(view.slice(4), 10);
    var shownView = frame.views[seatIndex < 0 ? 0 : seatIndex];
    var header = A.el("p", "", "deal " + (frame.deal + 1) + (shownView.num_deals ? " of " + shownView.num_deals : "") +
      " · " + (view === "full" ? "full view: every hand face up" : "the view of " + data.seats[seatIndex] + " only"));
    board.appendChild(header);
    board.appendChild(A.table(shownView, data.seats));
    var seats = A.el("div", "seats");
    data.seats.forEach(function (name, s) {
      var hand = null;
      if (seatIndex < 0) { hand = frame.views[s].hand; } else if (s === seatIndex) { hand = shownView.hand; }
      seats.appendChild(A.seat(name, s, shownView, hand));
    });
    board.appendChild(seats);
    board.setAttribute("data-step", String(step));
    board.setAttribute("data-view", view);
    $("position").textContent = "step " + step + " of " + (data.frames.length - 1);
    // The log: what happened up to this step, scrolled (inside its box) to the current one.
    var log = $("log");
    log.textContent = "";
    for (var i = Math.max(0, step - 40); i <= step; i++) {
      var f = data.frames[i];
      var line = A.el("div", i === step ? "now" : "muted", (i === 0 ? "" : i + ". ") + f.text.join("; ") +
        (f.think_ms !== undefined && f.think_ms !== null ? " (" + Math.round(f.think_ms) + " ms)" : ""));
      line.setAttribute("data-step", String(i));
      if (i === step) { line.setAttribute("aria-current", "step"); }
      log.appendChild(line);
    }
    log.scrollTop = log.scrollHeight;  // the current step is the last line
    $("deal").value = String(frame.deal);
    var url = location.pathname + "?step=" + step + "&view=" + view;
    history.replaceState(null, "", url);
    $("permalink").href = url;
  }
  function go(to) {
    step = Math.max(0, Math.min(data.frames.length - 1, to));
    render();
  }
  function stop() {
    if (timer) { clearInterval(timer); timer = null; $("play").textContent = "▶ play"; $("play").setAttribute("aria-label", "play"); }
  }
  function play() {
    if (timer) { stop(); return; }
    $("play").textContent = "⏸ pause";
    $("play").setAttribute("aria-label", "pause");
    timer = setInterval(function () {
      if (step >= data.frames.length - 1) { stop(); return; }
      go(step + 1);
    }, parseInt($("speed").value, 10));
  }
  fetch(root.getAttribute("data-src")).then(function (r) {
    if (!r.ok) { throw new Error("HTTP " + r.status); }
    return r.json();
  }).then(function (d) {
    data = d;
    var params = new URLSearchParams(location.search);
    var deal = $("deal");
    d.deal_starts.forEach(function (s, i) {
      var o = A.el("option", "", "deal " + (i + 1));
      o.value = String(d.frames[s].deal);
      o.setAttribute("data-step", String(s));
      deal.appendChild(o);
    });
    d.seats.forEach(function (name, s) {
      var o = A.el("option", "", "seat " + s + ": " + name);
      o.value = "seat" + s;
      $("view").appendChild(o);
    });
    var wanted = params.get("view");
    if (wanted && (wanted === "full" || /^seat\d+$/.test(wanted) && parseInt(wanted.slice(4), 10) < d.seats.length)) { view = wanted; }
    $("view").value = view;
    $("first").onclick = function () { stop(); go(0); };
    $("prev").onclick = function () { stop(); go(step - 1); };
    $("next").onclick = function () { stop(); go(step + 1); };
    $("last").onclick = function () { stop(); go(d.frames.length - 1); };
    $("play").onclick = play;
    $("speed").onchange = function () { if (timer) { stop(); play(); } };
    deal.onchange = function () { stop(); go(parseInt(deal.selectedOptions[0].getAttribute("data-step"), 10)); };
    $("view").onchange = function () { view = $("view").value; render(); };
    document.addEventListener("keydown", function (e) {
      if (e.target && /SELECT|INPUT/.test(e.target.tagName)) { return; }
      if (e.key === "ArrowRight") { stop(); go(step + 1); }
      if (e.key === "ArrowLeft") { stop(); go(step - 1); }
    });
    go(parseInt(params.get("step") || "0", 10) || 0);
    root.setAttribute("data-ready", "true");
  }).catch(function (e) {
    $("board").textContent = "Could not load the replay: " + e.message;
  });
})();
