// Share links in the conversation: the panel opens in place (htmx), Close folds it away, and
// a new link is brought into view with its Copy button focused (app.js copies `data-copy`).
// Without this file Close is a plain link back to the conversation.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var close = event.target.closest ? event.target.closest("#share-slot a.share-close") : null;
    if (!close) return;
    event.preventDefault();
    var slot = document.getElementById("share-slot");
    if (slot) slot.replaceChildren();
    var opener = document.querySelector("a.share-open");
    if (opener) opener.focus();
  });

  document.addEventListener("htmx:afterSettle", function () {
    var copy = document.querySelector("#share-slot .new-share button[data-copy]");
    if (copy && !copy.dataset.shown) {
      copy.dataset.shown = "1";
      copy.scrollIntoView({ block: "nearest" });
      copy.focus({ preventScroll: true });
    }
  });
})();
