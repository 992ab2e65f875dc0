// Draws every figure the page carries as JSON data (<script type="application/json">).
document.querySelectorAll("script[id^='figure-']").forEach(function (node) {
  var figure = JSON.parse(JSON.parse(node.textContent));
  var target = document.getElementById(node.id.replace("figure-", "chart-"));
  if (target) { Plotly.newPlot(target, figure.data, figure.layout, {responsive: true, displaylogo: false}); }
});
