// Cards and tables as HTML, shared by the replay and the play pages (no dependencies).
// Every card is text ("7♥") with a spoken label ("7 of hearts"); suits have symbols and
// four colours, so colour is never the only signal.
(function () {
  "use strict";
  var SUITS = { C: ["♣", "clubs"], D: ["♦", "diamonds"], H: ["♥", "hearts"], S: ["♠", "spades"] };
  var RANKS = { A: ["A", "ace"], T: ["10", "10"], J: ["J", "jack"], Q: ["Q", "queen"], K: ["K", "king"] };

  function parts(text) {
    var suit = text.slice(-1), rank = text.slice(0, -1);
    var r = RANKS[rank] || [rank, rank];
    var s = SUITS[suit] || [suit, suit];
    return { suit: suit, shown: r[0] + s[0], spoken: r[1] + " of " + s[1] };
  }
  function spoken(action) {
    if (action === "pass") { return "pass"; }
    return action.split("+").map(function (c) { return parts(c).spoken; }).join(", then ");
  }
  function shown(action) {
    if (action === "pass") { return "pass"; }
    return action.split("+").map(function (c) { return parts(c).shown; }).join(" ");
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function card(text, extra) {
    var p = parts(text);
    var e = el("span", "card " + p.suit + (extra ? " " + extra : ""), p.shown);
    e.setAttribute("role", "img");
    e.setAttribute("aria-label", p.spoken);
    e.setAttribute("data-card", text);
    return e;
  }
  function back(count) {
    var wrap = el("span", "backs");
    wrap.setAttribute("role", "img");
    wrap.setAttribute("aria-label", count + " cards face down");
    wrap.setAttribute("data-count", String(count));
    for (var i = 0; i < count; i++) {
      var b = el("span", "card back", "?");
      b.setAttribute("aria-hidden", "true");
      wrap.appendChild(b);
    }
    return wrap;
  }
  // Sedma's sides in words: "you and carol", "bob and dan" (me: the viewer's seat, or -1);
  // a bot holding both seats of a side (head to head) is named once.
  function sideName(side, seats, me) {
    var names = [];
    side.forEach(function (s) {
      var n = s === me ? "you" : (seats ? seats[s] : "seat " + s);
      if (names.indexOf(n) < 0) { names.push(n); }
    });
    if (names.indexOf("you") > 0) { names.unshift(names.splice(names.indexOf("you"), 1)[0]); }
    return names.join(" and ");
  }
  // "you and carol 4, bob and dan 2" (the viewer's side first), or "4/2" with no names.
  function perSide(values, view, seats, me) {
    values = values || [];
    if (!view.sides || !seats) { return values.join("/"); }
    var order = view.sides.map(function (_s, i) { return i; });
    order.sort(function (a, b) { return (view.sides[b].indexOf(me) >= 0) - (view.sides[a].indexOf(me) >= 0); });
    return order.map(function (i) { return sideName(view.sides[i], seats, me) + " " + values[i]; }).join(", ");
  }
  // The public part of the table: Sevens rows with their ends, or Sedma's trick and talon
  // (each trick card with who played it). me: the viewer's seat (the play page), if any.
  function table(view, seats, me) {
    var box = el("div", "table-view");
    box.setAttribute("data-game", view.table ? "sevens" : "sedma");
    if (view.table) {
      ["C", "D", "H", "S"].forEach(function (suit) {
        var cards = view.table[suit] || [];
        var row = el("div", "row");
        row.setAttribute("data-suit", suit);
        var label = el("span", "suit", SUITS[suit][0] + " ");
        label.appendChild(el("span", "word", SUITS[suit][1]));
        row.appendChild(label);
        if (!cards.length) {
          row.appendChild(el("span", "card gap", "—"));
          row.setAttribute("aria-label", SUITS[suit][1] + ": empty");
        } else {
          cards.forEach(function (c, i) {
            row.appendChild(card(c, i === 0 || i === cards.length - 1 ? "end" : ""));
          });
          row.setAttribute("aria-label", SUITS[suit][1] + " row from " + parts(cards[0]).spoken +
            " to " + parts(cards[cards.length - 1]).spoken);
        }
        row.setAttribute("data-cards", cards.join(" "));
        box.appendChild(row);
      });
      if (view.pot !== undefined) { box.appendChild(el("p", "pot", "pot: " + view.pot + " chips")); }
    } else {
      var trick = el("div", "row trick");
      trick.appendChild(el("span", "suit", "trick"));
      (view.trick || []).forEach(function (t) {
        var who = t.seat === me ? "you" : (seats ? seats[t.seat] : "seat " + t.seat);
        var played = el("span", "played");
        played.setAttribute("data-seat", String(t.seat));
        var c = card(t.card);
        c.setAttribute("aria-label", parts(t.card).spoken + " by " + who);
        played.appendChild(c);
        var by = el("span", "by", who);
        by.setAttribute("aria-hidden", "true");
        played.appendChild(by);
        trick.appendChild(played);
      });
      if (!(view.trick || []).length) { trick.appendChild(el("span", "card gap", "—")); }
      trick.setAttribute("data-cards", (view.trick || []).map(function (t) { return t.card; }).join(" "));
      box.appendChild(trick);
      var facts = el("p", "sedma-facts");
      facts.textContent = "talon: " + view.talon_size + " cards · tricks won: " +
        perSide(view.tricks_won, view, seats, me) + " · card points: " + perSide(view.card_points, view, seats, me) +
        " · match points: " + perSide(view.match_points, view, seats, me) +
        (view.target ? " (to " + view.target + ")" : "");
      box.appendChild(facts);
    }
    return box;
  }
  // One seat: name, clock/points, hand face up (array of cards) or face down (a count).
  function seat(name, index, view, hand, opts) {
    opts = opts || {};
    var box = el("section", "seat" + (view.to_act === index ? " to-act" : ""));
    box.setAttribute("data-seat", String(index));
    var title = el("h4", "", name + " (seat " + index + ")" + (view.to_act === index ? " — to act" : ""));
    box.appendChild(title);
    var facts = [];
    if (view.totals) { facts.push("total " + view.totals[index] + " " + String(view.unit || "").replace(/_/g, " ")); }
    if (view.passes) { facts.push("passes " + view.passes[index]); }
    if (view.eliminated && view.eliminated[index]) { facts.push("eliminated"); }
    box.appendChild(el("p", "muted", facts.join(" · ")));
    var handBox = el("div", "hand");
    handBox.setAttribute("aria-label", name + "'s hand");
    if (hand) {
      hand.forEach(function (c) { handBox.appendChild(card(c)); });
      handBox.setAttribute("data-cards", hand.join(" "));
      if (!hand.length) { handBox.appendChild(el("span", "muted", "no cards")); }
    } else {
      handBox.appendChild(back(view.hand_sizes[index]));
      handBox.setAttribute("data-hidden", String(view.hand_sizes[index]));
    }
    box.appendChild(handBox);
    return box;
  }
  window.Arena = { card: card, back: back, table: table, seat: seat, spoken: spoken, shown: shown, el: el, parts: parts, sideName: sideName };
})();
