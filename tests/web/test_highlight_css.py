"""The committed code-block stylesheet is what `manage.py highlight_css` writes, and every token
colour in it reads at 4.5:1 on the code block (light and dark)."""

from __future__ import annotations

from django.core.management import call_command

from transcripts.management.commands.highlight_css import (
    DARK_BACKGROUND,
    HEX_COLOUR,
    LIGHT_BACKGROUND,
    MIN_CONTRAST,
    contrast,
    highlight_css,
    readable,
)


def test_the_committed_highlight_css_is_up_to_date() -> None:
    call_command("highlight_css", "--check")


def test_every_token_colour_reads_at_aa_on_the_code_block() -> None:
    light, dark = highlight_css().split("@media")
    for rules, background in ((light, LIGHT_BACKGROUND), (dark, DARK_BACKGROUND)):
        for colour in HEX_COLOUR.findall(rules):
            assert contrast(colour, background) >= MIN_CONTRAST, (colour, background)


def test_a_faint_colour_is_moved_towards_the_text_until_it_reads() -> None:
    assert readable("#bbbbbb", "#ffffff") != "#bbbbbb"
    assert contrast(readable("#bbbbbb", "#ffffff"), "#ffffff") >= MIN_CONTRAST
    assert contrast(readable("#333333", "#222327"), "#222327") >= MIN_CONTRAST
    assert readable("#000000", "#ffffff") == "#000000"
