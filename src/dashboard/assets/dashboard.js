// Progressive enhancement only: every page works without this file.
// The copy button beside a new key's secret (shown only when the clipboard can be written).
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    var input = document.getElementById(button.getAttribute('data-copy'));
    var status = document.querySelector('[data-copied]');
    if (!input || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(input.value).then(
        function () { if (status) { status.hidden = false; status.textContent = 'Copied to the clipboard.'; } },
        function () { input.select(); if (status) { status.hidden = false; status.textContent = 'Select the secret and copy it (Ctrl+C).'; } }
      );
    });
  });
});
