// Behaviour every page shares, kept out of the HTML so the Content-Security-Policy can refuse
// inline script: confirmations (data-confirm), select boxes that submit their form
// (data-autosubmit) and print buttons (data-print).
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) { event.preventDefault(); }
  });
  document.addEventListener("change", function (event) {
    if (event.target.hasAttribute("data-autosubmit")) { event.target.form.submit(); }
  });
  document.addEventListener("click", function (event) {
    if (event.target.hasAttribute("data-print")) { window.print(); }
  });
})();
