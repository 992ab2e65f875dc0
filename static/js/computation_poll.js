/* Poll the computation's status; reload once the candidates are stored, say why on failure. */
(function () {
  var box = document.getElementById("computation");
  var text = document.getElementById("computation-text");
  var labels = {queued: "Queued, waiting for a worker", running: "Computing candidates"};
  var started = Date.now();
  function poll() {
    fetch(box.dataset.statusUrl, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) { return response.json(); })
      .then(function (status) {
        box.dataset.computation = status.computation;
        if (status.computation === "done") { window.location.reload(); return; }
        if (status.computation === "failed") { text.textContent = "Failed: " + status.error; return; }
        if (status.computation === "idle") { text.textContent = "Not computing: the goal changed, compute again."; return; }
        var seconds = Math.round((Date.now() - started) / 1000);
        text.textContent = (labels[status.computation] || status.computation) + " (" + seconds + " s)…";
        window.setTimeout(poll, 1000);
      });
  }
  window.setTimeout(poll, 1000);
})();
