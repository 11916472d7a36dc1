// gridgate: starts GraphQL Playground on the page that GET /playground serves
// (src/http/pages.rs). It is a file rather than an inline script so that the page's
// Content-Security-Policy can forbid inline scripts altogether.
(function () {
  'use strict';
  var root = document.getElementById('root');
  GraphQLPlayground.init(root, {
    endpoint: root.getAttribute('data-endpoint'),
  });
})();
