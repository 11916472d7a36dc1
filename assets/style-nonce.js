// gridgate: lets the page's own scripts add <style> elements under its Content-Security-Policy
// (served by src/http/pages.rs). It must be the first script of the page.
//
// The policy allows styles from the server and, besides, only <style> elements that carry
// the page's per-response nonce: React libraries create such elements at run time (the
// Playground's styled-components for all of its styling, GraphiQL's dialogs to lock
// scrolling) and cannot be given the nonce themselves, because their bundles keep webpack's
// nonce variable private. So the one nonce, handed to this script alone, is stamped on every
// <style> element a script creates. Markup injected into the page (a <style> in a response
// rendered as HTML, say) never passes through createElement and stays blocked, as does any
// inline script: script-src is 'self' only.
(function () {
  'use strict';
  var script = document.currentScript;
  var nonce = script && script.nonce;
  if (!nonce) {
    return;
  }
  var createElement = Document.prototype.createElement;
  Document.prototype.createElement = function (tagName, options) {
    var element = createElement.call(this, tagName, options);
    if (typeof tagName === 'string' && tagName.toLowerCase() === 'style') {
      // The content attribute, not only the property: CSP reads the nonce an element was
      // given through its attribute.
      element.setAttribute('nonce', nonce);
    }
    return element;
  };
})();
