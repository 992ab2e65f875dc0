// Behaviour every page shares, kept out of the HTML so the Content-Security-Policy can refuse
// inline script: confirmations (data-confirm), select boxes that submit their form
// (data-autosubmit), print buttons (data-print) and keyboard reach of scrolling boxes.
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
  // A box that scrolls sideways (a wide table, a long log) takes the keyboard focus, so the
  // arrow keys scroll it without a mouse.
  document.querySelectorAll(".table-scroll, .matrix-wrap, pre").forEach(function (box) {
    if (box.scrollWidth > box.clientWidth && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
    }
  });
})();
