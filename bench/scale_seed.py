"""A store of a chosen size for bench_scale.py, written with COPY.

Every thread is a conversation of committed runs (a user message and a streamed answer each:
`message`, `message-start`, 18 `text-delta`, `message-end`), with the messages those events
project to. Rows are built as lines of COPY's text format and written by bench/scale_copy.py
through the ledger's import path (`ledger.bulk_copy.copy_lines`; events name no `events.id`), a
chunk of threads per transaction. Some threads also carry what the filters look for (a failed
run, a superseded branch, a flagged message) and reports and audit records, so every list has
rows. The text comes from a fixed vocabulary: RARE_WORD is in one message in RARE_EVERY,
COMMON_WORD in about one in three, PHRASE in one in PHRASE_EVERY; TITLE_WORD is in one thread's
title and in no message.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from scale_copy import NULL, Batch, django_pg, write, write_all
from ulid import ULID

RARE_WORD = "zanzibarite"
COMMON_WORD = "gradient"
PHRASE = "reset the password"
TITLE_WORD = "quokkaville"
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
    """ULIDs in time order (as the app makes them), as the 32 hex digits of their UUIDs
    (which PostgreSQL reads as a uuid)."""

    ms: int

    def next(self) -> str:
        value = f"{self.ms:012x}{random.getrandbits(80):020x}"
        self.ms += 1
        return value


def ulid_text(hex_id: str) -> str:
    """The ULID string of an id made by Ids."""
    return str(ULID.from_bytes(bytes.fromhex(hex_id)))


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
        Returns the thread's id (a ULID string)."""
        ids = Ids(int(when.timestamp() * 1000))
        thread = ids.next()
        thread_id = ulid_text(thread)
        at = when
        parent: str | None = None
        head = ""
        depth = 0
        flagged = serial % 97 == 5
        # (run id, its fork point, the depth of its prompt) of each run on the path.
        path_runs: list[tuple[str, str | None, int]] = []
        for turn in range(turns):
            stamp = at.isoformat()
            run, fork = ids.next(), parent
            user, answer = ids.next(), ids.next()
            prompt, reply = self.text(), self.text()
            if siblings and turn == 0:
                # The prompt alone; its answers come from the sibling runs below.
                self._run(batch, thread, run, fork, stamp, events=1, model=MODELS[0])
                batch.events.append(_user_event(thread, run, user, prompt, stamp))
                batch.messages.append(
                    _message(user, parent, thread, run, depth, 0, "user", prompt, stamp,
                             (1, 1), active=True)
                )  # fmt: skip
                depth += 1
                parent = self._siblings(batch, ids, thread, user, depth, stamp, siblings)
                head, depth = parent, depth + 1
                continue
            model = MODELS[(serial + turn) % len(MODELS)]
            self._run(batch, thread, run, fork, stamp, events=3 + DELTAS_PER_ANSWER, model=model)
            batch.events.append(_turn_events(thread, run, user, answer, prompt, reply, stamp))
            batch.messages.append(
                _message(user, fork, thread, run, depth, 0, "user", prompt, stamp, (1, 1),
                         active=True)
            )  # fmt: skip
            batch.messages.append(
                _message(answer, user, thread, run, depth + 1, 1, "assistant", reply, stamp,
                         (2, 3 + DELTAS_PER_ANSWER), active=True,
                         flagged=flagged and turn == turns - 1)
            )  # fmt: skip
            path_runs.append((run, fork, depth))
            parent, head, depth = answer, answer, depth + 2
            at += timedelta(seconds=30)
        stamp = at.isoformat()
        # Edit branches: another prompt and answer at the fork point of a run on the path.
        step = max(1, len(path_runs) // alternatives) if alternatives else 0
        for n in range(alternatives):
            winner, fork, depth = path_runs[min(n * step, len(path_runs) - 1)]
            self._branch(batch, ids, thread, fork, winner, depth, stamp)
        if not alternatives and serial % 20 == 3 and path_runs:
            winner, fork, depth = path_runs[-1]
            self._branch(batch, ids, thread, fork, winner, depth, stamp)
        if serial % 50 == 11:
            failure = json.dumps({"code": "generator_error", "message": "bench"})
            self._run(batch, thread, ids.next(), head, stamp, events=0, model=MODELS[1],
                      status="failed", error=failure)  # fmt: skip
        if flagged:
            batch.reports.append(
                _line(head, thread, str(self.reporter_id), "other", "", "open", "", stamp)
            )
        batch.audit.append(
            _line("bench", "hide" if serial % 2 else "lock", "thread", thread_id, thread_id,
                  str(self.project_id), "", "{}", stamp)
        )  # fmt: skip
        batch.threads.append(
            _line(thread, str(self.project_id), _field(title), "{}", "{}", "", head or NULL,
                  _bool(serial % 500 == 9), _bool(serial % 300 == 8), when.isoformat(), stamp)
        )  # fmt: skip
        self.threads_written += 1
        return thread_id

    def _run(
        self,
        batch: Batch,
        thread: str,
        run: str,
        fork: str | None,
        stamp: str,
        *,
        events: int,
        model: str,
        status: str = "committed",
        superseded_by: str | None = None,
        error: str | None = None,
    ) -> None:
        batch.runs.append(
            _line(run, thread, fork or NULL, status, superseded_by or NULL, str(events),
                  error or NULL, "{}", "bench", model, "api", "{}", "{}", stamp, stamp, stamp,
                  stamp, NULL, "0", "")
        )  # fmt: skip
        self.events_written += events

    def _branch(
        self,
        batch: Batch,
        ids: Ids,
        thread: str,
        fork: str | None,
        winner: str,
        depth: int,
        stamp: str,
    ) -> None:
        """A superseded run at the fork point of winner: an edited prompt and its answer."""
        run, user, answer = ids.next(), ids.next(), ids.next()
        prompt, reply = self.text(), self.text()
        self._run(batch, thread, run, fork, stamp, events=3 + DELTAS_PER_ANSWER,
                  model=MODELS[2], status="superseded", superseded_by=winner)  # fmt: skip
        batch.events.append(_turn_events(thread, run, user, answer, prompt, reply, stamp))
        batch.messages.append(
            _message(user, fork, thread, run, depth, 0, "user", prompt, stamp, (1, 1),
                     active=False)
        )  # fmt: skip
        batch.messages.append(
            _message(answer, user, thread, run, depth + 1, 1, "assistant", reply, stamp,
                     (2, 3 + DELTAS_PER_ANSWER), active=False)
        )  # fmt: skip

    def _siblings(
        self, batch: Batch, ids: Ids, thread: str, prompt: str, depth: int, stamp: str, count: int
    ) -> str:
        """count answers to prompt, the last committed and active; returns its message id."""
        runs = [ids.next() for _ in range(count)]
        winner = runs[-1]
        end = 2 + DELTAS_PER_ANSWER
        for n, run in enumerate(runs):
            answer, reply = ids.next(), self.text()
            last = n == count - 1
            self._run(batch, thread, run, prompt, stamp, events=end,
                      model=MODELS[n % len(MODELS)], status="committed" if last else "superseded",
                      superseded_by=None if last else winner)  # fmt: skip
            batch.events.append(_answer_events(thread, run, answer, reply, stamp, first_seq=1))
            batch.messages.append(
                _message(answer, prompt, thread, run, depth, 0, "assistant", reply, stamp,
                         (1, end), active=last)
            )  # fmt: skip
        return answer


def _line(*fields: str) -> str:
    """One row of COPY's text format (the fields already escaped)."""
    return "\t".join(fields) + "\n"


def _field(value: str) -> str:
    """value as a field of COPY's text format."""
    from transcripts.ledger.bulk_copy import copy_field

    return copy_field(value)


def _bool(value: bool) -> str:
    return "t" if value else "f"


def _user_event(thread: str, run: str, user: str, text: str, stamp: str) -> str:
    data = f'{{"id": "{ulid_text(user)}", "role": "user", "parts": {_parts_json(text)}}}'
    return f"{thread}\t{run}\t1\tmessage\t{data}\t{stamp}\n"


def _answer_events(
    thread: str, run: str, answer: str, reply: str, stamp: str, *, first_seq: int
) -> str:
    """The lines of an answer's events: message-start, the deltas, message-end."""
    prefix, suffix = f"{thread}\t{run}\t", f"\t{stamp}\n"
    start = json.dumps({"role": "assistant", "messageId": ulid_text(answer)})
    lines = [f"{prefix}{first_seq}\tmessage-start\t{start}{suffix}"]
    for n, delta in enumerate(_deltas_json(reply), start=first_seq + 1):
        lines.append(f"{prefix}{n}\ttext-delta\t{delta}{suffix}")
    lines.append(f"{prefix}{first_seq + 1 + DELTAS_PER_ANSWER}\tmessage-end\t{{}}{suffix}")
    return "".join(lines)


def _turn_events(
    thread: str, run: str, user: str, answer: str, prompt: str, reply: str, stamp: str
) -> str:
    """The lines of a turn's events: the user's message, then the answer's."""
    return _user_event(thread, run, user, prompt, stamp) + _answer_events(
        thread, run, answer, reply, stamp, first_seq=2
    )


_METADATA = '{"schemaVersion": 1}'
_METADATA_FLAGGED = '{"schemaVersion": 1, "flagged": true}'


def _message(
    message: str,
    parent: str | None,
    thread: str,
    run: str,
    depth: int,
    position: int,
    role: str,
    text: str,
    stamp: str,
    seqs: tuple[int, int],
    *,
    active: bool,
    flagged: bool = False,
) -> str:
    """A line of the message table (the columns of MESSAGE_COLUMNS)."""
    return (
        f"{message}\t{parent or NULL}\t{run}\t{depth}\t{position}\t{role}\t{_parts_json(text)}"
        f"\t{_METADATA_FLAGGED if flagged else _METADATA}\t{stamp}\t{_bool(active)}\t{thread}"
        f"\t{seqs[0]}\t{seqs[1]}\t\n"
    )


@lru_cache(maxsize=8192)
def _parts_json(text: str) -> str:
    from transcripts.ledger.bulk_copy import copy_json_field

    return copy_json_field(json.dumps([{"type": "text", "text": text}]))


@lru_cache(maxsize=8192)
def _deltas_json(text: str) -> tuple[str, ...]:
    from transcripts.ledger.bulk_copy import copy_json_field

    return tuple(
        copy_json_field(json.dumps({"delta": piece})) for piece in _chunks(text, DELTAS_PER_ANSWER)
    )


def normal_threads(
    seeder: Seeder, *, first: int, count: int, chunk: int = 1000, writers: int = 2
) -> Iterator[int]:
    """Seed threads first..first+count-1 (RUNS_PER_THREAD turns each), chunk per transaction,
    `writers` chunks at once (scale_copy.write_all); yields the number written after each."""

    def batches() -> Iterator[tuple[Batch, int]]:
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
            seeder.messages_written += len(batch.messages)
            yield batch, seeder.threads_written

    return write_all(batches(), writers=writers)


def special_thread(seeder: Seeder, *, title: str, turns: int, **shape: int) -> str:
    """One thread of a given shape (written at once, dated before the others)."""
    batch = Batch()
    thread_id = seeder.conversation(
        batch, when=START - timedelta(days=1), turns=turns, title=title, serial=-1, **shape
    )
    write(django_pg(), batch)
    seeder.messages_written += len(batch.messages)
    return thread_id
