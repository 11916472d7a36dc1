// gridgate: starts GraphiQL on the page that GET /graphql serves to browsers
// (src/http/pages.rs). It is a file rather than an inline script so that the page's
// Content-Security-Policy can forbid inline scripts altogether.
(function () {
  'use strict';
  var root = document.getElementById('graphiql');
  var endpoint = root.getAttribute('data-endpoint');
  var fetcher = GraphiQL.createFetcher({ url: endpoint });
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultEditorToolbarTabs: 'headers',
    })
  );
})();
