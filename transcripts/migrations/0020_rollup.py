"""The dashboard's rollups (issue 27): the runs of each project counted per hour and per day (by
model and hidden) and per thread and day, kept by PostgreSQL triggers on the runs and threads,
and backfilled from the runs here.

Why triggers: every path that writes a run reaches these tables, the ledger's (begin, append,
commit, fail, stop, lease expiry, imports, OTLP, deletion, retention, moderation's hide) and
the COPY paths that pass the ORM (`ledger/bulk_copy.py`, the bench seeder), so the rollup
cannot drift whatever writes the rows, with no hook to forget. The SQL is written out here,
frozen with the migration; `transcripts/selectors/stats.py` reads the tables.

Locks: a run change adds its delta (new minus old) at the end of its statement, one upsert per
table with its keys in order, after the thread and run locks the ledger takes first (so two
writers of one thread queue on the thread, not here). A run's rows are (project, its start's
hour and day, model, hidden) and (thread, day): superseding a run changes none of them (both
statuses count as completed), appends change them only on the first event (time to first
token), so concurrent agents of one project meet on the current hour's row at most three
times per run (begin, first event, finish), each held until their transaction commits.
Totals are sums of integers and numerics: exact; the histograms (256 log buckets, 8 per
octave) make percentiles approximate, within 4.4% (2^(1/16) - 1) of the exact value from
1 ms to 40 days, within 1 ms below.
"""

from django.db import migrations

# The SQL helpers: a run's status group, its tokens, and the histogram bucket of a duration
# (0: under 1 ms; i >= 1: [2^((i-1)/8), 2^(i/8)) ms; 255 holds everything above).
FUNCTIONS = """
CREATE FUNCTION transcripts_run_group(status text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE status WHEN 'committed' THEN 'completed' WHEN 'superseded' THEN 'completed'
        WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'stopped' ELSE 'open' END
$$;

CREATE FUNCTION transcripts_run_tokens(usage jsonb, camel text, snake text) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT greatest(0, CASE
        WHEN jsonb_typeof(usage -> camel) = 'number' THEN (usage ->> camel)::numeric
        WHEN jsonb_typeof(usage -> snake) = 'number' THEN (usage ->> snake)::numeric
        ELSE 0 END)
$$;

CREATE FUNCTION transcripts_hist_index(since timestamptz, until timestamptz) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN until IS NULL OR since IS NULL THEN NULL
        WHEN extract(epoch FROM until - since) * 1000 < 1 THEN 0
        ELSE least(255, 1 + floor(8 * ln(extract(epoch FROM until - since)::float8 * 1000)
                                  / ln(2.0::float8))::integer) END
$$;

CREATE FUNCTION transcripts_hist_step(state integer[], bucket integer, weight integer)
RETURNS integer[] LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF state IS NULL THEN
        state := array_fill(0, ARRAY[256]);
    END IF;
    IF bucket IS NOT NULL THEN
        state[bucket + 1] := state[bucket + 1] + weight;
    END IF;
    RETURN state;
END
$$;

CREATE AGGREGATE transcripts_hist(integer, integer) (
    SFUNC = transcripts_hist_step, STYPE = integer[]
);

CREATE FUNCTION transcripts_hist_add(a integer[], b integer[]) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY i)
    FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)
$$;
"""

TABLES = """
CREATE TABLE transcripts_runrollup (
    project_id bigint NOT NULL,
    grain char(1) NOT NULL CHECK (grain IN ('h', 'd')),
    start timestamptz NOT NULL,
    model varchar(200) NOT NULL,
    hidden boolean NOT NULL,
    completed bigint NOT NULL,
    failed bigint NOT NULL,
    stopped bigint NOT NULL,
    open bigint NOT NULL,
    tokens_in numeric NOT NULL,
    tokens_out numeric NOT NULL,
    latency integer[] NOT NULL,
    ttft integer[] NOT NULL,
    PRIMARY KEY (project_id, grain, start, model, hidden)
);

CREATE TABLE transcripts_threadday (
    thread_id uuid NOT NULL,
    day timestamptz NOT NULL,
    project_id bigint NOT NULL,
    hidden boolean NOT NULL,
    runs bigint NOT NULL,
    failed bigint NOT NULL,
    PRIMARY KEY (thread_id, day)
);
CREATE INDEX transcripts_threadday_project_day ON transcripts_threadday (project_id, day);
-- The busiest threads of a long window: candidates by run count (selectors/stats.py).
CREATE INDEX thread_run_count_idx ON transcripts_thread (project_id, run_count, id);
"""

# Adds the runs of `delta` (columns: sign, project_id, hidden and the run's thread_id, status,
# model, usage, created_at, started_at, first_event_at, finished_at) to the rollups: each key
# once per statement, in key order (so two statements lock shared rows in the same order).
_EXPANDED = """WITH d AS ({delta}),
x AS (
    SELECT d.sign, d.project_id, d.hidden, d.thread_id, d.model, d.created_at,
        transcripts_run_group(d.status) AS grp,
        transcripts_run_tokens(d.usage, 'inputTokens', 'input_tokens') AS tokens_in,
        transcripts_run_tokens(d.usage, 'outputTokens', 'output_tokens') AS tokens_out,
        transcripts_hist_index(coalesce(d.started_at, d.created_at), d.finished_at) AS lat,
        transcripts_hist_index(coalesce(d.started_at, d.created_at), d.first_event_at) AS ttft
    FROM d)"""

_ROLLUP = """INSERT INTO transcripts_runrollup AS r
    SELECT x.project_id, g.grain,
        date_trunc(CASE g.grain WHEN 'h' THEN 'hour' ELSE 'day' END, x.created_at, 'UTC'),
        x.model, x.hidden,
        coalesce(sum(x.sign) FILTER (WHERE x.grp = 'completed'), 0),
        coalesce(sum(x.sign) FILTER (WHERE x.grp = 'failed'), 0),
        coalesce(sum(x.sign) FILTER (WHERE x.grp = 'stopped'), 0),
        coalesce(sum(x.sign) FILTER (WHERE x.grp = 'open'), 0),
        sum(x.sign * x.tokens_in), sum(x.sign * x.tokens_out),
        transcripts_hist(x.lat, x.sign), transcripts_hist(x.ttft, x.sign)
    FROM x CROSS JOIN (VALUES ('d'), ('h')) AS g(grain)
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (project_id, grain, start, model, hidden) DO UPDATE SET
        completed = r.completed + excluded.completed, failed = r.failed + excluded.failed,
        stopped = r.stopped + excluded.stopped, open = r.open + excluded.open,
        tokens_in = r.tokens_in + excluded.tokens_in,
        tokens_out = r.tokens_out + excluded.tokens_out,
        latency = transcripts_hist_add(r.latency, excluded.latency),
        ttft = transcripts_hist_add(r.ttft, excluded.ttft)"""

_THREAD_DAYS = """INSERT INTO transcripts_threadday AS t
    SELECT x.thread_id, date_trunc('day', x.created_at, 'UTC'), x.project_id, x.hidden,
        sum(x.sign), coalesce(sum(x.sign) FILTER (WHERE x.grp = 'failed'), 0)
    FROM x GROUP BY 1, 2, 3, 4 ORDER BY 1, 2
    ON CONFLICT (thread_id, day) DO UPDATE SET
        runs = t.runs + excluded.runs, failed = t.failed + excluded.failed"""


def apply_sql(delta: str, *, thread_days: bool = True) -> str:
    """The statements adding delta's runs to the rollups (and to the thread days)."""
    expanded = _EXPANDED.format(delta=delta)
    statements = [f"{expanded} {_ROLLUP};"]
    if thread_days:
        statements.append(f"{expanded} {_THREAD_DAYS};")
    return "\n".join(statements)


_RUN_COLUMNS = (
    "thread_id, status, model, usage, created_at, started_at, first_event_at, finished_at"
)


def _runs_of(rows: str, sign: int) -> str:
    """delta: the runs of the transition table rows, with their thread's project and flag."""
    columns = ", ".join(f"r.{c}" for c in _RUN_COLUMNS.split(", "))
    return (
        f"SELECT {sign} AS sign, t.project_id, t.hidden, {columns}"
        f" FROM {rows} r JOIN transcripts_thread t ON t.id = r.thread_id"
    )


def _run_record(record: str, sign: int) -> str:
    """delta: one run (the trigger's OLD or NEW), with its thread's project and flag."""
    columns = ", ".join(f"{record}.{c} AS {c}" for c in _RUN_COLUMNS.split(", "))
    return (
        f"SELECT {sign} AS sign, t.project_id, t.hidden, {columns}"
        f" FROM transcripts_thread t WHERE t.id = {record}.thread_id"
    )


def _thread_runs(threads: str, sign: int, project: str, hidden: str) -> str:
    """delta: every run of the threads, counted under the given project and flag."""
    columns = ", ".join(f"r.{c}" for c in _RUN_COLUMNS.split(", "))
    return (
        f"SELECT {sign} AS sign, {project} AS project_id, {hidden} AS hidden, {columns}"
        f" FROM transcripts_run r JOIN {threads} th ON r.thread_id = th.id"
    )


def _function(name: str, body: str) -> str:
    """A trigger function running body."""
    return f"""CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{body}
RETURN NULL;
END
$$;"""


# A run change the rollups see: its status group, model, tokens, times or thread.
_RUN_CHANGED = """transcripts_run_group(OLD.status) IS DISTINCT FROM transcripts_run_group(NEW.status)
    OR OLD.model IS DISTINCT FROM NEW.model OR OLD.usage IS DISTINCT FROM NEW.usage
    OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.started_at IS DISTINCT FROM NEW.started_at
    OR OLD.first_event_at IS DISTINCT FROM NEW.first_event_at
    OR OLD.finished_at IS DISTINCT FROM NEW.finished_at
    OR OLD.thread_id IS DISTINCT FROM NEW.thread_id"""

_OLD_THREAD = "(SELECT OLD.id AS id)"
_NEW_THREAD = "(SELECT NEW.id AS id)"

TRIGGERS = "\n".join(
    [
        _function("transcripts_rollup_runs_added", apply_sql(_runs_of("added", 1))),
        _function("transcripts_rollup_runs_removed", apply_sql(_runs_of("removed", -1))),
        _function(
            "transcripts_rollup_run_changed",
            apply_sql(f"{_run_record('OLD', -1)} UNION ALL {_run_record('NEW', 1)}"),
        ),
        _function(
            "transcripts_rollup_threads_added",
            apply_sql(_thread_runs("added", 1, "th.project_id", "th.hidden")),
        ),
        _function(
            "transcripts_rollup_threads_removed",
            apply_sql(_thread_runs("removed", -1, "th.project_id", "th.hidden"), thread_days=False)
            + "\nDELETE FROM transcripts_threadday WHERE thread_id IN (SELECT id FROM removed);",
        ),
        _function(
            "transcripts_rollup_thread_moved",
            apply_sql(
                f"{_thread_runs(_OLD_THREAD, -1, 'OLD.project_id', 'OLD.hidden')} UNION ALL "
                f"{_thread_runs(_NEW_THREAD, 1, 'NEW.project_id', 'NEW.hidden')}",
                thread_days=False,
            )
            + "\nUPDATE transcripts_threadday SET project_id = NEW.project_id,"
            " hidden = NEW.hidden WHERE thread_id = NEW.id;",
        ),
        _function(
            "transcripts_rollup_truncated",
            "DELETE FROM transcripts_runrollup; DELETE FROM transcripts_threadday;",
        ),
        """
CREATE TRIGGER transcripts_rollup_runs_added AFTER INSERT ON transcripts_run
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION transcripts_rollup_runs_added();
CREATE TRIGGER transcripts_rollup_runs_removed AFTER DELETE ON transcripts_run
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT
    EXECUTE FUNCTION transcripts_rollup_runs_removed();
CREATE TRIGGER transcripts_rollup_run_changed AFTER UPDATE ON transcripts_run
    FOR EACH ROW WHEN ("""
        + _RUN_CHANGED
        + """)
    EXECUTE FUNCTION transcripts_rollup_run_changed();
CREATE TRIGGER transcripts_rollup_threads_added AFTER INSERT ON transcripts_thread
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION transcripts_rollup_threads_added();
CREATE TRIGGER transcripts_rollup_threads_removed AFTER DELETE ON transcripts_thread
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT
    EXECUTE FUNCTION transcripts_rollup_threads_removed();
CREATE TRIGGER transcripts_rollup_thread_moved AFTER UPDATE ON transcripts_thread
    FOR EACH ROW WHEN (OLD.hidden IS DISTINCT FROM NEW.hidden
        OR OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION transcripts_rollup_thread_moved();
CREATE TRIGGER transcripts_rollup_runs_truncated AFTER TRUNCATE ON transcripts_run
    FOR EACH STATEMENT EXECUTE FUNCTION transcripts_rollup_truncated();
CREATE TRIGGER transcripts_rollup_threads_truncated AFTER TRUNCATE ON transcripts_thread
    FOR EACH STATEMENT EXECUTE FUNCTION transcripts_rollup_truncated();
""",
    ]
)

# Every run there is, counted once (the rollups are empty when this runs).
BACKFILL = apply_sql(
    "SELECT 1 AS sign, t.project_id, t.hidden, r.thread_id, r.status, r.model, r.usage,"
    " r.created_at, r.started_at, r.first_event_at, r.finished_at"
    " FROM transcripts_run r JOIN transcripts_thread t ON t.id = r.thread_id"
)

DROP = """
DROP TRIGGER transcripts_rollup_runs_added ON transcripts_run;
DROP TRIGGER transcripts_rollup_runs_removed ON transcripts_run;
DROP TRIGGER transcripts_rollup_run_changed ON transcripts_run;
DROP TRIGGER transcripts_rollup_runs_truncated ON transcripts_run;
DROP TRIGGER transcripts_rollup_threads_added ON transcripts_thread;
DROP TRIGGER transcripts_rollup_threads_removed ON transcripts_thread;
DROP TRIGGER transcripts_rollup_thread_moved ON transcripts_thread;
DROP TRIGGER transcripts_rollup_threads_truncated ON transcripts_thread;
DROP FUNCTION transcripts_rollup_runs_added(), transcripts_rollup_runs_removed(),
    transcripts_rollup_run_changed(), transcripts_rollup_threads_added(),
    transcripts_rollup_threads_removed(), transcripts_rollup_thread_moved(),
    transcripts_rollup_truncated();
DROP TABLE transcripts_runrollup, transcripts_threadday;
DROP INDEX thread_run_count_idx;
DROP AGGREGATE transcripts_hist(integer, integer);
DROP FUNCTION transcripts_hist_add(integer[], integer[]),
    transcripts_hist_step(integer[], integer, integer),
    transcripts_hist_index(timestamptz, timestamptz),
    transcripts_run_tokens(jsonb, text, text), transcripts_run_group(text);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0019_table"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS + TABLES + TRIGGERS + BACKFILL, reverse_sql=DROP),
    ]
