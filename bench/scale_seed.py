"""A store of a chosen size for bench_scale.py, written with COPY.

Every thread is a conversation of committed runs (a user message and a streamed answer each:
`message`, `message-start`, 18 `text-delta`, `message-end`), with the messages those events
project to. Events go through the ledger's own bulk path (`ledger.bulk_copy.copy_event_rows`,
which names no `events.id`); threads, runs and messages are copied by column list in the same
transaction, a chunk of threads at a time. Some threads also carry what the
filters look for (a failed run, a superseded branch, a flagged message) and reports and audit
records, so every list has rows. The text comes from a fixed vocabulary: RARE_WORD is in one
message in RARE_EVERY, COMMON_WORD in about one in three, PHRASE in one in PHRASE_EVERY.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from django.db import connection, transaction
from ulid import ULID

RARE_WORD = "zanzibarite"
COMMON_WORD = "gradient"
PHRASE = "reset the password"
RARE_EVERY = 200_000
PHRASE_EVERY = 500
RUNS_PER_THREAD = 10
DELTAS_PER_ANSWER = 18
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "gemini-2.0-flash", "demo-1")
START = datetime(2025, 1, 1, tzinfo=UTC)


def _vocabulary(count: int) -> list[str]:
    """count made-up words of three syllables."""
    rng = random.Random(7)
    return [
        "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        for _ in range(count)
    ]


_WORDS = _vocabulary(4_000)


def _sentences(count: int) -> list[str]:
    """count sentences of the vocabulary; every third has COMMON_WORD."""
    rng = random.Random(42)
    sentences = []
    for n in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 16))]
        if n % 3 == 0:
            words.insert(rng.randrange(len(words)), COMMON_WORD)
        words[0] = words[0].capitalize()
        sentences.append(" ".join(words) + ".")
    return sentences


SENTENCES = _sentences(997)


def _chunks(text: str, parts: int) -> list[str]:
    step = max(1, len(text) // parts)
    pieces = [text[i * step : (i + 1) * step] for i in range(parts - 1)]
    return [*pieces, text[(parts - 1) * step :]]


@dataclass
class Ids:
    """ULIDs in time order (as the app makes them), with their UUIDs."""

    ms: int
    counter: int = 0

    def next(self) -> tuple[str, uuid.UUID]:
        self.counter += 1
        raw = self.ms.to_bytes(6, "big") + random.getrandbits(80).to_bytes(10, "big")
        self.ms += 1
        value = ULID.from_bytes(raw)
        text, parsed = str(value), uuid.UUID(bytes=raw)
        _KNOWN[text] = parsed
        return text, parsed


@dataclass
class Batch:
    """Rows of one COPY transaction."""

    threads: list[tuple[Any, ...]] = field(default_factory=list)
    runs: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    reports: list[tuple[Any, ...]] = field(default_factory=list)
    audit: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class Seeder:
    """Writes threads into project_id; counts what it wrote."""

    project_id: int
    reporter_id: int
    threads_written: int = 0
    messages_written: int = 0
    events_written: int = 0
    message_serial: int = 0

    def text(self) -> str:
        """The next message's text: three sentences, now and then the rare word or the phrase."""
        n = self.message_serial
        self.message_serial += 1
        parts = [SENTENCES[(n * 31 + k * 17) % len(SENTENCES)] for k in range(3)]
        if n % RARE_EVERY == RARE_EVERY // 2:
            parts.append(f"Ask about {RARE_WORD} later.")
        if n % PHRASE_EVERY == 7:
            parts.append(f"Then {PHRASE} and sign in again.")
        return " ".join(parts)

    def conversation(
        self,
        batch: Batch,
        *,
        when: datetime,
        turns: int,
        title: str,
        serial: int,
        alternatives: int = 0,
        siblings: int = 0,
    ) -> str:
        """One thread of `turns` committed runs; `alternatives` superseded edit branches along
        its path; `siblings` answers to its first prompt (one committed, the rest superseded).
        Returns the thread's id."""
        ids = Ids(int(when.timestamp() * 1000))
        thread_id, thread_uuid = ids.next()
        at = when
        parent: str | None = None
        head = ""
        depth = 0
        flagged = serial % 97 == 5
        # (run id, its fork point, the depth of its prompt) of each run on the path.
        path_runs: list[tuple[str, str | None, int]] = []
        for turn in range(turns):
            run_id, run_uuid = ids.next()
            fork = parent
            user_id, _ = ids.next()
            answer_id, _ = ids.next()
            prompt, answer = self.text(), self.text()
            if siblings and turn == 0:
                # The prompt alone; its answers come from the sibling runs below.
                self._run(batch, thread_uuid, run_uuid, fork, at, events=1, model=MODELS[0])
                batch.events.append(_user_event(thread_uuid, run_uuid, user_id, prompt, at))
                batch.messages.append(
                    _message(user_id, parent, thread_id, run_id, depth, 0, "user",
                             prompt, at, (1, 1), active=True)
                )  # fmt: skip
                parent, head, depth = user_id, user_id, depth + 1
                parent = self._siblings(batch, ids, thread_id, thread_uuid, user_id, depth, at,
                                        siblings)  # fmt: skip
                head, depth = parent, depth + 1
                continue
            model = MODELS[(serial + turn) % len(MODELS)]
            self._run(batch, thread_uuid, run_uuid, fork, at, events=3 + DELTAS_PER_ANSWER,
                      model=model)  # fmt: skip
            self._turn_events(batch, thread_uuid, run_uuid, user_id, answer_id, prompt, answer, at)
            batch.messages.append(
                _message(user_id, fork, thread_id, run_id, depth, 0, "user", prompt, at,
                         (1, 1), active=True)
            )  # fmt: skip
            batch.messages.append(
                _message(answer_id, user_id, thread_id, run_id, depth + 1, 1,
                         "assistant", answer, at, (2, 3 + DELTAS_PER_ANSWER), active=True,
                         flagged=flagged and turn == turns - 1)
            )  # fmt: skip
            path_runs.append((run_id, fork, depth))
            parent, head, depth = answer_id, answer_id, depth + 2
            at += timedelta(seconds=30)
        # Edit branches: another prompt and answer at the fork point of a run on the path.
        step = max(1, len(path_runs) // alternatives) if alternatives else 0
        for n in range(alternatives):
            winner, fork, depth = path_runs[min(n * step, len(path_runs) - 1)]
            self._branch(batch, ids, thread_id, thread_uuid, fork, winner, depth, at)
        if not alternatives and serial % 20 == 3 and path_runs:
            winner, fork, depth = path_runs[-1]
            self._branch(batch, ids, thread_id, thread_uuid, fork, winner, depth, at)
        if serial % 50 == 11:
            run_id, run_uuid = ids.next()
            failure = {"code": "generator_error", "message": "bench"}
            self._run(batch, thread_uuid, run_uuid, head, at, events=0, model=MODELS[1],
                      status="failed", error=failure)  # fmt: skip
        if flagged:
            batch.reports.append(
                (_uuid(head), thread_uuid, self.reporter_id, "other", "", "open", "", at)
            )
        batch.audit.append(("bench", "hide" if serial % 2 else "lock", "thread", thread_id,
                            thread_id, self.project_id, "", "{}", at))  # fmt: skip
        batch.threads.append(
            (thread_uuid, self.project_id, title, "{}", "{}", "", _uuid(head) if head else None,
             serial % 500 == 9, serial % 300 == 8, when, at)
        )  # fmt: skip
        self.threads_written += 1
        return thread_id

    def _run(
        self,
        batch: Batch,
        thread_uuid: uuid.UUID,
        run_uuid: uuid.UUID,
        fork: str | None,
        at: datetime,
        *,
        events: int,
        model: str,
        status: str = "committed",
        superseded_by: uuid.UUID | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        batch.runs.append(
            (run_uuid, thread_uuid, _uuid(fork) if fork else None, status, superseded_by, events,
             json.dumps(error) if error else None, "{}", "bench", model, "api", "{}", "{}",
             at, at, at, at, None, 0, "")
        )  # fmt: skip
        self.events_written += events

    def _turn_events(
        self,
        batch: Batch,
        thread_uuid: uuid.UUID,
        run_uuid: uuid.UUID,
        user_id: str,
        answer_id: str,
        prompt: str,
        answer: str,
        at: datetime,
    ) -> None:
        batch.events.append(_user_event(thread_uuid, run_uuid, user_id, prompt, at))
        start = json.dumps({"role": "assistant", "messageId": answer_id})
        batch.events.append((thread_uuid, run_uuid, 2, "message-start", start, at))
        for n, delta in enumerate(_deltas_json(answer)):
            batch.events.append((thread_uuid, run_uuid, 3 + n, "text-delta", delta, at))
        end = 3 + DELTAS_PER_ANSWER
        batch.events.append((thread_uuid, run_uuid, end, "message-end", "{}", at))

    def _branch(
        self,
        batch: Batch,
        ids: Ids,
        thread_id: str,
        thread_uuid: uuid.UUID,
        fork: str | None,
        winner: str,
        depth: int,
        at: datetime,
    ) -> None:
        """A superseded run at the fork point of winner: an edited prompt and its answer."""
        run_id, run_uuid = ids.next()
        user_id, _ = ids.next()
        answer_id, _ = ids.next()
        prompt, answer = self.text(), self.text()
        self._run(batch, thread_uuid, run_uuid, fork, at, events=3 + DELTAS_PER_ANSWER,
                  model=MODELS[2], status="superseded", superseded_by=_uuid(winner))  # fmt: skip
        self._turn_events(batch, thread_uuid, run_uuid, user_id, answer_id, prompt, answer, at)
        batch.messages.append(
            _message(user_id, fork, thread_id, run_id, depth, 0, "user", prompt, at,
                     (1, 1), active=False)
        )  # fmt: skip
        batch.messages.append(
            _message(answer_id, user_id, thread_id, run_id, depth + 1, 1, "assistant",
                     answer, at, (2, 3 + DELTAS_PER_ANSWER), active=False)
        )  # fmt: skip

    def _siblings(
        self,
        batch: Batch,
        ids: Ids,
        thread_id: str,
        thread_uuid: uuid.UUID,
        prompt_id: str,
        depth: int,
        at: datetime,
        count: int,
    ) -> str:
        """count answers to prompt_id, the last committed and active; returns its message id."""
        runs = [ids.next() for _ in range(count)]
        _, winner_uuid = runs[-1]
        for n, (run_id, run_uuid) in enumerate(runs):
            answer_id, _ = ids.next()
            answer = self.text()
            last = n == count - 1
            self._run(batch, thread_uuid, run_uuid, prompt_id, at, events=2 + DELTAS_PER_ANSWER,
                      model=MODELS[n % len(MODELS)], status="committed" if last else "superseded",
                      superseded_by=None if last else winner_uuid)  # fmt: skip
            start = json.dumps({"role": "assistant", "messageId": answer_id})
            batch.events.append((thread_uuid, run_uuid, 1, "message-start", start, at))
            for k, delta in enumerate(_deltas_json(answer)):
                batch.events.append((thread_uuid, run_uuid, 2 + k, "text-delta", delta, at))
            end = 2 + DELTAS_PER_ANSWER
            batch.events.append((thread_uuid, run_uuid, end, "message-end", "{}", at))
            batch.messages.append(
                _message(answer_id, prompt_id, thread_id, run_id, depth, 0, "assistant",
                         answer, at, (1, end), active=last)
            )  # fmt: skip
            if last:
                return answer_id
        raise ValueError("no siblings")


# The UUIDs of the ids made for the batch being built (parsing ULIDs back costs more than
# making them).
_KNOWN: dict[str, uuid.UUID] = {}


def _uuid(ulid: str) -> uuid.UUID:
    known = _KNOWN.get(ulid)
    return known if known is not None else ULID.from_str(ulid).to_uuid()


def _user_event(
    thread_uuid: uuid.UUID, run_uuid: uuid.UUID, user_id: str, text: str, at: datetime
) -> tuple[Any, ...]:
    data = f'{{"id": "{user_id}", "role": "user", "parts": {_parts_json(text)}}}'
    return (thread_uuid, run_uuid, 1, "message", data, at)


def _message(
    message_id: str,
    parent: str | None,
    thread_id: str,
    run_id: str,
    depth: int,
    position: int,
    role: str,
    text: str,
    at: datetime,
    seqs: tuple[int, int],
    *,
    active: bool,
    flagged: bool = False,
) -> tuple[Any, ...]:
    """A row of the message table (the columns of MESSAGE_COLUMNS)."""
    metadata = '{"schemaVersion": 1, "flagged": true}' if flagged else '{"schemaVersion": 1}'
    return (
        _uuid(message_id), _uuid(parent) if parent else None, _uuid(run_id), depth, position,
        role, _parts_json(text), metadata, at, active, _uuid(thread_id), seqs[0], seqs[1], "",
    )  # fmt: skip


@lru_cache(maxsize=8192)
def _parts_json(text: str) -> str:
    return json.dumps([{"type": "text", "text": text}])


@lru_cache(maxsize=8192)
def _deltas_json(text: str) -> tuple[str, ...]:
    return tuple(json.dumps({"delta": piece}) for piece in _chunks(text, DELTAS_PER_ANSWER))


_THREAD_COLUMNS = (
    "id, project_id, title, metadata, agents, external_id, head_id, hidden, locked,"
    " created_at, updated_at"
)
_RUN_COLUMNS = (
    "id, thread_id, fork_from_id, status, superseded_by_id, last_seq, error, usage, generator,"
    " model, origin, parameters, metadata, created_at, started_at, first_event_at, finished_at,"
    " snapshot, snapshot_seq, lease_owner"
)
MESSAGE_COLUMNS = (
    "id, parent_id, run_id, depth, position, role, parts, metadata, created_at, active,"
    " thread_id, first_seq, last_seq, flag_reason"
)
_REPORT_COLUMNS = (
    "message_id, thread_id, reporter_id, reason, note, status, resolution_note, created_at"
)
_AUDIT_COLUMNS = (
    "actor_name, action, target_type, target_id, thread_id, project_id, reason, details, created_at"
)


def write(batch: Batch) -> None:
    """COPY a batch in one transaction: threads and runs here, events and messages through the
    ledger's bulk path."""
    from transcripts.ledger.bulk_copy import copy_event_rows

    with transaction.atomic():
        _copy("transcripts_thread", _THREAD_COLUMNS, batch.threads)
        _copy("transcripts_run", _RUN_COLUMNS, batch.runs)
        copy_event_rows(batch.events)
        _copy("transcripts_message", MESSAGE_COLUMNS, batch.messages)
        _copy("transcripts_report", _REPORT_COLUMNS, batch.reports)
        _copy("transcripts_auditrecord", _AUDIT_COLUMNS, batch.audit)
    _KNOWN.clear()


def _copy(table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def normal_threads(seeder: Seeder, *, first: int, count: int, chunk: int = 500) -> Iterator[int]:
    """Seed threads first..first+count-1 (RUNS_PER_THREAD turns each), chunk per transaction;
    yields the number written after each chunk."""
    for start in range(first, first + count, chunk):
        batch = Batch()
        for serial in range(start, min(start + chunk, first + count)):
            seeder.conversation(
                batch,
                when=START + timedelta(seconds=serial * 60),
                turns=RUNS_PER_THREAD,
                title=f"Conversation {serial}",
                serial=serial,
            )
        write(batch)
        seeder.messages_written += len(batch.messages)
        yield seeder.threads_written


def special_thread(seeder: Seeder, *, title: str, turns: int, **shape: int) -> str:
    """One thread of a given shape (written at once, dated before the others)."""
    batch = Batch()
    thread_id = seeder.conversation(
        batch, when=START - timedelta(days=1), turns=turns, title=title, serial=-1, **shape
    )
    write(batch)
    seeder.messages_written += len(batch.messages)
    return thread_id
