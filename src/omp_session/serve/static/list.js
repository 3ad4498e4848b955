// omp-session serve, the sessions list: a changed choice (project, dates, sort) applies at once;
// the text field applies on Enter, like any form. Paging stays on the server.
(function () {
  'use strict';
  var form = document.getElementById('filters');
  if (!form) return;
  var auto = form.querySelectorAll('select, input[type=date], input[type=checkbox]');
  for (var i = 0; i < auto.length; i++) {
    auto[i].addEventListener('change', function () {
      var page = form.querySelector('input[name=page]');
      if (page) page.remove();  // a new filter starts again at the first page
      form.submit();
    });
  }
})();
