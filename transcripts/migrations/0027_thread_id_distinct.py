"""The planner's count of threads among the messages and among the runs scales with the table
(n_distinct as a fraction of its rows: -0.02 for messages, some 50 a thread; -0.05 for runs,
some 20 a thread), instead of the count the last ANALYZE found. Right after a bulk load (an
import, a restore, a copy), before anything analyzes the tables again, the planner otherwise
takes each thread for a share of a store that may have held a handful of threads: it read the
whole message table for a thread's messages (the thread counters of an import), a search's
"has this thread a matching message" for each thread of the list's first page began a
sequential scan of the table (2.5 s at 201,000 messages on a 5-thread store's statistics; 45
ms with this), and the list's agent-or-model filter read every matching run of the store for
each thread it checked. With these settings those plans do not depend on fresh statistics
(docs/scaling.md, "Just imported")."""

from __future__ import annotations

from django.db import migrations

SET = [
    "ALTER TABLE transcripts_message ALTER COLUMN thread_id SET (n_distinct = -0.02)",
    "ALTER TABLE transcripts_run ALTER COLUMN thread_id SET (n_distinct = -0.05)",
]
RESET = [
    "ALTER TABLE transcripts_message ALTER COLUMN thread_id RESET (n_distinct)",
    "ALTER TABLE transcripts_run ALTER COLUMN thread_id RESET (n_distinct)",
]
# The setting is read by ANALYZE, which stores it where the planner looks: now, not at the
# next autovacuum (a sample of the column only).
ANALYZE = ["ANALYZE transcripts_message (thread_id)", "ANALYZE transcripts_run (thread_id)"]


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0026_cheaper_import_writes")]

    operations = [
        migrations.RunSQL([*SET, *ANALYZE], [*RESET, *ANALYZE]),
    ]
