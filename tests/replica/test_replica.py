"""A real streaming replica behind the app: browsing reads from it (a paused replica shows the
lag), a client's own writes are read back from the primary, and a replica outage falls back to
the primary instead of failing."""

from __future__ import annotations

import secrets
import time

import httpx

from tests.faults.stack import login
from tests.replica.conftest import PRIMARY_SECONDS
from tests.replica.world import ReplicaWorld
from transcripts.read_your_writes import PRIMARY_COOKIE, PRIMARY_HEADER


def api(world: ReplicaWorld, **headers: str) -> httpx.Client:
    """An API client with the seeded token (and a cookie jar, as most HTTP clients have)."""
    return httpx.Client(
        base_url=world.url,
        timeout=30,
        headers={"Authorization": f"Bearer {world.stack.token}", **headers},
    )


def listed(client: httpx.Client) -> set[str]:
    response = client.get("/api/v1/threads", params={"limit": 200})
    assert response.status_code == 200, response.text
    return {thread["id"] for thread in response.json()["threads"]}


def new_thread(client: httpx.Client) -> tuple[str, str]:
    """(id, title) of a thread created through the API."""
    title = f"replica check {secrets.token_hex(4)}"
    response = client.post("/api/v1/threads", json={"title": title})
    assert response.status_code == 201, response.text
    return response.json()["id"], title


def test_browsing_reads_from_the_replica(paused: ReplicaWorld) -> None:
    thread_id, title = new_thread(api(paused))
    reader = api(paused)
    browser = login(paused.url, "editor", "editor-password")
    # Logging in wrote (a session): that browser reads from the primary for a moment.
    browser.cookies.delete(PRIMARY_COOKIE)

    # The replica stands still, so readers that did not write do not see the new thread yet.
    assert thread_id not in listed(reader)
    assert reader.get(f"/api/v1/threads/{thread_id}").status_code == 404
    page = browser.get("/")
    assert page.status_code == 200 and title not in page.text

    paused.replica.resume()
    paused.replica.catch_up(paused.stack)
    assert thread_id in listed(reader)
    assert title in browser.get("/").text


def test_a_client_reads_its_own_writes_from_the_primary(paused: ReplicaWorld) -> None:
    writer = api(paused)
    thread_id, _ = new_thread(writer)
    assert writer.cookies.get(PRIMARY_COOKIE) == "1"

    assert writer.get(f"/api/v1/threads/{thread_id}").status_code == 200
    assert thread_id in listed(writer)
    # Others read the lagging replica, unless they ask for the primary.
    assert api(paused).get(f"/api/v1/threads/{thread_id}").status_code == 404
    asking = api(paused, **{PRIMARY_HEADER: "primary"})
    assert asking.get(f"/api/v1/threads/{thread_id}").status_code == 200

    # Once the window has passed, the writer reads from the replica again.
    time.sleep(PRIMARY_SECONDS + 0.5)
    assert writer.get(f"/api/v1/threads/{thread_id}").status_code == 404


def test_a_reply_in_the_browser_shows_on_the_next_page(paused: ReplicaWorld) -> None:
    browser = login(paused.url, "editor", "editor-password")
    text = f"read your writes {secrets.token_hex(4)}"
    response = browser.post(
        f"/t/{paused.stack.thread}/reply/",
        data={"text": text, "generator": "demo", "delayMs": "0"},
        headers={
            "X-CSRFToken": browser.cookies["csrftoken"],
            "Referer": paused.url + "/",
        },
    )
    assert response.status_code in (302, 303), response.text[:300]

    page = browser.get(f"/t/{paused.stack.thread}/")
    assert page.status_code == 200 and text in page.text
    # Another reader's page comes from the replica, which has not applied the reply yet.
    other = login(paused.url, "admin", "admin-password")
    other.cookies.delete(PRIMARY_COOKIE)
    assert text not in other.get(f"/t/{paused.stack.thread}/").text


def test_a_replica_outage_falls_back_to_the_primary(world: ReplicaWorld) -> None:
    world.replica.catch_up(world.stack)
    world.replica.stop()
    try:
        thread_id, title = new_thread(api(world))
        reader = api(world)
        assert thread_id in listed(reader)
        assert reader.get(f"/api/v1/threads/{thread_id}").status_code == 200
        browser = login(world.url, "editor", "editor-password")
        browser.cookies.delete(PRIMARY_COOKIE)
        page = browser.get("/")
        assert page.status_code == 200 and title in page.text
    finally:
        world.replica.start()
    # Back: the replica serves reads again once it has caught up.
    world.replica.catch_up(world.stack)
    world.replica.pause()
    try:
        later, _ = new_thread(api(world))
        time.sleep(1.5)  # the server leaves a failed replica alone for a second
        assert api(world).get(f"/api/v1/threads/{later}").status_code == 404
    finally:
        world.replica.resume()
