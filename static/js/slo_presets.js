// The goal form's SLO preset: choosing one fills the target fields from the preset's published
// numbers (the page's "slo-presets" data); the fields stay editable, and "None" leaves them be.
(function () {
  "use strict";
  var data = document.getElementById("slo-presets");
  var choice = document.getElementById("id_slo_preset");
  if (!data || !choice) { return; }
  var presets = JSON.parse(data.textContent);
  choice.addEventListener("change", function () {
    var preset = presets[choice.value];
    if (!preset) { return; }
    ["ttft_ms", "tpot_ms", "e2e_ms", "percentile"].forEach(function (name) {
      var field = document.getElementById("id_" + name);
      if (field) { field.value = preset[name] === null ? "" : preset[name]; }
    });
  });
})();
