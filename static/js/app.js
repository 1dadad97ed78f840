// Transcripts: copy buttons, keyboard navigation and the generation forms.
// Everything works without this file.
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

  // The control a shortcut acts on: in the current message, else (from) the nearest message
  // above it that has one (an answer's "e" edits the question before it). Null when none.
  function nearest(list, index, selector) {
    for (var i = index; i >= 0; i--) {
      var found = list[i].querySelector(selector);
      if (found) return found;
    }
    return null;
  }

  // Shortcuts on the messages: j/k move, ←/→ switch alternatives, r/e/c act on the current one.
  document.addEventListener("keydown", function (event) {
    if (!plainKey(event)) return;
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
    } else if (MESSAGE_KEYS[event.key]) {
      event.preventDefault();
      var action = MESSAGE_KEYS[event.key];
      var control = index < 0 ? null : action.pick(list, index);
      if (control) action.run(control); else announce(action.none);
    }
  });

  var MESSAGE_KEYS = {
    r: {
      pick: function (list, index) { return list[index].querySelector("button.btn-regenerate"); },
      run: function (button) { button.click(); },
      none: "This message cannot be regenerated."
    },
    e: {
      pick: function (list, index) { return nearest(list, index, "details.gen-pop:not(.gen-more)"); },
      run: function (pop) { pop.open = true; },
      none: "There is no message to edit here."
    },
    c: {
      pick: function (list, index) { return nearest(list, index, "a.sib-compare"); },
      run: function (link) { link.click(); },
      none: "This message has no alternatives to compare."
    },
    // Feedback (issue 28) on the current answer: the thumbs' buttons, pressed again to take back.
    "+": {
      pick: function (list, index) { return list[index].querySelector("button.fb-up"); },
      run: function (button) { button.click(); },
      none: "Feedback is given on answers only."
    },
    "-": {
      pick: function (list, index) { return list[index].querySelector("button.fb-down"); },
      run: function (button) { button.click(); },
      none: "Feedback is given on answers only."
    }
  };

  // An answer's feedback part, swapped in by htmx, says what was done: read it out once.
  document.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll(".fb-status:not([data-announced])").forEach(function (status) {
      status.setAttribute("data-announced", "");
      if (status.textContent.trim()) announce(status.textContent.trim());
    });
  });

  // A key press meant as a shortcut: no modifier, not typed into a field, no dialog open.
  function plainKey(event) {
    return !(event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target) ||
      document.querySelector("dialog[open]"));
  }

  /* --- keyboard (issue 26): the shortcuts overlay, "/" search, "g t" tree map --- */
  var shortcutsOpener = null;
  function showShortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (!dialog || dialog.open || typeof dialog.showModal !== "function") return;
    shortcutsOpener = document.activeElement;
    dialog.showModal();
  }
  document.addEventListener("close", function (event) {
    if (event.target.id !== "shortcuts") return;
    if (shortcutsOpener && shortcutsOpener.isConnected && shortcutsOpener.focus) shortcutsOpener.focus({ preventScroll: true });
    shortcutsOpener = null;
  }, true);

  // The page's search box, else the thread list (whose search box takes the focus on arrival).
  var SEARCH_HASH = "#search";
  function focusSearch() {
    var box = document.querySelector("input[type=search]");
    if (box) { box.focus(); box.select(); return; }
    var home = document.querySelector("a.brand");
    window.location.assign((home ? home.getAttribute("href") : "/") + SEARCH_HASH);
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (window.location.hash !== SEARCH_HASH) return;
    var box = document.querySelector("input[type=search]");
    if (box) box.focus();
  });

  var pendingG = 0;
  document.addEventListener("keydown", function (event) {
    if (event.key === "?" && !(event.ctrlKey || event.metaKey || event.altKey) && !typing(event.target)) {
      if (!document.querySelector("dialog[open]")) { showShortcuts(); event.preventDefault(); }
      return;
    }
    if (!plainKey(event)) return;
    var afterG = pendingG && Date.now() - pendingG < 1500;
    pendingG = 0;
    if (event.key === "/") {
      focusSearch();
      event.preventDefault();
    } else if (event.key === "g") {
      pendingG = Date.now();
    } else if (event.key === "t" && afterG) {
      var tree = document.querySelector("a[data-shortcut=tree]");
      if (tree) { tree.click(); event.preventDefault(); } else announce("This page has no tree map.");
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
      var count = message.querySelector(".sib-count");
      if (count) announce("Alternative " + count.textContent.trim().replace("/", " of "));
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

  // Generation forms: one popover open at a time, Escape closes it (and a message's menus),
  // Ctrl+Enter sends.
  document.addEventListener("toggle", function (event) {
    var pop = event.target;
    if (!pop.classList || !pop.classList.contains("gen-pop") || !pop.open) return;
    document.querySelectorAll("details.gen-pop[open]").forEach(function (other) { if (other !== pop) other.open = false; });
    var field = pop.querySelector("textarea, button[type=submit]");
    if (field) field.focus({ preventScroll: true });
  }, true);

  // The header's Menu (a panel on narrow screens) closes when a click lands outside it.
  document.addEventListener("click", function (event) {
    var menu = document.querySelector("details.site-menu[open]");
    if (menu && !menu.contains(event.target)) menu.open = false;
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      // From anywhere in an open popover, its summary included (a menu opened from the keyboard).
      var pop = event.target.closest ? event.target.closest("details.gen-pop[open], details.msg-menu[open], details.project-menu[open], details.site-menu[open]") : null;
      if (pop) { pop.open = false; pop.querySelector("summary").focus(); event.preventDefault(); }
      return;
    }
    var form = event.target.closest ? event.target.closest("form.gen-form, form.reply-box") : null;
    if (!form) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.tagName === "TEXTAREA") {
      form.requestSubmit();
      event.preventDefault();
    }
  });


  // Refusals (locked thread, bad input) come with a 4xx status: show them in their form.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || !xhr.getResponseHeader("X-Refusal")) return;
    // The form that sent the request (its swap target may lie outside it: feedback, scores).
    var config = event.detail.requestConfig;
    var sender = (config && config.elt) || event.detail.elt;
    var form = sender && sender.closest ? sender.closest("form") : null;
    var slot = form && form.querySelector(".gen-refusal");
    if (!slot) return;
    event.detail.shouldSwap = true;
    event.detail.isError = false;
    event.detail.target = slot;
    event.detail.swapOverride = "innerHTML";
    // A form that picks its section from the page (hx-select) takes the refusal whole.
    event.detail.selectOverride = "unset";
  });

  // Refusals that say why are shown where the answer goes: filters the server cannot apply
  // (a 400 naming them) in the thread list, a refused import (422, 413) in its result area.
  var SHOWS_REFUSALS = { "results": true, "import-result": true };
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var target = event.detail.target;
    if (!xhr || xhr.status < 400 || xhr.status >= 500 || !target) return;
    if (!SHOWS_REFUSALS[target.id]) return;
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  });

  // Reasoning streams in the open unless the reader folds it; the live block keeps that choice
  // across its re-renders.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.classList || !details.classList.contains("reasoning")) return;
    if (details.dataset.auto === "1") { delete details.dataset.auto; return; }
    var section = details.closest(".run-live");
    if (section) section.dataset.reasoning = details.open ? "open" : "closed";
  }, true);

  // Runs right after each swap, before the browser paints, so nothing flickers shut.
  function unfoldLiveReasoning() {
    document.querySelectorAll(".run-live").forEach(function (section) {
      if (section.dataset.reasoning === "closed") return;
      section.querySelectorAll("details.reasoning:not([open])").forEach(function (details) {
        details.dataset.auto = "1";
        details.open = true;
      });
    });
  }
  document.addEventListener("htmx:afterSwap", unfoldLiveReasoning);
  document.addEventListener("DOMContentLoaded", unfoldLiveReasoning);

  // A new run appears in place of what follows its fork point: bring it into view.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    var conversation = document.getElementById("conversation");
    if (!target || target.id !== "conversation" || !conversation) return;
    var live = conversation.querySelector(".run-live.is-open");
    if (!live) return;
    var box = live.getBoundingClientRect();
    if (box.top < 56 || box.top > window.innerHeight - 80) {
      live.scrollIntoView({ block: "center", behavior: window.matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth" });
    }
  });

  // Listeners instead of hx-on attributes: the Content-Security-Policy allows no eval.
  // A menu item that loads a form in place closes its menu once the request is done.
  document.addEventListener("htmx:afterRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    var menu = elt && elt.closest ? elt.closest("details.msg-menu") : null;
    if (menu) menu.open = false;
  });

  // Cancel on a report form shown in place removes the form; on its own page it goes back.
  document.addEventListener("click", function (event) {
    var cancel = event.target.closest ? event.target.closest("a.report-cancel") : null;
    var form = cancel && cancel.closest(".report-slot .report-form");
    if (!form) return;
    event.preventDefault();
    form.remove();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (!button) return;
    copyText(button.getAttribute("data-copy") || "").then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      announce("Copied");
      setTimeout(function () { button.textContent = label; }, 1200);
    });
  });

  /* --- stop keeps what streamed --- */
  // After Stop, focus goes to what was kept: the stopped message once the conversation is
  // swapped in (the POST answers with HX-Location), or the live block's note when the run was
  // only cancelled. Settles before that (a live re-render) leave the wish pending.
  var focusAfterStop = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.closest && elt.closest("form.stop-form")) focusAfterStop = true;
  });
  // The run's last status re-renders the live block after the note got focus: keep it there.
  var noteHadFocus = false;
  document.addEventListener("htmx:beforeSwap", function () {
    noteHadFocus = !!(document.activeElement && document.activeElement.matches && document.activeElement.matches(".run-live-note"));
  });
  document.addEventListener("htmx:afterSettle", function () {
    var note = document.querySelector(".run-live-note");
    if (noteHadFocus && note && document.activeElement !== note) note.focus();
    noteHadFocus = false;
    if (!focusAfterStop) return;
    var stopped = document.querySelectorAll("#conversation article.msg.is-stopped");
    var target = stopped.length ? stopped[stopped.length - 1] : document.querySelector(".run-live-note");
    if (!target) return;
    focusAfterStop = false;
    select(target.matches("article.msg") ? target : null);
    if (!target.matches("article.msg")) target.focus();
  });
  /* --- remote images load when the reader asks --- */
  // A placeholder's "Load image from <host>" button swaps in the image (only listed hosts get
  // one: the Content-Security-Policy blocks the others). Focus stays on the placeholder.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-image-src]") : null;
    var holder = button && button.closest(".remote-image");
    if (!holder) return;
    var image = document.createElement("img");
    image.referrerPolicy = "no-referrer";
    image.alt = button.getAttribute("data-image-alt") || "";
    image.addEventListener("error", function () {
      var note = document.createElement("span");
      note.className = "remote-image-note";
      note.textContent = "The image could not be loaded.";
      holder.replaceChildren(note);
    });
    image.src = button.getAttribute("data-image-src");
    holder.classList.add("is-loaded");
    holder.setAttribute("tabindex", "-1");
    holder.replaceChildren(image);
    holder.focus({ preventScroll: true });
  });

  /* --- new thread, recent threads --- */
  // Ctrl+Enter in the new-thread form sends it, as in the reply box.
  document.addEventListener("keydown", function (event) {
    var form = event.target.closest ? event.target.closest("form.new-thread-form") : null;
    if (form && event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.tagName === "TEXTAREA") {
      form.requestSubmit();
      event.preventDefault();
    }
  });

  // The recent threads stay folded once folded (per browser).
  var RECENT_FOLDED = "transcripts.recentThreadsFolded";
  function remember(key, value) { try { window.localStorage.setItem(key, value); } catch (e) { /* storage off */ } }
  function recall(key) { try { return window.localStorage.getItem(key); } catch (e) { return null; } }
  document.querySelectorAll("details.recent-box").forEach(function (box) {
    if (recall(RECENT_FOLDED) === "1") box.open = false;
    box.addEventListener("toggle", function () { remember(RECENT_FOLDED, box.open ? "0" : "1"); });
  });

  /* --- keyboard (issue 26): live announcements and focus after a run --- */
  // One polite status region (#announcer, in every page) says what changed, debounced: a run
  // that starts and ends within the pause is only said to have ended. Streaming text is never
  // inside a live region, so a screen reader is never read the answer token by token.
  var announceTimer = 0;
  function announce(text) {
    var region = document.getElementById("announcer");
    if (!region) return;
    window.clearTimeout(announceTimer);
    announceTimer = window.setTimeout(function () {
      region.textContent = "";
      // A fresh text node in the next frame: the same words said twice are announced twice.
      window.requestAnimationFrame(function () { region.textContent = text; });
    }, 400);
  }

  // Runs seen open on this page, by id: "open" (or "mine": started by this reader here, so its
  // end takes the focus) until their end has been announced, then "done".
  var runsSeen = {};
  // A generation form was sent: the next run to appear is the reader's.
  var expectingRun = false;
  var STARTS_RUN = "form.gen-quick, form.gen-form, form.reply-box, .run-live-head form.gen-inline:not(.stop-form)";
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.closest && elt.closest(STARTS_RUN)) expectingRun = true;
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail && event.detail.failed) expectingRun = false;  // refused: no run started
  });
  var OPEN = { queued: true, streaming: true };
  var ENDED = { failed: true, cancelled: true };

  // The words for a run that failed or was stopped while this page watched it.
  function runEnd(status, body) {
    if (status === "failed") {
      var error = body.querySelector(".run-failed");
      return "Failed: " + (error ? error.textContent.replace(/^\s*Generation failed\.\s*/, "").trim() : "the answer could not be generated.");
    }
    return "Stopped";
  }

  // Each live block: announce its start once; on failure announce the error and focus it.
  function watchLiveBlocks() {
    document.querySelectorAll(".run-live").forEach(function (section) {
      var id = section.id.replace(/^run-/, "");
      var body = section.querySelector(".run-live-body");
      var status = body ? body.getAttribute("data-status") : "";
      if (OPEN[status]) {
        if (!runsSeen[id]) {
          runsSeen[id] = expectingRun ? "mine" : "open";
          expectingRun = false;
          announce("Assistant is answering…");
        }
        return;
      }
      var seen = runsSeen[id];
      if ((seen !== "open" && seen !== "mine") || !ENDED[status]) return;
      runsSeen[id] = "done";
      announce(runEnd(status, body));
      var error = body.querySelector(".run-failed");
      if (error && seen === "mine" && !typing(document.activeElement)) error.focus();
    });
  }

  // The last answer a committed run made (its last message if it made none), or null.
  function lastAnswerOf(id) {
    var made = Array.prototype.filter.call(
      document.querySelectorAll('#conversation article.msg[data-run="' + id + '"]'),
      function (m) { return !m.closest(".run-live"); });
    var answers = made.filter(function (m) { return m.classList.contains("role-assistant"); });
    if (answers.length) made = answers;
    return made.length ? made[made.length - 1] : null;
  }

  // A watched run whose live block gave way to committed messages: announce it, and focus
  // its last answer when the reader started it (and is not typing somewhere meanwhile).
  function watchCommits() {
    Object.keys(runsSeen).forEach(function (id) {
      var seen = runsSeen[id];
      if ((seen !== "open" && seen !== "mine") || document.getElementById("run-" + id)) return;
      var answer = lastAnswerOf(id);
      if (!answer) return;
      runsSeen[id] = "done";
      announce(answer.classList.contains("is-stopped") ? "Stopped" : "Answer finished");
      if (seen === "mine" && !answer.contains(document.activeElement) && !typing(document.activeElement)) select(answer);
    });
  }

  function watchRuns() { watchLiveBlocks(); watchCommits(); }
  document.addEventListener("htmx:afterSettle", watchRuns);
  document.addEventListener("DOMContentLoaded", watchRuns);

  /* --- live (issue 27): new threads and runs arrive in open pages --- */
  // A page with a [data-live-stream] marker holds one stream of its project's thread and run
  // events (ids and statuses only), closed on pagehide. What it shows it asks the server for,
  // with the reader's rights: a list row checked against the list's filters, a new live block.
  var liveSource = null;
  function openLive() {
    var marker = document.querySelector("[data-live-stream]");
    if (!marker || liveSource || typeof EventSource !== "function") return;
    liveSource = new EventSource(marker.getAttribute("data-live-stream"));
    // Marked once the stream answers (tests wait for it rather than for a fixed time).
    liveSource.addEventListener("open", function () { marker.setAttribute("data-live-open", ""); });
    ["thread", "run"].forEach(function (kind) {
      liveSource.addEventListener(kind, function (event) {
        var data;
        try { data = JSON.parse(event.data); } catch (e) { return; }
        liveList(data);
        liveConversation(data);
      });
    });
  }
  document.addEventListener("DOMContentLoaded", openLive);
  window.addEventListener("pageshow", function (event) { if (event.persisted) openLive(); });
  window.addEventListener("pagehide", function () {
    if (liveSource) liveSource.close();
    liveSource = null;
  });

  function parseHtml(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  // The list: a row of a thread it was told about, fetched through the list's own view with
  // its filters (a 204 when the thread does not pass them), a few events of one thread merged.
  var rowTimers = {};
  var unseen = {};
  function liveList(data) {
    var bar = document.getElementById("live-bar");
    if (!bar || !data.thread) return;
    window.clearTimeout(rowTimers[data.thread]);
    rowTimers[data.thread] = window.setTimeout(function () {
      delete rowTimers[data.thread];
      var params = new URLSearchParams(window.location.search);
      params.delete("cursor");
      params.set("only", data.thread);
      fetch(bar.getAttribute("data-live-list") + "?" + params.toString(), { credentials: "same-origin" })
        .then(function (response) {
          // 204: the thread no longer passes the filters (or may not be read): its row goes.
          if (response.status === 204) dropRow(data.thread);
          return response.status === 200 ? response.text() : "";
        })
        .then(function (html) { if (html) placeRow(bar, data, parseHtml(html).querySelector("tr.thread-row")); })
        .catch(function () { /* the next event tries again */ });
    }, 150);
  }

  function dropRow(threadId) {
    var row = rowOf(threadId);
    if (row && !row.contains(document.activeElement)) row.remove();
  }

  function rowOf(threadId) {
    var link = document.querySelector('#results .thread-row a[href$="/t/' + threadId + '/"]');
    return link ? link.closest(".thread-row") : null;
  }

  // Newest activity first, nothing filtered: new rows go on top. Otherwise they wait behind
  // the "N new · show" bar, so what the reader is looking at does not move.
  function listTakesNewRows() {
    var params = new URLSearchParams(window.location.search);
    var plain = true;
    params.forEach(function (value, key) {
      if (value && !(key === "sort" && value === "recent")) plain = false;
    });
    return plain;
  }

  function placeRow(bar, data, row) {
    if (!row) return;
    var existing = rowOf(data.thread);
    var list = document.querySelector("#results table.thread-table tbody");
    if (listTakesNewRows() && (list || !existing)) {
      if (!list) { refreshResults(); return; }  // an empty list: the table comes with its headers
      if (existing) existing.remove();
      list.insertBefore(row, list.firstElementChild);
      if (!existing) announce("New thread: " + (row.querySelector("a") || row).textContent.trim());
    } else if (existing) {
      existing.replaceWith(row);
    } else {
      unseen[data.thread] = true;
      var count = Object.keys(unseen).length;
      bar.querySelector(".live-bar-count").textContent = count + " new";
      bar.querySelector("a").setAttribute("href", window.location.pathname + window.location.search);
      bar.hidden = false;
      announce(count + (count === 1 ? " new thread" : " new threads") + " match this list");
      return;
    }
    if (window.htmx) window.htmx.process(row);
  }

  // The list's results as the server renders them now (the first row of an empty list).
  function refreshResults() {
    fetch(window.location.pathname + window.location.search, {
      credentials: "same-origin", headers: { "HX-Request": "true", "HX-Target": "results" }
    }).then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var fresh = html && parseHtml(html).getElementById("results");
        var results = document.getElementById("results");
        if (!fresh || !results) return;
        results.replaceWith(fresh);
        if (window.htmx) window.htmx.process(fresh);
      })
      .catch(function () { /* the next event tries again */ });
  }

  // The conversation: a run of this thread that began after the page loaded comes in as its
  // live block, where the server places it; the reader's place and reply box are kept.
  function liveConversation(data) {
    var marker = document.getElementById("live-thread");
    if (!marker || data.thread !== marker.getAttribute("data-live-thread")) return;
    if (data.kind !== "run" || !OPEN[data.status] || document.getElementById("run-" + data.run)) return;
    fetchConversation().then(function (fragment) {
      var section = fragment && fragment.getElementById("run-" + data.run);
      if (!section || document.getElementById("run-" + data.run)) return;
      var conversation = document.getElementById("conversation");
      if (!conversation) return;
      markRemote(section);
      placeSection(conversation, section);
      refreshPlaces(fragment);
      if (window.htmx) window.htmx.process(section);
      watchRuns();
    });
  }

  // The conversation as the server renders it now: this page's address, or at leaf.
  function fetchConversation(leaf) {
    var params = new URLSearchParams(window.location.search);
    if (leaf) params.set("leaf", leaf);
    var query = params.toString();
    return fetch(window.location.pathname + (query ? "?" + query : ""), {
      credentials: "same-origin", headers: { "HX-Request": "true", "HX-Target": "conversation" }
    }).then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) { return html ? parseHtml(html) : null; })
      .catch(function () { return null; });
  }

  // Its commit answers with a notice instead of the conversation when it does not continue the
  // branch being read (views/runs.py: ?remote=1 and ?tip=, the last message shown).
  function markRemote(section) {
    var tip = document.querySelector("#conversation .pager-later") ? "-" : (lastShown() || "");
    section.classList.add("run-live-remote");
    [section].concat(Array.prototype.slice.call(section.querySelectorAll("[hx-get]"))).forEach(function (elt) {
      var url = elt.getAttribute("hx-get");
      if (!url || url.indexOf("/live") < 0) return;
      elt.setAttribute("hx-get", url + (url.indexOf("?") < 0 ? "?" : "&") + "remote=1&tip=" + encodeURIComponent(tip));
    });
  }

  // The id of the last message the reader sees (not one of a live block), or null.
  function lastShown() {
    var shown = Array.prototype.filter.call(document.querySelectorAll("#conversation article.msg"),
      function (m) { return !m.closest(".run-live"); });
    return shown.length ? shown[shown.length - 1].getAttribute("data-id") : null;
  }

  // After the message it follows in the server's page, else before the one it precedes, else
  // before the reply box.
  function placeSection(conversation, section) {
    var before = section.previousElementSibling;
    var after = section.nextElementSibling;
    var anchor = before && before.id && document.getElementById(before.id);
    if (anchor && conversation.contains(anchor)) { anchor.after(section); return; }
    anchor = after && after.id && document.getElementById(after.id);
    if (anchor && conversation.contains(anchor)) { anchor.before(section); return; }
    var reply = conversation.querySelector(".reply-box");
    var slot = reply ? reply.closest("#conversation > *") : null;
    if (slot) slot.before(section); else conversation.appendChild(section);
  }

  // The header's live tag and each message's alternatives, as the server now counts them.
  function refreshPlaces(fragment) {
    var tag = fragment.getElementById("live-tag");
    var mine = document.getElementById("live-tag");
    if (tag && mine) mine.innerHTML = tag.innerHTML;
    document.querySelectorAll("#conversation article.msg").forEach(function (message) {
      if (message.closest(".run-live")) return;
      var fresh = fragment.getElementById(message.id);
      var nav = fresh && fresh.querySelector("nav.switcher");
      var old = message.querySelector("nav.switcher");
      if (!nav || (old && old.outerHTML === nav.outerHTML)) return;
      if (old) old.replaceWith(nav);
      else {
        var spacer = message.querySelector(".msg-head .spacer");
        if (!spacer) return;
        spacer.before(nav);
      }
      if (window.htmx) window.htmx.process(nav);
    });
  }

  // A notice that an arrived run committed on another branch: said once, the counts refreshed.
  document.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll(".live-committed:not([data-said])").forEach(function (notice) {
      notice.setAttribute("data-said", "1");
      announce("A new answer arrived on another branch");
      fetchConversation(lastShown()).then(function (fragment) { if (fragment) refreshPlaces(fragment); });
    });
  });
})();

/* --- Queues (issue 28): the review page by keyboard. Digits answer the first score (a
   number within its range, or its nth label), y/n the first yes-or-no score, Enter submits
   and opens the next item, s skips. Nothing happens while the reader types in a field. --- */
(function () {
  "use strict";

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function pick(fieldset, value) {
    var radio = fieldset.querySelector('input[type=radio][value="' + value + '"]');
    if (radio) { radio.checked = true; return true; }
    return false;
  }

  function answerDigit(page, digit) {
    var fieldset = page.querySelector("fieldset[data-queue-digits]");
    if (!fieldset) return false;
    var number = fieldset.querySelector("input[type=number]");
    if (number) {
      var low = number.min === "" ? -Infinity : Number(number.min);
      var high = number.max === "" ? Infinity : Number(number.max);
      if (digit < low || digit > high) return false;
      number.value = String(digit);
      return true;
    }
    var radios = fieldset.querySelectorAll("input[type=radio]");
    if (digit < 1 || digit > radios.length) return false;
    radios[digit - 1].checked = true;
    return true;
  }

  document.addEventListener("keydown", function (event) {
    var page = document.querySelector("[data-queue-review]");
    if (!page || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (document.querySelector("dialog[open]")) return;
    var target = event.target;
    if (event.key === "Enter") {
      if (target && target.closest && target.closest("textarea, button, a, summary, select")) return;
      var form = page.querySelector("form[data-queue-primary]");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (typing(target) && !(target.type === "radio" || target.type === "checkbox")) return;
    var handled = false;
    if (/^[0-9]$/.test(event.key)) {
      handled = answerDigit(page, Number(event.key));
    } else if (event.key === "y" || event.key === "n") {
      var yesno = page.querySelector("fieldset[data-queue-yesno]");
      handled = yesno ? pick(yesno, event.key === "y" ? "yes" : "no") : false;
    } else if (event.key === "s") {
      var skip = page.querySelector("form[data-queue-skip]");
      if (skip) { skip.requestSubmit(); handled = true; }
    }
    if (handled) event.preventDefault();
  });

  /* --- Score panel (issue 28): after a save or a removal swaps the answer's scores part, the
     focus goes back to the form's Save button (the button pressed was disabled meanwhile),
     unless the reader has moved it elsewhere while the answer came --- */
  var scoreFocus = "";
  var scoreFrom = null;
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("score-form")) return;
    var save = form.querySelector("button[value=save]");
    scoreFocus = save ? save.id : "";
    scoreFrom = document.activeElement;
  }, true);
  document.addEventListener("htmx:afterSettle", function () {
    if (!scoreFocus) return;
    var back = document.getElementById(scoreFocus);
    var active = document.activeElement;
    var moved = active && active !== document.body && active !== scoreFrom && active.isConnected;
    scoreFocus = "";
    scoreFrom = null;
    if (back && !moved) back.focus();
  });
})();

/* --- Experiments (issue 29), judge mode by keyboard: a (A, the baseline, is better), b (B, the
   candidate), t (tie) and n (skip to the next pair) submit the matching form; nothing happens
   while the reader types in a field, with a modifier held or with a dialog open. After htmx
   swaps the next pair in, the screen reader hears the progress. --- */
(function () {
  "use strict";

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (event) {
    var page = document.querySelector("[data-judge]");
    if (!page || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (typing(event.target) || document.querySelector("dialog[open]")) return;
    if (!/^[abtn]$/.test(event.key)) return;
    var form = page.querySelector('form[data-judge-key="' + event.key + '"]');
    if (!form || form.hasAttribute("data-judge-sent")) return;
    form.setAttribute("data-judge-sent", "");
    event.preventDefault();
    form.requestSubmit();
  });

  // A refused verdict (its page says why) leaves its key usable again.
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail && event.detail.elt;
    if (form && form.hasAttribute && form.hasAttribute("data-judge-key") && !event.detail.successful) {
      form.removeAttribute("data-judge-sent");
    }
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    var swapped = (event.target && event.target.id === "judge-pair") || (target && target.id === "judge-pair");
    if (!swapped) return;
    var pair = document.getElementById("judge-pair");
    var region = document.getElementById("announcer");
    var progress = document.getElementById("judge-progress");
    if (region && progress) region.textContent = progress.textContent.trim();
    if (pair) pair.focus();
  });

  // A block that scrolls (a long tool input or result, code wider than a phone) takes the
  // focus, so a keyboard can scroll it: only while it does scroll, so short ones add no stop.
  function focusScrollers(root) {
    (root || document).querySelectorAll("pre").forEach(function (pre) {
      if (pre.hasAttribute("data-scroll-stop") || !pre.hasAttribute("tabindex")) {
        var scrolls = pre.scrollWidth > pre.clientWidth + 1 || pre.scrollHeight > pre.clientHeight + 1;
        if (scrolls) {
          pre.setAttribute("tabindex", "0");
          pre.setAttribute("data-scroll-stop", "");
        } else if (pre.hasAttribute("data-scroll-stop")) {
          pre.removeAttribute("tabindex");
          pre.removeAttribute("data-scroll-stop");
        }
      }
    });
  }
  var refocusing = null;
  function focusScrollersSoon() {
    if (refocusing) return;
    refocusing = window.requestAnimationFrame(function () { refocusing = null; focusScrollers(); });
  }
  document.addEventListener("DOMContentLoaded", function () { focusScrollers(); });
  // After a swap, only what was swapped (a live run swaps often): the whole page when it is gone.
  document.addEventListener("htmx:afterSettle", function (event) {
    var swapped = event.detail && event.detail.target;
    focusScrollers(swapped && swapped.isConnected ? swapped : document);
  });
  document.addEventListener("toggle", function (event) {
    if (event.target && event.target.open) focusScrollers(event.target);
  }, true);
  window.addEventListener("resize", focusScrollersSoon);
})();
