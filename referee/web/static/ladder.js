// The ladder page: re-reads /api/ladder/ID every two seconds and redraws the table.
(function () {
  "use strict";
  const head = document.getElementById("ladder-head");
  if (!head) return;
  const ladder = head.dataset.ladder;
  const cell = (text) => {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  };
  async function refresh() {
    try {
      const response = await fetch("/api/ladder/" + encodeURIComponent(ladder));
      if (!response.ok) return;
      const table = await response.json();
      document.getElementById("ladder-state").textContent = table.state;
      document.getElementById("ladder-batches").textContent = table.batches;
      const body = document.getElementById("ladder-rows");
      body.replaceChildren(
        ...table.rows.map((r) => {
          const tr = document.createElement("tr");
          const name = document.createElement("td");
          const link = document.createElement("a");
          link.href = "/bot/" + encodeURIComponent(r.bot);
          link.textContent = r.bot;
          name.append(link);
          if (r.prev) name.append(" (new version of " + r.prev + ")");
          if (r.retired) name.append(" [retired]");
          tr.append(
            cell(r.rank), name, cell(r.mu.toFixed(2)), cell(r.sigma.toFixed(2)),
            cell(r.ordinal.toFixed(2) + (r.provisional ? " ?" : "")),
            cell(r.matches), cell(r.deals),
          );
          return tr;
        }),
      );
    } catch (e) {
      // the next poll tries again
    }
  }
  setInterval(refresh, 2000);
})();
