/* The tree map's keyboard (issue 26): the outline is an ARIA tree (role="tree", written by the
   server); this makes it one Tab stop with a roving tabindex and the arrow keys of a tree view:
   ↓/↑ the next/previous visible line, → opens a fork point's branches or moves into them,
   ← closes them or moves to the fork point above, Home/End the first/last line, Enter opens a
   line (each is a link). Without this script every line is a plain link and every fork point
   a <details>. */
(function () {
  "use strict";

  function items(tree) {
    return Array.prototype.slice.call(tree.querySelectorAll('[role="treeitem"]'));
  }

  // Visible: not inside a closed fork point (a closed <details> hides its content).
  function visible(tree) {
    return items(tree).filter(function (item) {
      return item.checkVisibility ? item.checkVisibility() : item.getClientRects().length > 0;
    });
  }

  function group(item) {
    var id = item.getAttribute("aria-owns");
    return id ? document.getElementById(id) : null;
  }

  function details(item) {
    var owned = group(item);
    return owned ? owned.querySelector("details") : null;
  }

  function parentItem(item) {
    var owner = item.parentElement ? item.parentElement.closest('[role="group"]') : null;
    return owner ? document.querySelector('[aria-owns="' + owner.id + '"]') : null;
  }

  function focusItem(tree, item) {
    if (!item) return;
    items(tree).forEach(function (other) { other.tabIndex = other === item ? 0 : -1; });
    item.focus();
  }

  function setOpen(item, open) {
    var fold = details(item);
    if (fold) fold.open = open;
    item.setAttribute("aria-expanded", open ? "true" : "false");
  }

  // A tree holds only its lines: a fork point's <summary> (its toggle without this script) gives
  // way to the same words for the mouse, out of the tab order and the accessibility tree; the
  // keyboard and screen readers open the fork point from its line (aria-expanded).
  function mouseToggle(fold) {
    var summary = fold.querySelector(":scope > summary");
    if (!summary || summary.hidden) return;
    var toggle = document.createElement("span");
    toggle.className = "fork-toggle" + (fold.open ? " is-open" : "");
    toggle.setAttribute("aria-hidden", "true");
    toggle.textContent = summary.textContent;
    toggle.addEventListener("click", function () { fold.open = !fold.open; });
    fold.parentElement.insertBefore(toggle, fold);
    summary.hidden = true;
  }

  function onKey(tree, event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var item = event.target.closest('[role="treeitem"]');
    if (!item || !tree.contains(item)) return;
    var list = visible(tree);
    var index = list.indexOf(item);
    var expanded = item.getAttribute("aria-expanded");
    var target = null;
    if (event.key === "ArrowDown") target = list[index + 1];
    else if (event.key === "ArrowUp") target = list[index - 1];
    else if (event.key === "Home") target = list[0];
    else if (event.key === "End") target = list[list.length - 1];
    else if (event.key === "ArrowRight") {
      if (expanded === "false") setOpen(item, true);
      else if (expanded === "true") target = group(item).querySelector('[role="treeitem"]');
    } else if (event.key === "ArrowLeft") {
      if (expanded === "true") setOpen(item, false);
      else target = parentItem(item);
    } else if (event.key === "Enter" && item.tagName !== "A") {
      if (expanded) setOpen(item, expanded === "false");
    } else {
      return;
    }
    event.preventDefault();
    focusItem(tree, target);
  }

  function init(tree) {
    if (tree.dataset.treeReady) return;
    tree.dataset.treeReady = "1";
    var all = items(tree);
    if (!all.length) return;
    var first = tree.querySelector('[aria-selected="true"]') || all[0];
    all.forEach(function (item) { item.tabIndex = item === first ? 0 : -1; });
    tree.querySelectorAll("details").forEach(mouseToggle);
    var keys = document.getElementById("tree-keys");
    if (keys) tree.setAttribute("aria-describedby", keys.id);
    tree.addEventListener("keydown", function (event) { onKey(tree, event); });
    // Wherever focus lands (a click, a summary), that line is the Tab stop from then on.
    tree.addEventListener("focusin", function (event) {
      var item = event.target.closest('[role="treeitem"]');
      if (item) all.forEach(function (other) { other.tabIndex = other === item ? 0 : -1; });
    });
    // A fork point opened or closed with the mouse: its line says so.
    tree.addEventListener("toggle", function (event) {
      var fold = event.target;
      var owned = fold.closest('[role="group"]');
      var owner = owned ? document.querySelector('[aria-owns="' + owned.id + '"]') : null;
      if (owner) owner.setAttribute("aria-expanded", fold.open ? "true" : "false");
      var toggle = fold.previousElementSibling;
      if (toggle && toggle.classList.contains("fork-toggle")) toggle.classList.toggle("is-open", fold.open);
      // Focus inside a fork point that closed goes back to its line.
      if (!fold.open && owner && fold.contains(document.activeElement)) focusItem(tree, owner);
    }, true);
  }

  function initAll(root) {
    (root || document).querySelectorAll('[role="tree"]').forEach(init);
  }

  initAll(document);
  document.addEventListener("htmx:load", function (event) { initAll(event.target); });
})();
