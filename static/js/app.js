// Transcripts: copy buttons and keyboard navigation. Everything works without this file.
(function () {
  "use strict";

  function messages() {
    return Array.prototype.slice.call(document.querySelectorAll("article.msg"));
  }

  // The message the reader is on: the focused one, else the first one in view.
  function currentMessage() {
    var active = document.activeElement && document.activeElement.closest ? document.activeElement.closest("article.msg") : null;
    if (active) return active;
    var marked = document.querySelector("article.msg.is-current");
    if (marked) return marked;
    var list = messages();
    for (var i = 0; i < list.length; i++) {
      if (list[i].getBoundingClientRect().bottom > 72) return list[i];
    }
    return list[list.length - 1] || null;
  }

  function select(message) {
    if (!message) return;
    document.querySelectorAll("article.msg.is-current").forEach(function (m) { m.classList.remove("is-current"); });
    message.classList.add("is-current");
    message.focus({ preventScroll: true });
    message.scrollIntoView({ block: "start", behavior: window.matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth" });
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var list = messages();
    if (!list.length) return;
    var current = currentMessage();
    var index = list.indexOf(current);
    if (event.key === "j" || event.key === "k") {
      var next = event.key === "j" ? index + 1 : index - 1;
      if (current && !current.classList.contains("is-current") && document.activeElement !== current) next = index;
      select(list[Math.max(0, Math.min(list.length - 1, next))]);
      event.preventDefault();
    } else if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      // Nearest message at or above the current one that has alternatives.
      for (var i = index; i >= 0; i--) {
        var link = list[i].querySelector(event.key === "ArrowLeft" ? "a.sib-prev" : "a.sib-next");
        if (list[i].querySelector(".switcher")) {
          if (link) { link.click(); event.preventDefault(); }
          return;
        }
      }
    }
  });

  // After switching branches, keep the reader on the message they switched to.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "conversation") return;
    var match = /[?&]leaf=([0-9A-Z]{26})/.exec(window.location.search);
    var message = match && document.getElementById("m-" + match[1]);
    if (message) {
      message.classList.add("is-current");
      message.focus({ preventScroll: true });
    }
  });

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(area); }
    return Promise.resolve();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (!button) return;
    copyText(button.getAttribute("data-copy") || "").then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1200);
    });
  });
})();
