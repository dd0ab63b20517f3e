// A person's seat: what the referee sent this seat (from /play/<sid>/events), the legal
// actions as buttons, a clock; a click posts the choice to /play/<sid>/action.
(function () {
  "use strict";
  var root = document.getElementById("play");
  if (!root) { return; }
  var A = window.Arena, sid = root.getAttribute("data-sid");
  var $ = function (id) { return document.getElementById(id); };
  var seats = [], turn = null, clockTimer = null, received = [], me = -1, sides = [];
  var told = { deal: -1, items: 0 };  // history items of the deal already told
  window.__seatEvents = received;

  function log(text, cls) {
    var line = A.el("div", cls || "", text);
    $("log").insertBefore(line, $("log").firstChild);
  }
  function name(s) { return seats[s] !== undefined ? seats[s] : "seat " + s; }
  function partners() {
    for (var i = 0; i < sides.length; i++) {
      if (sides[i].indexOf(me) >= 0) { return sides[i].filter(function (s) { return s !== me; }); }
    }
    return [];
  }
  // Who, as the person is told: "you", "carol (your partner)", "bob".
  function who(s) {
    if (s === me) { return "you"; }
    return name(s) + (partners().indexOf(s) >= 0 ? " (your partner)" : "");
  }
  // One public event of the deal in words (as `arena play` says it, cards spoken as the
  // page's labels are: "9 of clubs"); null: not worth a line.
  function describe(h, game) {
    var w = who(h.seat);
    if (h.kind === "play") {
      var cards = h.action.split("+");
      if (game === "sedma" && cards.length === 2) {
        return w + " played " + A.parts(cards[0]).spoken + ", showing " + A.parts(cards[1]).spoken + " (marriage)";
      }
      return w + " played " + A.spoken(h.action);
    }
    if (h.kind === "pass") { return w + " passed" + (h.reason ? " (" + h.reason + ")" : ""); }
    if (h.kind === "illegal_pass") { return w + " passed while able to play (illegal pass)"; }
    if (h.kind === "invalid_action") { return w + " sent an action that was refused (" + h.reason + ")"; }
    if (h.kind === "timeout") { return w + " ran out of time"; }
    if (h.kind === "penalty") { return w + " paid a penalty" + (h.reason ? " (" + h.reason + ")" : ""); }
    if (h.kind === "eliminated") { return w + (w === "you" ? " are" : " is") + " out of the deal (" + h.reason + ")"; }
    if (h.kind === "trick") { return w + " took the trick"; }
    if (h.kind === "void_deal") { return "the hand is void: redealt"; }
    return null;
  }
  function sideOf(s) {
    for (var i = 0; i < sides.length; i++) { if (sides[i].indexOf(s) >= 0) { return sides[i]; } }
    return [s];
  }
  function startClock(clock) {
    if (clockTimer) { clearInterval(clockTimer); }
    var started = Date.now();
    function tick() {
      var left = clock.move_ms - (Date.now() - started);
      var bank = clock.bank_ms + Math.min(0, left);
      var text = left > 0 ? (left / 1000).toFixed(0) + " s left for this move" :
        "move time over: " + Math.max(0, bank / 1000).toFixed(0) + " s of reserve left";
      $("clock").textContent = text + " (reserve " + (clock.bank_ms / 1000).toFixed(0) + " s)";
      $("clock").className = "clock" + (left < 10000 ? " low" : "");
    }
    tick();
    clockTimer = setInterval(tick, 250);
  }
  function stopClock(text) {
    if (clockTimer) { clearInterval(clockTimer); clockTimer = null; }
    $("clock").textContent = text;
    $("clock").className = "clock";
  }
  function send(action) {
    if (!turn) { return; }
    var seq = turn.seq;
    Array.prototype.forEach.call(document.querySelectorAll("#board button, #actions button"), function (b) { b.disabled = true; });
    root.setAttribute("data-waiting", "false");
    $("status").textContent = "You chose " + A.spoken(action) + "; waiting for the others.";
    stopClock("–");
    turn = null;
    fetch("/play/" + encodeURIComponent(sid) + "/action", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ seq: seq, action: action })
    }).then(function (r) { return r.json().then(function (j) { if (!r.ok) { log("not sent: " + j.error, "problem"); } }); });
  }
  function actionButton(action, label) {
    var b = A.el("button", "card legal" + (action === "pass" ? "" : " " + A.parts(action.split("+")[0]).suit), label);
    b.type = "button";
    b.setAttribute("aria-label", "play " + A.spoken(action));
    b.setAttribute("data-action", action);
    b.onclick = function () { send(action); };
    return b;
  }
  function render(payload) {
    var obs = payload.observation, legal = payload.legal_actions;
    var board = $("board");
    board.textContent = "";
    var mates = partners().map(function (s) { return name(s) + " (seat " + s + ")"; }).join(" and ");
    var header = A.el("p", "", "deal " + (obs.deal_index + 1) + (obs.num_deals ? " of " + obs.num_deals : "") +
      " · you are " + name(payload.seat) + " (seat " + payload.seat + ")" + (mates ? " · your partner: " + mates : ""));
    header.id = "whoami";
    board.appendChild(header);
    board.appendChild(A.table(obs, seats, payload.seat));
    var box = A.el("div", "seats");
    for (var s = 0; s < obs.num_players; s++) {
      var seatBox = A.seat(name(s), s, obs, s === payload.seat ? [] : null);
      if (partners().indexOf(s) >= 0) { seatBox.querySelector("h4").textContent += " · your partner"; }
      if (s === payload.seat) {
        var hand = seatBox.querySelector(".hand");
        hand.textContent = "";
        hand.setAttribute("data-cards", obs.hand.join(" "));
        obs.hand.forEach(function (c) {
          if (legal.indexOf(c) >= 0) {
            hand.appendChild(actionButton(c, A.parts(c).shown));
          } else {
            var b = A.el("button", "card " + A.parts(c).suit, A.parts(c).shown);
            b.type = "button"; b.disabled = true;
            b.setAttribute("aria-label", A.parts(c).spoken + ", not playable now");
            hand.appendChild(b);
          }
        });
        seatBox.classList.add("mine");
      }
      box.appendChild(seatBox);
    }
    board.appendChild(box);
    var actions = $("actions");
    actions.textContent = "";
    legal.forEach(function (a) {
      if (obs.hand.indexOf(a) < 0) { actions.appendChild(actionButton(a, A.shown(a))); }
    });
    var history = obs.history || [];
    var start = told.deal === obs.deal_index ? told.items : 0;
    var news = history.slice(start).filter(function (h) {
      return !(h.seat === payload.seat && (h.kind === "play" || h.kind === "pass"));
    }).map(function (h) { return describe(h, payload.game); }).filter(function (t) { return t; });
    told = { deal: obs.deal_index, items: history.length };
    news.forEach(function (t) { log(t); });
    if (news.length) {
      $("status").textContent = "Your turn (" + legal.length + " legal). Since your last turn: " + news.join("; ") + ".";
    } else {
      $("status").textContent = "Your turn: " + legal.length + " legal action" + (legal.length === 1 ? "" : "s") + " (highlighted, with a ✓).";
    }
  }
  function handle(kind, p) {
    received.push({ kind: kind, payload: p });
    if (kind === "session") {
      if (p.state === "queued") { $("status").textContent = "Match " + p.match_id + " queued: waiting for a worker to start it."; }
      else if (p.state === "joined") { $("status").textContent = "Seated as " + p.bot + ": waiting for a match you are in."; }
      else { $("status").textContent = "Your seat stopped: " + (p.message || p.state); root.setAttribute("data-over", "true"); }
    } else if (kind === "match_start") {
      seats = p.players;
      told = { deal: -1, items: 0 };  // a new match (a seat that stays plays several)
      if (p.seats && p.seats.length) { me = p.seats[0]; }
      log("match " + p.match_id + " started: " + p.players.join(", ") + " (" + p.game + " " + p.preset + ")");
    } else if (kind === "turn") {
      turn = p;
      me = p.seat;
      sides = p.observation.sides || [];
      root.setAttribute("data-seq", String(p.seq));
      root.setAttribute("data-waiting", "true");
      render(p);
      startClock(p.clock);
    } else if (kind === "result") {
      if (p.status !== "accepted") {
        log("your answer to turn " + p.seq + " was " + p.status + ": " + p.message + (p.penalty ? " (penalty " + p.penalty + ")" : ""), "problem");
        if (turn && turn.seq === p.seq) {
          turn = null;
          stopClock("time is up for that turn");
          Array.prototype.forEach.call(document.querySelectorAll("#board button, #actions button"), function (b) { b.disabled = true; });
          root.setAttribute("data-waiting", "false");
        }
      }
      else { log("turn " + p.seq + ": " + A.spoken(p.applied_action) + " accepted (" + p.think_ms + " ms)"); }
    } else if (kind === "deal_end") {
      var winner = p.winner < 0 ? "nobody (void)" : A.sideName(sideOf(p.winner), seats, me);
      log("deal " + (p.deal_index + 1) + " over: won by " + winner + "; changes " +
        p.deltas.map(function (d, s) { return who(s) + " " + (d > 0 ? "+" : "") + d; }).join(", ") +
        "; totals " + p.totals.map(function (t, s) { return who(s) + " " + t; }).join(", "), "deal-end");
    } else if (kind === "match_end") {
      stopClock("match over");
      var won = p.winners.map(who).join(" and ");
      $("status").textContent = "Match over: " + p.totals.map(function (t, s) { return who(s) + " " + t; }).join(", ") + " " + String(p.unit).replace(/_/g, " ") + ". Winner: " + won + ".";
      var link = A.el("a", "", "watch the replay of this match");
      link.href = "/replay/" + encodeURIComponent(p.match_id);
      $("actions").textContent = "";
      $("actions").appendChild(link);
      if (root.getAttribute("data-join") === "true") {
        root.setAttribute("data-matches", String(parseInt(root.getAttribute("data-matches") || "0", 10) + 1));
        log("waiting for your next match");
      } else {
        root.setAttribute("data-over", "true");
      }
    } else if (kind === "notice") {
      log("referee notice " + p.code + ": " + p.message);
    }
  }
  var source = new EventSource("/play/" + encodeURIComponent(sid) + "/events");
  source.addEventListener("seat", function (m) {
    var d = JSON.parse(m.data);
    handle(d.kind, d.payload);
  });
  source.onerror = function () {
    if (root.getAttribute("data-over") === "true") { source.close(); }
  };
})();
