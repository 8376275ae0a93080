/* global document, navigator, Element */
// Comfort only: every action works without this script. A "Copy" button copies the text of the element
// its data-copy attribute names.
'use strict';
document.addEventListener('click', function (event) {
  var button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button || !navigator.clipboard) return;
  var source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(function () {
    var status = document.getElementById(button.getAttribute('data-copy') + '-status');
    if (status) status.textContent = 'Copied.';
  });
});
document.querySelectorAll('button[data-copy]').forEach(function (button) { button.hidden = false; });
// Typing a date in a field with data-choose checks the radio button it names ("On a date"): without script
// the owner checks it.
document.addEventListener('input', function (event) {
  var field = event.target instanceof Element ? event.target.closest('input[data-choose]') : null;
  if (!field || field.value === '') return;
  var radio = document.getElementById(field.getAttribute('data-choose'));
  if (radio) radio.checked = true;
});
