"""Search in every language (issue 30): a word is found inside Chinese, Japanese, Korean, Thai,
Arabic, Hebrew, German and French text, accents ignored when the query has none, on every
branch and in titles, with the hit marked in the thread list's snippet."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import ask, last_message, make_thread, say
from transcripts import selectors
from transcripts.models import Message, Thread
from transcripts.selectors.search_text import hit_spans, query_text, search_terms

pytestmark = pytest.mark.django_db

# (language, a sentence, a word inside it as a user types it, the text marked in the snippet)
SENTENCES = [
    ("Chinese", "我们明天去北京参观故宫，然后吃烤鸭。", "北京", "北京"),  # noqa: RUF001
    ("Japanese", "来週は新幹線で京都へ行きます。", "新幹線", "新幹線"),
    ("Korean", "점심으로 비빔밥을 먹었어요.", "비빔밥", "비빔밥"),
    ("Thai", "ฉันชอบกินข้าวผัดกับไข่ดาวทุกวัน", "ข้าวผัด", "ข้าวผัด"),
    ("Arabic", "وضعتُ الكتاب على الطاولة في الصباح.", "كتاب", "كتاب"),
    ("Hebrew", "הילדים הלכו לבית הספר בבוקר.", "בית", "בית"),
    ("German", "Die Straßenbahn fährt morgen über die alte Brücke.", "brucke", "Brücke"),
    ("French", "Nous avons visité le château avant le déjeuner.", "chateau", "château"),
]
# Sentences in the same languages without those words.
OTHERS = [
    "我们明天去上海看朋友。",
    "来週は飛行機で大阪へ行きます。",
    "저녁으로 김치찌개를 먹었어요.",
    "ฉันชอบกินก๋วยเตี๋ยวทุกวัน",
    "وضعتُ القلم على الطاولة.",
    "הילדים הלכו לגן בבוקר.",
    "Die Straßenbahn fährt morgen nicht.",
    "Nous avons visité le musée avant le déjeuner.",
]


def _list(client: Client, query: str) -> str:
    response = client.get("/", {"q": query})
    assert response.status_code == 200
    return response.content.decode()


def _snippets(html: str) -> list[str]:
    return re.findall(r'<p class="snippet">(.*?)</p>', html, re.S)


@pytest.mark.parametrize(("language", "sentence", "query", "hit"), SENTENCES)
def test_a_word_inside_a_sentence_is_found_and_marked(
    viewer_client: Client, language: str, sentence: str, query: str, hit: str
) -> None:
    found = make_thread(f"{language} lesson")
    ask(found, "Say something.")
    say(found, sentence)
    for n, other in enumerate(OTHERS):
        say(make_thread(f"Other {n}"), other)

    html = _list(viewer_client, query)

    assert f"/t/{found.id}/" in html
    assert "Other " not in html
    (snippet,) = _snippets(html)
    assert f"<mark>{hit}</mark>" in snippet, snippet


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Ein Café in der Straße", "strasse"),
        ("Ein Café in der Straße", "café"),
        ("Un cafe sans accent", "café"),
        ("Le CHÂTEAU de Versailles", "chateau"),
        ("我们明天去北京参观故宫", "北京参观"),
        ("我们明天去北京参观故宫", '"北京参观"'),
        ("我们明天去北京参观故宫", "京"),
        ("新幹線で東京へ", "東京 新幹線"),
        ("كِتَابٌ جَمِيلٌ", "كتاب"),
    ],
)
def test_accents_and_vowel_marks_are_ignored_and_runs_are_phrases(text: str, query: str) -> None:
    thread = make_thread("t")
    say(thread, text)

    assert list(selectors.search_threads(Thread.objects.all(), query)) == [thread]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("我们明天去上海参观", "北京"),
        ("京都と東京", "京東"),  # both letters, never side by side
        ("我们明天去北京参观故宫", "北京 -故宫"),
        ("A cafeteria", "cafe"),  # a Latin word is a whole word
    ],
)
def test_what_is_not_there_is_not_found(text: str, query: str) -> None:
    say(make_thread("t"), text)

    assert not selectors.search_threads(Thread.objects.all(), query).exists()


def test_a_word_on_an_inactive_branch_is_found_and_marked(viewer_client: Client) -> None:
    thread = make_thread("Travel")
    prompt = last_message(ask(thread, "去哪儿？"))  # noqa: RUF001
    old = last_message(say(thread, "我们去北京参观故宫。", fork_from=prompt.id))
    say(thread, "我们去上海。", fork_from=prompt.id)
    assert not Message.objects.get(pk=old.pk).active

    html = _list(viewer_client, "故宫")

    assert f"/t/{thread.id}/?leaf={old.id}#m-{old.id}" in html
    assert "<mark>故宫</mark>" in _snippets(html)[0]


@pytest.mark.parametrize(
    ("title", "query"),
    [
        ("東京への旅", "東京"),
        ("서울 여행 계획", "서울"),
        ("رحلة إلى القاهرة", "قاهرة"),
        ("Résumé des Cafés", "resume des cafes"),
        ("Schöne Grüße", "GRUSSE"),
    ],
)
def test_a_title_is_found_in_every_language(viewer_client: Client, title: str, query: str) -> None:
    thread = make_thread(title)
    say(thread, "nothing about it")
    make_thread("Another")

    html = _list(viewer_client, query)

    assert f"/t/{thread.id}/" in html and "Another" not in html


def test_a_query_in_those_scripts_is_written_as_pairs_of_letters() -> None:
    assert query_text("北京参观") == ' "北京 京参 参观" '
    assert query_text('"去 北京"') == '" 去   北京 "'
    assert query_text("-北京 cafe") == '-"北京"  cafe'
    assert query_text("كِتَاب") == ' "كت تا اب" '
    assert search_terms('北京 or -上海 "a b"') == ["北京", "a b"]


def test_hits_are_found_in_text_with_accents_and_inside_words() -> None:
    text = "Le Château, 我们去北京。"
    spans = hit_spans(text, "chateau 北京 -x")
    assert [text[a:b] for a, b in spans] == ["Château", "北京"]
