"""ThreadProtocol v1.0.0: flat, sequenced actions with a multi-agent registry.

A thread exports as ONE ThreadProtocol `Thread`: its active path (or the path to a chosen
leaf). `export_threadprotocol_branches` adds one child `Thread` per other branch, holding the
whole path from the root to that branch's leaf (so it validates on its own), with
`parent_thread_id` set and `metadata.fork_from_action_id` naming the last action it shares
with the main thread; they are written as JSON Lines.

Import keeps everything (`threadprotocol_read`), so exporting an imported thread gives back
the same document. What was not imported is written from the canonical messages: system
messages as `system.prompt`, `metadata.annotations` as the `system.*` actions after their
message, assistant messages without an agent attributed to an `assistant` agent added to the
registry, a missing or earlier timestamp replaced by the one before (action times must not go
back), and a tool result whose call is not on the path as `system.orphan_tool_return`. Ids
are UUIDs holding a ULID's 128 bits: the thread's id, and for a message's actions its id, then
that number stepped on by 2^64 per action (`ACTION_STEP`), which import reads as one message.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from typing import Any

from transcripts.ids import (
    derived_ulid,
    is_ulid,
    ulid_number,
    ulid_to_int,
    ulid_to_uuid,
    uuid_text,
)
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    object_of,
    objects_in,
    text_of,
)
from transcripts.times import parse_iso, parse_iso_utc

from .document import TreeThread, active_path, leaves, parts_of, path_to
from .threadprotocol_derive import DEFAULT_AGENT, message_actions
from .threadprotocol_parts import RECORD, has_record, json_copy, recorded_actions
from .threadprotocol_read import ACTION_STEP, read_thread
from .threadprotocol_rules import VERSION, validate_thread
from .validation import Problems, is_int

EPOCH = "1970-01-01T00:00:00Z"
_UUID_SPACE = 1 << 128


def export_threadprotocol(thread: TreeThread) -> dict[str, Any]:
    """The thread's active path as one ThreadProtocol thread."""
    # Any: callers (generators, tests) index the written document freely.
    return _Export(thread).main


def export_threadprotocol_branches(thread: TreeThread) -> list[JsonObject]:
    """The main thread (active path) first, then one child thread per other branch."""
    return list(threadprotocol_documents(thread))


def threadprotocol_documents(thread: TreeThread) -> Iterator[JsonObject]:
    """`export_threadprotocol_branches` one document at a time, each built when it is asked
    for (a streamed export writes one before the next is built; none changes once given)."""
    export = _Export(thread)
    yield export.main
    yield from _children(export)


def threadprotocol_children(thread: TreeThread) -> Iterator[JsonObject]:
    """`threadprotocol_documents` without the main thread (written apart, as it is read:
    `threadprotocol_stream`), each child built when it is asked for."""
    yield from _children(_Export(thread))


def _children(export: _Export) -> Iterator[JsonObject]:
    for leaf in export.other_leaves():
        yield export.branch(leaf)


def threadprotocol_stream(
    thread: TreeThread,
    *,
    derived: Iterable[str],
    agents: Iterable[JsonValue],
    path: Iterable[JsonObject],
    forks: Forks | None = None,
) -> tuple[JsonObject, Iterator[list[JsonObject]]]:
    """`export_threadprotocol`'s document written as its path is read: the document with an
    empty list at "actions", then the actions, a message's at a time; forks: kept at its
    `at` messages as they are read (for the child threads).

    thread: the thread's own fields (no messages; its times set); derived: `derived_agent`
    of every message of the thread, in its order; agents: the agent ids the path's actions
    name (`threadprotocol_path_agents`; only those not derived matter, and only a message
    with a record or a tool message with text can name one); path: the path's messages,
    root first, read while the actions are written."""
    return _Export(thread, derived).streamed(agents, path, forks)


@dataclasses.dataclass(frozen=True)
class BranchMarks:
    """What a child thread's document needs of its path's actions before they are written
    (`threadprotocol_branch_marks`): the anchor and moment its thread_id is made from, its
    fork_from_action_id, and the agents its actions name that the registry lacks."""

    anchor: str
    moment: str | None
    fork: str | None
    agents: tuple[str, ...]


@dataclasses.dataclass
class Forks:
    """The main thread's reading kept at the messages child threads fork from, so a child's
    first reading (`threadprotocol_branch_marks`) starts there, not at the root: after the
    at-th message of the path (at in `at`), the clock, how many tool calls (of `calls`) and
    new agents (of `agents`) it had met, the id of that message's last action and how many
    actions the path had by then (`written`, counted as they are read)."""

    at: set[int] = dataclasses.field(default_factory=set)
    points: dict[int, tuple[str, int, int, str, int]] = dataclasses.field(default_factory=dict)
    calls: list[str] = dataclasses.field(default_factory=list)
    agents: list[str] = dataclasses.field(default_factory=list)
    read: int = 0
    written: int = 0

    def step(self, key: str, batch: list[JsonObject], clock: str, registry: JsonObject) -> None:
        """After a message (key) of the main path and its actions (batch)."""
        self.read += 1
        self.written += len(batch)
        for action in batch:
            if action["action_type"] == "tool_call":
                self.calls.append(text_of(action["tool_call_id"]))
            agent = action.get("agent_id")
            if isinstance(agent, str) and agent not in registry and agent not in self.agents:
                self.agents.append(agent)
        if self.read in self.at:
            last = _anchor_of(batch, key, last=True)
            self.points[self.read] = (clock, len(self.calls), len(self.agents), last, self.written)


def threadprotocol_branch_marks(
    thread: TreeThread,
    *,
    derived: Iterable[str],
    tail: Iterable[JsonObject],
    shared: int,
    forks: Forks,
) -> BranchMarks:
    """A first reading of a child thread's path, for `threadprotocol_branch_tail_stream`: thread
    and derived as for `threadprotocol_stream`; shared: how many of the path's first
    messages are also the main thread's (kept in forks by its writing); tail: the path's
    messages after those, its leaf last."""
    return _Export(thread, derived).branch_marks(tail, shared, forks)


def threadprotocol_branch_tail_stream(
    thread: TreeThread,
    *,
    derived: Iterable[str],
    marks: BranchMarks,
    tail: Iterable[JsonObject],
    shared: int,
    forks: Forks,
) -> tuple[JsonObject, Iterator[list[JsonObject]]]:
    """`export_threadprotocol_branches`' child thread of a path's leaf written as its path is
    read (as `threadprotocol_stream`), but for the actions of its first shared messages:
    those are the main thread's first actions, as its writing wrote them (the caller keeps
    and writes them). Gives the document, with an empty list at "actions", and the actions
    of tail (the path after those messages, as for `threadprotocol_branch_marks`, whose
    marks of the same path it takes) numbered after them."""
    return _Export(thread, derived).branch_tail_streamed(marks, tail, shared, forks)


def threadprotocol_leaf_age(created: JsonValue, anchor: str) -> tuple[float, str]:
    """The key child threads are ordered by (a stable sort of the leaves in the thread's
    order): the leaf's createdAt, then its anchor (its first action's id, else its id)."""
    moment = parse_iso_utc(created)
    return (moment.timestamp() if moment else 0.0), anchor


def threadprotocol_path_agents(
    thread: TreeThread, derived: Iterable[str], path: Iterable[JsonObject]
) -> list[JsonValue]:
    """The agent ids the actions of path name, in order (a first reading of the path, for
    `threadprotocol_stream`, when the cheap answer will not do)."""
    return _Export(thread, derived).path_agents(path)


def import_threadprotocol(data: object) -> list[TreeThread]:
    """Threads from one ThreadProtocol thread or a list of them; every rule is checked first.

    A child thread (its `parent_thread_id` names an earlier thread of the list) that exports
    back exactly as a branch of that thread joins it as a branch; any other is a thread of
    its own.
    """
    problems = Problems()
    documents = data if isinstance(data, list) else [data]
    seen: dict[str, int] = {}
    for index, document in enumerate(documents):
        path = f"$[{index}]" if isinstance(data, list) else "$"
        before = len(problems.items)
        validate_thread(document, path, problems)
        if len(problems.items) > before:
            continue
        thread_id = document["thread_id"]
        if thread_id in seen:
            problems.add(
                f"{path}.thread_id", f"thread_id {thread_id!r} is also $[{seen[thread_id]}]"
            )
        seen.setdefault(thread_id, index)
    problems.raise_if_any()
    threads: list[TreeThread] = []
    by_thread_id: dict[str, TreeThread] = {}
    for index, document in enumerate(documents):
        child = read_thread(document, scope=f"{index}." if index else "")
        parent = by_thread_id.get(document.get("parent_thread_id") or "")
        if parent is not None and _join(parent, child, document):
            continue
        threads.append(child)
        by_thread_id[document["thread_id"]] = child
    return threads


def document_thread_id(thread: TreeThread) -> str | None:
    """The thread_id of the ThreadProtocol thread that thread was imported from, if any."""
    extra = thread.metadata.get("extra")
    record = extra.get(RECORD) if isinstance(extra, dict) else None
    fields = record.get("fields") if isinstance(record, dict) else None
    thread_id = fields.get("thread_id") if isinstance(fields, dict) else None
    return thread_id if isinstance(thread_id, str) else None


def _join(parent: TreeThread, child: TreeThread, document: JsonObject) -> bool:
    """Add child's path to parent as a branch when it then exports back as document."""
    by_id = {message["id"]: message for message in parent.messages}
    previous: str | None = None
    added: list[JsonObject] = []
    for message in child.messages:
        existing = by_id.get(message["id"])
        if existing is not None and not added:
            if existing.get("parentMessageId") != previous or _body(existing) != _body(message):
                return False
        elif existing is not None:
            return False
        else:
            added.append({**message, "parentMessageId": previous})
        previous = as_str(message["id"])
    if not added:
        return False
    joined = dataclasses.replace(parent, messages=parent.messages + added)
    if _Export(joined).branch(text_of(added[-1]["id"])) != document:
        return False
    parent.messages.extend(added)
    return True


def _body(message: JsonObject) -> tuple[JsonValue, ...]:
    return message["role"], message["parts"], message["metadata"], message["createdAt"]


def _written(original: JsonValue, stored: str | None) -> str | None:
    """original (the document's spelling) when it names the same instant as stored."""
    if isinstance(original, str) and stored is not None:
        return original if parse_iso_utc(original) == parse_iso_utc(stored) else stored
    return stored


def _later(clock: str, stamp: str | None) -> str:
    """stamp when it is a timestamp not before clock: action times never go back."""
    if stamp == clock:  # a message's actions after the first (each has its time)
        return clock
    moment, current = parse_iso(stamp), parse_iso(clock)
    if stamp is None or moment is None or (current is not None and moment < current):
        return clock
    return stamp


def _agent_config(key: str, config: JsonValue, created: str) -> JsonObject:
    """A registry entry with every required field, filled from the key where missing."""
    entry = json_copy(config) if isinstance(config, dict) else {}
    entry["agent_id"] = key
    for name, default in (("agent_identifier", key), ("agent_name", key), ("created_at", created)):
        if not isinstance(entry.get(name), str):
            entry[name] = default
    return entry


def _minted(seed: str, moment: str | None) -> int:
    """A UUID number holding a ULID made from seed (and the time, to keep ULID order)."""
    parsed = parse_iso_utc(moment)
    millis = int(parsed.timestamp() * 1000) if parsed is not None else 0
    return ulid_to_int(derived_ulid(millis, 0, seed))


def _uuid(number: int) -> str:
    return uuid_text(number % _UUID_SPACE)


class _Export:
    """The documents of one thread: the thread fields and each message's actions, once."""

    def __init__(self, thread: TreeThread, derived: Iterable[str] | None = None) -> None:
        """derived: the agents of `derived_agent` for every message of the thread, in its
        order (read from thread.messages when not given: a streamed export gives them and no
        messages)."""
        self.thread = thread
        extra = thread.metadata.get("extra")
        record = extra.get(RECORD) if isinstance(extra, dict) else None
        self.record: JsonObject = record if isinstance(record, dict) else {}
        fields = self.record.get("fields")
        self.fields: JsonObject = fields if isinstance(fields, dict) else {}
        self.path = active_path(thread)
        first_time = next((t for m in self.path if (t := as_str(m["createdAt"]))), None)
        self.created = _written(self.fields.get("created_at"), thread.created_at) or (
            first_time or EPOCH
        )
        # One time and one registry for every document of the thread, so its branches agree.
        latest = max(
            (t for m in thread.messages if (t := as_str(m["createdAt"])) and parse_iso_utc(t)),
            key=lambda stamp: parse_iso_utc(stamp) or 0,
            default=None,
        )
        self.updated = _written(self.fields.get("updated_at"), thread.updated_at) or _later(
            self.created, latest
        )
        self.agents: JsonObject = {
            key: _agent_config(key, config, self.created) for key, config in thread.agents.items()
        }
        if derived is None:
            derived = (a for m in thread.messages if (a := derived_agent(m)) is not None)
        for agent in derived:
            if agent not in self.agents:
                self.agents[agent] = _agent_config(agent, None, self.created)
        self.thread_id = self._thread_id()
        self.actions: dict[str, list[JsonObject]] = {}

    @functools.cached_property
    def main(self) -> JsonObject:
        """The main document (the active path)."""
        return self._document(self.path)

    def _thread_id(self) -> str:
        kept = self.fields.get("thread_id")
        if isinstance(kept, str):
            return kept
        if is_ulid(self.thread.id):
            return ulid_to_uuid(str(self.thread.id))
        seed = self.thread.id or repr((self.thread.title, self.thread.created_at))
        return _uuid(_minted(seed, self.thread.created_at))

    def _title(self) -> str:
        title = self.thread.title
        original = self.record.get("title")
        # A title longer than the database keeps comes back whole.
        if isinstance(original, str) and title and original.startswith(title):
            return original
        return title

    def _metadata(self) -> tuple[bool, JsonValue]:
        """(whether the document has metadata, the metadata)."""
        metadata = json_copy(self.thread.metadata)
        extra = metadata.get("extra")
        if isinstance(extra, dict) and RECORD in extra:
            if "extra" in self.record:
                metadata["extra"] = json_copy(self.record["extra"])
            else:
                del metadata["extra"]
        shape = self.record.get("metadata")
        if isinstance(shape, dict) and not metadata:
            return not shape.get("absent"), None
        return True, metadata

    def other_leaves(self) -> list[str]:
        """The leaves of every other branch, oldest first."""
        main_leaf = self.path[-1]["id"] if self.path else None
        by_id = {message["id"]: message for message in self.thread.messages}

        def age(leaf: str) -> tuple[float, str]:
            return threadprotocol_leaf_age(by_id[leaf]["createdAt"], self._anchor(leaf))

        return sorted((leaf for leaf in leaves(self.thread) if leaf != main_leaf), key=age)

    def _anchor(self, leaf: str, last: bool = False) -> str:
        """The id of the first (or last) action of a message, else the message's id."""
        if leaf not in self.actions:
            self._path_actions(path_to(self.thread, leaf))
        return _anchor_of(self.actions[leaf], leaf, last)

    def branch(self, leaf: str) -> JsonObject:
        """The child thread holding the path from the root to leaf."""
        path = path_to(self.thread, leaf)
        main_ids = {message["id"] for message in self.path}
        shared = [message for message in path if message["id"] in main_ids]
        document = self._document(path, child=True)
        fork = self._anchor(text_of(shared[-1]["id"]), last=True) if shared else None
        anchor = self._anchor(leaf)
        self._as_child(document, anchor, self._moment(self.actions[leaf]), fork)
        return document

    def _moment(self, leaf_actions: list[JsonObject]) -> str | None:
        """The time a child thread's id is made from: its leaf's first action's."""
        return next((as_str(a["timestamp"]) for a in leaf_actions), self.created)

    def _as_child(
        self, document: JsonObject, anchor: str, moment: str | None, fork: str | None
    ) -> None:
        """document (a `_shell(child=True)`) made the child thread of the leaf of anchor."""
        document["thread_id"] = _uuid(_minted(f"{self.thread_id}/{anchor}", moment))
        document["metadata"] = {**object_of(document.get("metadata")), "fork_from_action_id": fork}
        document["parent_thread_id"] = self.thread_id

    def branch_marks(self, tail: Iterable[JsonObject], shared: int, forks: Forks) -> BranchMarks:
        """`threadprotocol_branch_marks`: tail read once, keeping one message's actions."""
        current = [""]

        def noted() -> Iterator[JsonObject]:
            for message in tail:
                current[0] = text_of(message["id"])
                yield message

        fork: str | None = None
        agents: list[str] = []
        clock, called = self.created, set[str]()
        if shared:
            clock, calls, named, fork, _ = forks.points[shared]
            called = set(forks.calls[:calls])
            agents = forks.agents[:named]
        leaf_actions: list[JsonObject] = []
        for batch in self._actions_of(noted(), remember=False, clock=clock, called=called):
            for action in batch:
                agent = action.get("agent_id")
                if isinstance(agent, str) and agent not in self.agents and agent not in agents:
                    agents.append(agent)
            leaf_actions = batch
        anchor = _anchor_of(leaf_actions, current[0], last=False)
        return BranchMarks(anchor, self._moment(leaf_actions), fork, tuple(agents))

    def branch_tail_streamed(
        self, marks: BranchMarks, tail: Iterable[JsonObject], shared: int, forks: Forks
    ) -> tuple[JsonObject, Iterator[list[JsonObject]]]:
        """`threadprotocol_branch_tail_stream`: `branch`'s document and tail's actions, from
        where the main thread's writing was after its shared-th message."""
        shell = self._shell(marks.agents, [], child=True)
        self._as_child(shell, marks.anchor, marks.moment, marks.fork)
        if not shared:
            return shell, self._numbered(tail)
        clock, calls, _, _, written = forks.points[shared]
        after = self._numbered(tail, clock=clock, called=set(forks.calls[:calls]), offset=written)
        return shell, after

    def _document(self, path: list[JsonObject], child: bool = False) -> JsonObject:
        """The thread holding path: the thread's own fields, unless it is a child thread."""
        actions = self._path_actions(path)
        agents = [action.get("agent_id") for action in actions]
        if not path:
            actions = self._kept_actions()
        self._number(actions, 0)
        return self._shell(agents, actions, child)

    def _kept_actions(self) -> list[JsonObject]:
        """The actions of a document without messages: those recorded at import, if any."""
        kept = self.record.get("actions")
        return json_copy(objects_in(kept)) if isinstance(kept, list) else []

    def _number(self, actions: list[JsonObject], offset: int) -> None:
        """Sequence numbers for actions, the first being the document's offset-th action."""
        first = self.record.get("first_sequence")
        start = (first if is_int(first) else 1) + offset
        for index, action in enumerate(actions):
            action["sequence"] = start + index

    def _shell(self, agents: Iterable[JsonValue], actions: JsonValue, child: bool) -> JsonObject:
        """The document around actions; agents: the agent ids its actions name, in order."""
        registry = json_copy(self.agents)
        for agent in agents:
            if isinstance(agent, str) and agent not in registry:
                registry[agent] = _agent_config(agent, None, self.created)
        document: JsonObject = {
            "version": VERSION,
            "thread_id": self.thread_id,
            "created_at": self.created,
            "updated_at": self.updated,
            "title": self._title(),
            "agents": registry,
            "actions": actions,
        }
        has_metadata, metadata = self._metadata()
        if has_metadata:
            document["metadata"] = metadata
        if child:
            return document
        document.update({k: json_copy(v) for k, v in self.fields.items()})
        # The times as written, unless the thread's own times changed since the import.
        document.update(created_at=self.created, updated_at=self.updated)
        if "parent_thread_id" not in self.fields and self.thread.parent_thread_id is not None:
            parent = self.thread.parent_thread_id
            document["parent_thread_id"] = ulid_to_uuid(parent) if is_ulid(parent) else parent
        return document

    def streamed(
        self, agents: Iterable[JsonValue], path: Iterable[JsonObject], forks: Forks | None = None
    ) -> tuple[JsonObject, Iterator[list[JsonObject]]]:
        """The main document written as its path is read: the document with an empty list
        at "actions", and its actions a message at a time (numbered, each list new).
        agents: `path_agents` of the path (the header names them before any action)."""
        shell = self._shell(agents, [], child=False)
        return shell, self._numbered(path, forks)

    def _numbered(
        self,
        path: Iterable[JsonObject],
        forks: Forks | None = None,
        *,
        clock: str | None = None,
        called: set[str] | None = None,
        offset: int = 0,
    ) -> Iterator[list[JsonObject]]:
        """The actions of path's document a message at a time, numbered, each list new;
        clock, called and offset: where path starts when it is not the root (after a fork:
        the clock, the tool calls met and the actions written by then)."""
        written, messages = offset, 0
        actions = self._actions_of(path, remember=False, clock=clock, called=called, forks=forks)
        for batch in actions:
            messages += 1
            if batch:
                self._number(batch, written)
                written += len(batch)
                yield batch
        if not messages and not offset:
            kept = self._kept_actions()
            self._number(kept, 0)
            yield kept

    def path_agents(self, path: Iterable[JsonObject]) -> list[JsonValue]:
        """The agent ids the actions of path name, in order (`_document`'s agents)."""
        return [
            action.get("agent_id")
            for batch in self._actions_of(path, remember=False)
            for action in batch
        ]

    def _path_actions(self, path: list[JsonObject]) -> list[JsonObject]:
        return [action for batch in self._actions_of(path) for action in batch]

    def _actions_of(
        self,
        path: Iterable[JsonObject],
        remember: bool = True,
        *,
        clock: str | None = None,
        called: set[str] | None = None,
        forks: Forks | None = None,
    ) -> Iterator[list[JsonObject]]:
        """Each message's actions along path; remember: keep them for the thread's other
        documents (a streamed export keeps none); clock and called: where path starts (after
        a fork, `Forks`; else the root); forks: kept along the way."""
        clock = clock or self.created
        called = set() if called is None else called
        for message in path:
            # A message's actions go into one document as they are, into others as copies.
            fresh = message["id"] not in self.actions
            batch = self._message_actions(message, called, clock, remember)
            for action in batch:
                clock = _later(clock, as_str(action["timestamp"]))
            if forks is not None:
                forks.step(text_of(message["id"]), batch, clock, self.agents)
            yield batch if fresh else json_copy(batch)

    def _message_actions(
        self,
        message: JsonObject,
        called: set[str],
        clock: str | None = None,
        remember: bool = True,
    ) -> list[JsonObject]:
        """The message's actions: as recorded at import, else written from its parts."""
        key = text_of(message["id"])
        cached = self.actions.get(key)
        if cached is None:
            cached = recorded_actions(message)
            # A result whose call is gone (its message was redacted) is written as an orphan.
            if cached is None or not _calls_known(cached, called):
                cached = self._derived(message, called, clock or self.created)
            if remember:
                self.actions[key] = cached
        for action in cached:
            if action["action_type"] == "tool_call":
                called.add(text_of(action["tool_call_id"]))
        return cached

    def _derived(self, message: JsonObject, called: set[str], clock: str) -> list[JsonObject]:
        actions = message_actions(message, called)
        moment = _later(clock, as_str(message["createdAt"]))
        key = text_of(message["id"])
        base = ulid_number(key)
        if base is None:
            base = _minted(key, moment)
        for offset, action in enumerate(actions):
            action["action_id"] = _uuid(base + offset * ACTION_STEP)
            action["timestamp"] = moment
        return actions


def _anchor_of(actions: list[JsonObject], key: str, last: bool) -> str:
    """The id of the first (or last) of a message's actions, else the message's id."""
    ids = [i for a in actions if isinstance(i := a.get("action_id"), str)]
    return (ids[-1] if last else ids[0]) if ids else key


def _calls_known(actions: list[JsonObject], called: set[str]) -> bool:
    """Whether every tool_return of actions answers a call in called or before it."""
    own: set[str] = set()
    for action in actions:
        if action["action_type"] == "tool_call":
            own.add(text_of(action["tool_call_id"]))
        elif action["action_type"] == "tool_return":
            call = action["tool_call_id"]
            if call not in own and call not in called:
                return False
    return True


def derived_agent(message: JsonObject) -> str | None:
    """The agent a message not imported from ThreadProtocol is written with, if any."""
    if has_record(message):
        return None
    if message["role"] == "assistant" or any(
        part["type"] in ("reasoning", "tool-call") for part in parts_of(message)
    ):
        return str(object_of(message["metadata"]).get("agentId") or DEFAULT_AGENT)
    return None
