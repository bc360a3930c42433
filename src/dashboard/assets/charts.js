// Draws each <canvas data-chart="ID"> from the JSON in <script type="application/json" id="ID">
// (no inline script: the page's Content-Security-Policy allows this origin's files only). The
// same figures are in the table beside each chart.
document.addEventListener('DOMContentLoaded', function () {
  if (typeof Chart === 'undefined') return;
  document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
    var source = document.getElementById(canvas.getAttribute('data-chart'));
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    var colors = ['#0b5cad', '#1a7f37', '#9a6700', '#b42318', '#8250df', '#57606a'];
    new Chart(canvas, {
      type: spec.type || 'bar',
      data: {
        labels: spec.labels,
        datasets: spec.series.map(function (s, i) {
          return { label: s.label, data: s.data, backgroundColor: colors[i % colors.length], borderColor: colors[i % colors.length], borderWidth: spec.type === 'line' ? 2 : 0, pointRadius: 0 };
        }),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: { x: { stacked: !!spec.stacked }, y: { stacked: !!spec.stacked, beginAtZero: true } },
        plugins: { legend: { position: 'bottom' } },
      },
    });
  });
});
