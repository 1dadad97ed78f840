"""The API's thread search in every language (issue 30): the same search as the thread list."""

from __future__ import annotations

import pytest

from tests.factories import ask, make_thread, say

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("sentence", "query"),
    [
        ("我们明天去北京参观故宫。", "北京"),
        ("来週は新幹線で京都へ行きます。", "新幹線"),
        ("점심으로 비빔밥을 먹었어요.", "비빔밥"),
        ("ฉันชอบกินข้าวผัดกับไข่ดาว", "ข้าวผัด"),
        ("وضعت الكتاب على الطاولة.", "كتاب"),
        ("הילדים הלכו לבית הספר.", "בית"),
        ("Die alte Brücke über den Fluss.", "brucke"),
        ("Nous avons visité le château.", "chateau"),
    ],
)
def test_it_finds_a_word_inside_text_in_every_language(api, sentence, query):
    thread = make_thread("plain title")
    ask(thread, sentence)
    say(make_thread("other"), "nothing to see")

    found = api.get("/threads", q=query).json()["threads"]

    assert [t["id"] for t in found] == [thread.id]


def test_it_finds_a_title_without_its_accents(api):
    thread = make_thread("Crème brûlée")
    make_thread("other")

    found = api.get("/threads", q="creme brulee").json()["threads"]

    assert [t["id"] for t in found] == [thread.id]
