"""What an import's database work costs less of (docs/scaling.md, "Imports"); nothing a reader
sees changes.

- transcripts_search_text(text), which every message's search vector reads its text through,
  in PL/pgSQL: the same text out (migration 0025's pairs of letters), but text without letters
  of the paired scripts - most of it - returned after a test of its bytes (UTF-8 only) and one
  regular expression, without the executor a LANGUAGE sql function with a subquery starts on
  every call: a message's search vector costs a fifth less to compute. The function is
  IMMUTABLE and its results are those of 0025's, so the stored vectors stay as they are.
- No statistics on the message's parts nor the event's data: no query filters on them, and
  ANALYZE sorting 30,000 sampled JSON values of each was most of the ANALYZE an import runs
  once committed (ledger.vacuum.analyze_after_import), and of autovacuum's.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

search_every_language = importlib.import_module("transcripts.migrations.0025_search_every_language")
PAIRED = search_every_language.PAIRED
MARK_POINTS = search_every_language.MARK_POINTS

# Columns whose statistics no plan reads (SET STATISTICS 0: none collected).
NO_STATISTICS = [("transcripts_message", "parts"), ("transcripts_event", "data")]


def search_text_sql(utf8: bool) -> str:
    """transcripts_search_text in PL/pgSQL: as 0025's, with a cheap way out for text without
    the paired letters. In UTF-8 a text of as many bytes as characters is ASCII (no letter of
    those scripts); another encoding skips that test."""
    paired, marks = f"[{PAIRED}]", "".join(map(chr, MARK_POINTS))
    ascii_test = "octet_length($1) = length($1) OR " if utf8 else ""
    return (
        "CREATE OR REPLACE FUNCTION transcripts_search_text(text) RETURNS text"
        " LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $body$ BEGIN"
        f" IF {ascii_test}$1 !~ '{paired}' THEN RETURN $1; END IF;"
        # One pass of the letters' class cuts the text into runs of them and the rest; a run
        # doubled letter by letter, less its first letter, cut in twos gives its overlapping
        # pairs in order, then its last letter alone (the costly class read once per letter).
        " RETURN (SELECT string_agg(CASE WHEN run[2] IS NULL THEN run[1] ELSE ' ' ||"
        " regexp_replace(substr(regexp_replace(run[2], '(.)', '\\1\\1', 'g'), 2), '(..?)',"
        " '\\1 ', 'g') END, '' ORDER BY n)"
        f" FROM regexp_matches(translate($1, '{marks}', ''), '([^{PAIRED}]+)|({paired}+)', 'g')"
        " WITH ORDINALITY AS runs(run, n));"
        " END $body$"
    )


def cheaper_search_text(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SHOW server_encoding")
        (encoding,) = cursor.fetchone()
        cursor.execute(search_text_sql(encoding.upper() in ("UTF8", "UTF-8")))


def sql_search_text(apps: Any, schema_editor: Any) -> None:
    """Back to 0025's function (its LANGUAGE sql body, from that migration)."""
    with schema_editor.connection.cursor() as cursor:
        for statement in search_every_language.functions_sql("public"):
            if "FUNCTION transcripts_search_text(" in statement:
                cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0025_search_every_language"),
    ]

    operations = [
        migrations.RunPython(cheaper_search_text, sql_search_text),
        migrations.RunSQL(
            [
                f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0"
                for table, column in NO_STATISTICS
            ],
            [
                f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS -1"
                for table, column in NO_STATISTICS
            ],
        ),
    ]
