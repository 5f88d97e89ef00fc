"""The pure conversions of the server, without a server: positions, edits, settings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_helpers import apply_text_edits, lsp_lines, offset_of
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from gpulens.analysis import Span
from gpulens.analysis.config import suppression_edit
from gpulens.lsp.code_actions import wanted
from gpulens.lsp.convert import LineIndex, edits_to_text_edits, minimal_replacement, offset_at
from gpulens.lsp.settings import merge, parse_settings, settings_from_initialization_options

texts = st.text(alphabet=st.sampled_from(list("ab \t\n\r😀é\ud800#")), max_size=40)


@settings(max_examples=300)
@given(before=texts, after=texts)
def test_minimal_replacement_turns_one_text_into_the_other(before: str, after: str) -> None:
    edit = minimal_replacement(before, after)
    index = LineIndex(before, PositionCodec(types.PositionEncodingKind.Utf16))
    assert apply_text_edits(before, edits_to_text_edits([edit], index)) == after


@settings(max_examples=300)
@given(text=texts, data=st.data())
def test_positions_survive_the_round_trip(text: str, data: st.DataObject) -> None:
    for encoding in ("utf-8", "utf-16", "utf-32"):
        index = LineIndex(text, PositionCodec(encoding))
        lines = lsp_lines(text)
        line = data.draw(st.integers(0, len(lines) - 1))
        column = data.draw(st.integers(0, len(lines[line].rstrip("\r\n"))))
        assert index.from_client(index.to_client(line, column)) == (line, column)


@settings(max_examples=500)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab \n\r\f\v\x85\u2028😀é")), max_size=40),
    line=st.integers(0, 30),
    character=st.integers(0, 30),
)
def test_offsets_of_positions_are_clamped_as_lsp_clamps_them(
    text: str, line: int, character: int
) -> None:
    # past a line's end is its end, past the last line is the text's end; only \n, \r\n
    # and \r end a line
    position = types.Position(line=line, character=character)
    codec = PositionCodec(types.PositionEncodingKind.Utf16)
    assert offset_at(text, position, codec) == offset_of(text, position)


def test_utf16_counts_astral_characters_twice() -> None:
    index = LineIndex('s = "😀"; x.item()\n', PositionCodec(types.PositionEncodingKind.Utf16))
    assert index.to_client(0, 9).character == 10
    utf8 = LineIndex('s = "😀"; x.item()\n', PositionCodec(types.PositionEncodingKind.Utf8))
    assert utf8.to_client(0, 9).character == 12


def test_span_past_the_end_is_clamped() -> None:
    index = LineIndex("ab\ncd", PositionCodec())
    assert index.span_to_range(Span(0, 5, 9, 9)) == types.Range(
        start=types.Position(line=0, character=2), end=types.Position(line=1, character=2)
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    total += x.item()\n", "    total += x.item()  # gpulens: ignore[GPU001]\n"),
        ("    total += x.item()   \n", "    total += x.item()  # gpulens: ignore[GPU001]\n"),
        (
            "y = x.item()  # gpulens: ignore[GPU004]",
            "y = x.item()  # gpulens: ignore[GPU004, GPU001]",
        ),
        ("y = x.item()  # gpulens: ignore[]", "y = x.item()  # gpulens: ignore[GPU001]"),
    ],
)
def test_suppression_comment(line: str, expected: str) -> None:
    edit = suppression_edit(line, 0, "GPU001")
    index = LineIndex(line, PositionCodec())
    assert apply_text_edits(line, edits_to_text_edits([edit], index)) == expected


@pytest.mark.parametrize(
    ("kind", "only", "expected"),
    [
        ("source.fixAll.gpulens", None, True),
        ("source.fixAll.gpulens", ["source"], True),
        ("source.fixAll.gpulens", ["source.fixAll"], True),
        ("source.fixAll.gpulens", ["source.fix"], False),
        ("refactor.rewrite", ["refactor"], True),
        ("quickfix", ["refactor"], False),
        ("quickfix", [types.CodeActionKind.QuickFix], True),
    ],
)
def test_only_is_a_prefix_match(kind: str, only: list[str] | None, expected: bool) -> None:
    assert wanted(kind, only) is expected


def test_settings_in_nested_and_dotted_form_agree() -> None:
    nested, problems = parse_settings({"rules": {"ignore": ["GPU001"]}, "device": "cuda:1"})
    dotted, more = parse_settings({"rules.ignore": ["GPU001"], "device": "cuda:1"})
    assert nested == dotted
    assert problems == more == []
    assert nested.ignore == frozenset({"GPU001"})


def test_one_bad_setting_keeps_the_others() -> None:
    parsed, problems = parse_settings(
        {"device": "gpu!", "rules": {"select": ["GPU001"], "severity": {"GPU002": "nope"}}}
    )
    assert parsed.select == frozenset({"GPU001"})
    assert parsed.device is None
    assert len(problems) == 2


def test_editor_settings_override_the_project() -> None:
    from gpulens.analysis.config import config_from_mapping

    project = config_from_mapping({"ignore": ["GPU001"], "device": "cuda:0"})
    editor, _ = parse_settings({"rules": {"ignore": []}})
    merged = merge(project, editor, device_override=None)
    assert merged.enabled("GPU001")
    assert merged.device == "cuda:0"
    assert merge(project, editor, device_override="mps").device == "mps"


@pytest.mark.parametrize(
    "options",
    [
        {"gpulens": {"device": "mps"}},
        {"settings": {"gpulens": {"device": "mps"}}},
        {"settings": {"device": "mps"}},
        {"device": "mps", "diagnosticDelayMs": 0},
    ],
)
def test_initialization_options_shapes(options: dict) -> None:
    parsed, problems = parse_settings(settings_from_initialization_options(options))
    assert parsed.device == "mps"
    assert problems == []
