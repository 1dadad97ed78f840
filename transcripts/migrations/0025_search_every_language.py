"""Search in every language: accents ignored, words found inside Chinese, Japanese, Korean, Thai,
Arabic and Hebrew text (docs/scaling.md, "Search in every language").

- The unaccent extension (it ships with PostgreSQL, as pg_trgm does).
- transcripts_unaccent(text): unaccent with its dictionary named, so IMMUTABLE (an index and a
  generated column may use it): the thread titles' trigram index is on it.
- The text search configuration transcripts_search: simple's, each word through unaccent first.
- transcripts_search_text(text): the text with every run of letters of a script written without
  spaces between words, or that joins affixes to its words (Han, kana, Hangul, Thai, Lao,
  Khmer, Myanmar, Arabic, Hebrew), written as its overlapping pairs of letters, the run's last
  letter alone after them ("北京参观" -> "北京 京参 参观 观"), Arabic and Hebrew vowel marks
  dropped. Text without such letters is returned as it is after one regular-expression test.
- transcripts_search_query(text): websearch_to_tsquery in transcripts_search, a lone letter of
  those scripts made a prefix (it is found as the first of a pair). The caller writes the
  query's runs as pairs and quotes them (selectors.search_text.query_text).
- Message.search rebuilt on them: dropping and adding a stored generated column rewrites the
  message table and builds message_search_idx again (minutes at millions of messages).
"""

from __future__ import annotations

from typing import Any

import django.contrib.postgres.search
import django.db.models.expressions
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import DatabaseError, migrations, models, transaction
from django.db.models.functions import Upper

EXTENSION = "unaccent"

# The letters written as pairs: Thai, Lao, Myanmar, Hangul Jamo, Khmer, kana, bopomofo, Hangul
# compatibility Jamo, katakana extension, CJK extension A, CJK, Hangul, CJK compatibility,
# halfwidth katakana, CJK extensions B and on, ideographic iteration marks; Arabic and Hebrew
# letters.
PAIRED = (
    r"\u0E00-\u0EFF\u1000-\u109F\u1100-\u11FF\u1780-\u17FF\u3005-\u3007\u3040-\u30FF"
    r"\u3100-\u318F\u31F0-\u31FF\u3400-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7FF"
    r"\uF900-\uFAFF\uFF66-\uFF9F\U00020000-\U0003FFFF"
    r"\u0620-\u063F\u0641-\u064A\u066E-\u06D3\u06D5\u06EE\u06EF\u06FA-\u06FC\u05D0-\u05EA"
)
# Arabic and Hebrew vowel and cantillation marks and the Arabic tatweel: dropped.
MARK_RANGES = [(0x0591, 0x05BD), (0x05BF, 0x05BF), (0x05C1, 0x05C2), (0x05C4, 0x05C5)]
MARK_RANGES += [(0x05C7, 0x05C7), (0x0610, 0x061A), (0x0640, 0x0640), (0x064B, 0x065F)]
MARK_RANGES += [(0x0670, 0x0670), (0x06D6, 0x06ED)]
MARK_POINTS = [point for low, high in MARK_RANGES for point in range(low, high + 1)]


def create_unaccent_extension(apps: Any, schema_editor: Any) -> None:
    """CREATE EXTENSION unaccent, or say clearly why it cannot be (a managed server's rights)."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = %s",
            [EXTENSION],
        )
        row = cursor.fetchone()
        if row is None:
            raise RuntimeError(
                f"PostgreSQL has no {EXTENSION} extension: install the server's contrib package"
                f" (it ships with PostgreSQL), then run migrate again."
            )
        if not row[0]:
            try:
                with transaction.atomic(using=connection.alias):
                    cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
            except DatabaseError as error:
                raise RuntimeError(
                    f"This database user may not create the {EXTENSION} extension ({error})."
                    f" Ask the database's administrator to run `CREATE EXTENSION {EXTENSION};`"
                    f" in database {connection.settings_dict['NAME']!r} (on a managed"
                    f" PostgreSQL: enable {EXTENSION} in its extensions settings), then run"
                    f" migrate again."
                ) from error
        cursor.execute(
            "SELECT quote_ident(n.nspname) FROM pg_extension e"
            " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = %s",
            [EXTENSION],
        )
        (schema,) = cursor.fetchone()
        for statement in functions_sql(schema):
            cursor.execute(statement)


def functions_sql(schema: str) -> list[str]:
    """The functions and the configuration, unaccent's objects named in its schema."""
    paired, marks = f"[{PAIRED}]", "".join(map(chr, MARK_POINTS))
    return [
        "CREATE OR REPLACE FUNCTION transcripts_unaccent(text) RETURNS text"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT"
        f" RETURN {schema}.unaccent('{schema}.unaccent'::regdictionary, $1)",
        "CREATE TEXT SEARCH CONFIGURATION transcripts_search (COPY = simple)",
        "ALTER TEXT SEARCH CONFIGURATION transcripts_search ALTER MAPPING FOR"
        f" word, hword, hword_part, numword, numhword WITH {schema}.unaccent, simple",
        # One pass of the letters' class cuts the text into runs of them and the rest; a run
        # doubled letter by letter, less its first letter, cut in twos gives its overlapping
        # pairs in order, then its last letter alone (the costly class read once per letter).
        "CREATE OR REPLACE FUNCTION transcripts_search_text(text) RETURNS text"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $body$"
        f" SELECT CASE WHEN $1 !~ '{paired}' THEN $1 ELSE ("
        " SELECT string_agg(CASE WHEN run[2] IS NULL THEN run[1] ELSE ' ' || regexp_replace("
        "substr(regexp_replace(run[2], '(.)', '\\1\\1', 'g'), 2), '(..?)', '\\1 ', 'g') END,"
        " '' ORDER BY n)"
        f" FROM regexp_matches(translate($1, '{marks}', ''), '([^{PAIRED}]+)|({paired}+)', 'g')"
        " WITH ORDINALITY AS runs(run, n)) END $body$",
        "CREATE OR REPLACE FUNCTION transcripts_search_query(text) RETURNS tsquery"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT"
        " RETURN regexp_replace(websearch_to_tsquery('transcripts_search', $1)::text,"
        f" '''({paired})''', '''\\1'':*', 'g')::tsquery",
    ]


DROP_FUNCTIONS = [
    "DROP FUNCTION IF EXISTS transcripts_search_query(text)",
    "DROP FUNCTION IF EXISTS transcripts_search_text(text)",
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS transcripts_search",
    "DROP FUNCTION IF EXISTS transcripts_unaccent(text)",
]


def drop_functions(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        for statement in DROP_FUNCTIONS:
            cursor.execute(statement)


SEARCH_SQL = (
    "to_tsvector('transcripts_search'::regconfig, transcripts_search_text("
    "coalesce(jsonb_path_query_array(parts, '$[*].text')::text, '')))"
)
OLD_SEARCH_SQL = (
    "to_tsvector('simple'::regconfig,"
    " coalesce(jsonb_path_query_array(parts, '$[*].text')::text, ''))"
)


def search_field(sql: str) -> models.GeneratedField:
    return models.GeneratedField(
        db_persist=True,
        expression=django.db.models.expressions.RawSQL(sql, []),
        output_field=django.contrib.postgres.search.SearchVectorField(),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0024_experiments"),
    ]

    operations = [
        # Left installed when migrating back: other databases' objects may use it.
        migrations.RunPython(create_unaccent_extension, drop_functions),
        migrations.RemoveIndex(model_name="message", name="message_search_idx"),
        migrations.RemoveField(model_name="message", name="search"),
        migrations.AddField(model_name="message", name="search", field=search_field(SEARCH_SQL)),
        migrations.AddIndex(
            model_name="message",
            index=GinIndex(fields=["search"], name="message_search_idx"),
        ),
        migrations.RemoveIndex(model_name="thread", name="thread_title_trgm_idx"),
        migrations.AddIndex(
            model_name="thread",
            index=GinIndex(
                OpClass(
                    Upper(
                        models.Func(
                            "title",
                            function="transcripts_unaccent",
                            output_field=models.TextField(),
                        )
                    ),
                    name="gin_trgm_ops",
                ),
                name="thread_title_folded_trgm_idx",
            ),
        ),
        migrations.RunSQL(
            "ANALYZE transcripts_thread, transcripts_message", migrations.RunSQL.noop
        ),
    ]
