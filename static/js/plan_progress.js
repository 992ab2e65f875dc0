// Polls the plan's progress JSON and updates each job row until the plan is finished.
(function () {
  "use strict";
  var table = document.getElementById("jobs");
  if (!table) { return; }
  var url = table.getAttribute("data-progress-url");
  var POLL_MS = 2000;

  function setState(element, state, label) {
    element.className = "state state-" + state;
    element.textContent = label;
  }

  // A finished job or plan has nothing left to cancel.
  function hide(element) {
    var form = element && element.closest("form");
    if (form) { form.hidden = true; }
  }

  function verdict(probe) {
    var span = document.createElement("span");
    if (probe.passed === null) {
      span.className = "muted";
      span.textContent = "incomplete";
    } else {
      span.className = "state state-" + (probe.passed ? "succeeded" : "failed");
      span.textContent = probe.passed ? "pass" : "fail";
    }
    return span;
  }

  // Redraws a search's probe table and answer; probes arrive one by one as results land.
  function updateSearch(job) {
    var probes = document.querySelector('table[data-search-job="' + job.id + '"] tbody');
    if (!probes || !job.search) { return; }
    probes.textContent = "";
    job.search.probes.forEach(function (probe) {
      var row = probes.insertRow();
      [String(probe.index), probe.rate_rps.toFixed(3), String(probe.requests),
       probe.attainment === null ? "\u2014" : probe.attainment.toFixed(3)].forEach(function (text) {
        row.insertCell().textContent = text;
      });
      row.insertCell().appendChild(verdict(probe));
    });
    var answer = document.querySelector('[data-answer-job="' + job.id + '"]');
    answer.textContent = job.search.answer ? job.search.answer.text : "No probe has finished yet.";
  }

  function update(data) {
    setState(document.getElementById("plan-state"), data.state, data.state_label);
    data.jobs.forEach(function (job) {
      var row = table.querySelector('tr[data-job="' + job.id + '"]');
      if (!row) { return; }
      setState(row.querySelector('[data-field="state"]'), job.state, job.state_label);
      row.querySelector('[data-field="reason"]').textContent = job.state_reason;
      row.querySelector('[data-field="progress"]').value = job.fraction;
      row.querySelector('[data-field="message"]').textContent = job.message;
      if (job.terminal) { hide(row.querySelector("form")); }
      updateSearch(job);
    });
    if (data.state !== "running") { hide(document.getElementById("cancel-plan")); }
    return data.state === "running";
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data === null || update(data)) { window.setTimeout(poll, POLL_MS); }
      })
      .catch(function () { window.setTimeout(poll, POLL_MS * 2); });
  }

  window.setTimeout(poll, POLL_MS);
})();
