"""Every control has an accessible name (issue 26): the accessibility tree Chromium builds for
each page of the a11y tour (every `<details>` open) is walked, and an unnamed button, link,
field, menu item, tab, tree item… fails the test, named by its role and its HTML."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page
from tests.web.test_a11y_browser import ANONYMOUS, PAGES, _open_everything, seed
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member

pytestmark = BROWSER_TESTS

# The roles a person operates: each needs a name a screen reader can say.
CONTROLS = frozenset(
    {
        "button",
        "link",
        "textbox",
        "searchbox",
        "combobox",
        "checkbox",
        "radio",
        "menuitem",
        "tab",
        "treeitem",
        "switch",
        "slider",
        "listbox",
        "spinbutton",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
    }
)


def _value(node: dict[str, Any], key: str) -> str:
    """A property of an accessibility node (role, name) as text, '' when absent."""
    field = node.get(key) or {}
    return str(field.get("value") or "").strip()


def unnamed_controls(page: Any) -> list[str]:
    """The controls of page's accessibility tree without a name: role and outer HTML."""
    session = page.context.new_cdp_session(page)
    session.send("DOM.enable")
    session.send("Accessibility.enable")
    nodes = session.send("Accessibility.getFullAXTree")["nodes"]
    found: list[str] = []
    for node in nodes:
        role = _value(node, "role")
        if node.get("ignored") or role not in CONTROLS or _value(node, "name"):
            continue
        found.append(f"{role}: {_html(session, node)}")
    session.detach()
    return found


def _html(session: Any, node: dict[str, Any]) -> str:
    """The start of the HTML of the DOM element behind an accessibility node."""
    backend = node.get("backendDOMNodeId")
    if backend is None:
        return "(no DOM node)"
    try:
        html = str(session.send("DOM.getOuterHTML", {"backendNodeId": backend})["outerHTML"])
    except Exception as error:  # a node gone since the tree was read
        return f"({error})"
    return html[:200]


@pytest.mark.parametrize("name", PAGES)
def test_every_control_has_an_accessible_name(browser: Any, live_server: Any, name: str) -> None:
    admin = make_user("names-admin", is_staff=True)
    set_member(project=default_project(), user=admin, role="admin")
    url = live_server.url + seed(admin).urls[name]
    if name in ANONYMOUS:
        page = browser.new_context().new_page()
    else:
        page = open_page(browser, live_server, admin)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    _open_everything(page)
    missing = unnamed_controls(page)
    page.context.close()
    assert not missing, f"{name}: {len(missing)} unnamed controls\n" + "\n".join(missing)


def test_the_walk_finds_unnamed_controls(browser: Any) -> None:
    page = browser.new_context().new_page()
    page.set_content(
        '<button></button><a href="/x"><span aria-hidden="true">&gt;</span></a>'
        '<input type="text"><button aria-label="Copy">⧉</button><label>Name <input></label>'
    )
    missing = unnamed_controls(page)
    page.context.close()
    assert [line.split(":")[0] for line in missing] == ["button", "link", "textbox"]
