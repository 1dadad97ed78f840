"""The database work an import costs less of (migration 0026): transcripts_search_text in
PL/pgSQL gives exactly what 0025's LANGUAGE sql function gave, and no statistics are gathered on
the message parts nor the event data, which no query filters on."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from transcripts.formats import Skips
from transcripts.formats.openai import import_openai
from transcripts.interchange.imports import import_trees
from transcripts.ledger.default_project import default_project
from transcripts.models import Thread
from transcripts.selectors.threads import search_threads

search_every_language = importlib.import_module("transcripts.migrations.0025_search_every_language")

TEXTS = [
    "",
    "plain ASCII text, with punctuation: and\ttabs\nand lines",
    '["user message 0 of conversation 0: lorem ipsum "]',
    "café crème brûlée Ærøskøbing",
    "我们明天去北京参观故宫",
    "a北b and 東京タワー, ソウル",
    "비빔밥을 먹었다",
    "الكتاب العَرَبِيّ",
    "כָּל הַכְּבוֹדָה שָׁלוֹם",
    "ภาษาไทย ພາສາລາວ ភាសាខ្មែរ မြန်မာ",
    "x\u0640y ـ",
    "北",
    "𠀀𠀁 emoji 🎉 and 한",
    "mixed: café 北京 Ελληνικά Русский",
]


@pytest.fixture
def sql_function() -> str:
    """0025's LANGUAGE sql transcripts_search_text, under a name of its own."""
    (statement,) = [
        s
        for s in search_every_language.functions_sql("public")
        if "FUNCTION transcripts_search_text(" in s
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement.replace("transcripts_search_text(", "search_text_0025("))
    return "search_text_0025"


@pytest.mark.django_db
def test_the_plpgsql_function_gives_the_text_0025s_gave(sql_function: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
            " WHERE p.proname = 'transcripts_search_text'"
        )
        assert cursor.fetchone() == ("plpgsql",)
        for text in TEXTS:
            cursor.execute(f"SELECT transcripts_search_text(%s), {sql_function}(%s)", [text, text])
            new, old = cursor.fetchone()
            assert new == old, text
        cursor.execute("SELECT transcripts_search_text('北京参观')")
        assert cursor.fetchone() == (" 北京 京参 参观 观 ",)
        cursor.execute("SELECT transcripts_search_text(NULL)")
        assert cursor.fetchone() == (None,)


@pytest.mark.django_db
def test_imported_text_of_every_kind_is_found_as_soon_as_the_import_returns() -> None:
    (tree,) = import_openai(
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "a café, plain words, 北京参观故宫"},
        ]
    )
    result = import_trees("openai", lambda _: [tree], skips=Skips(), project=default_project())
    threads = Thread.objects.filter(pk__in=result.thread_ids)
    # Words of the answer, not of the title: found by the message's search vector.
    for query in ("cafe", "北京", "参观", '"plain words"'):
        assert (
            list(search_threads(threads, query).values_list("pk", flat=True)) == result.thread_ids
        ), query
    assert not search_threads(threads, "absent").exists()


@pytest.mark.django_db(transaction=True)
def test_an_import_analyzes_no_parts_nor_event_data() -> None:
    trees = [
        import_openai(
            [
                {"role": "user" if turn % 2 == 0 else "assistant", "content": f"t{n} m{turn}"}
                for turn in range(20)
            ]
        )[0]
        for n in range(100)
    ]
    import_trees("openai", lambda _: trees, skips=Skips(), project=default_project())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, attname FROM pg_stats"
            " WHERE tablename IN ('transcripts_message', 'transcripts_event')"
            " AND attname IN ('parts', 'data', 'role', 'kind', 'search')"
        )
        analyzed = set(cursor.fetchall())
    assert analyzed == {
        ("transcripts_message", "role"),
        ("transcripts_message", "search"),
        ("transcripts_event", "kind"),
    }
