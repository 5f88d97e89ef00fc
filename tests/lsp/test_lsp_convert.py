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
from gpulens.analysis.source import split_lines
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


@settings(max_examples=200)
@given(text=texts)
def test_an_index_on_the_analysis_lines_is_the_index_of_the_text(text: str) -> None:
    # the publication hands over the lines its analysis split; the index must neither
    # differ from one that splits the text nor change the analysis's list
    lines = split_lines(text)
    kept = list(lines)
    given_lines = LineIndex(text, PositionCodec(), lines)
    assert given_lines.lines == LineIndex(text, PositionCodec()).lines
    assert lines == kept


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


def test_plain_text_keeps_the_words_and_drops_the_marks() -> None:
    from gpulens.analysis.rules import RULES
    from gpulens.lsp.markup import plain_text

    doc = RULES["GPU001"].doc
    assert "```" in doc and "**" in doc and "`" in doc  # what there is to undo
    plain = plain_text(doc)
    assert "```" not in plain and "**" not in plain and "`" not in plain
    fenced = doc.split("```python\n", 1)[1].split("```", 1)[0].splitlines()
    for line in fenced:  # the code, as an indented block
        assert f"    {line}".rstrip() in plain.splitlines()
    assert doc.splitlines()[0] == plain.splitlines()[0]  # the words as they were


def test_plain_text_aligns_a_tables_columns() -> None:
    from gpulens.lsp.markup import plain_text

    table = "| top kernels | launches |\n|---|---:|\n| `relu` | 1.2k |\n| `gemm\\|x` | 200 |"
    assert plain_text(table).splitlines() == [
        "top kernels  launches",
        "relu         1.2k",
        "gemm|x       200",
    ]


# a text with findings on lines of every kind of character: the columns differ by encoding
PUBLISHED = """\
import time
import torch

device = torch.device("cuda")
x = torch.randn(8, device=device)
total = 0.0
for step in range(10):  # é 😀 é
    total += x.sum().item()  # 😀 per step
    t0 = time.perf_counter()
label = "é😀"; y = torch.zeros(256, 3).cuda()
"""


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_diagnostics_written_once_are_what_lsprotocol_writes(encoding: str) -> None:
    """The publication's JSON, written per finding and kept (`published`), against the
    diagnostics lsprotocol serializes, first and when the findings come again."""
    import json

    from pygls.protocol import default_converter

    from gpulens.analysis import analyze
    from gpulens.lsp.convert import finding_to_diagnostic
    from gpulens.lsp.published import PublishedDiagnostics

    codec = PositionCodec(encoding)
    findings = analyze(PUBLISHED).findings
    assert len(findings) >= 2
    index = LineIndex(PUBLISHED, codec)
    converter = default_converter()
    expected = converter.unstructure(
        types.PublishDiagnosticsParams(
            uri="file:///a.py",
            version=3,
            diagnostics=[finding_to_diagnostic(f, index) for f in findings],
        )
    )
    published = PublishedDiagnostics()
    for _ in range(2):  # written, then taken from what was written
        params = published.params_json("file:///a.py", 3, PUBLISHED, findings, codec)
        published.forget_unpublished()
        assert json.loads(params) == expected
    unversioned = published.params_json("file:///a.py", None, PUBLISHED, [], codec)
    assert json.loads(unversioned) == converter.unstructure(
        types.PublishDiagnosticsParams(uri="file:///a.py", diagnostics=[])
    )


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_diagnostics_merged_with_a_profile_are_what_lsprotocol_writes(encoding: str) -> None:
    """A finding a profile found (`Merged`, origin "profile") is written with its measured
    source and origin, as `merged_to_diagnostic` gives; the same finding as analysed is
    written as plain again, not taken from what the merged publication wrote."""
    import json

    from pygls.protocol import default_converter

    from gpulens.analysis import analyze
    from gpulens.lsp.convert import merged_to_diagnostic
    from gpulens.lsp.published import PublishedDiagnostics
    from gpulens.profiler.measured import ORIGIN_ANALYSIS, ORIGIN_PROFILE, Merged

    codec = PositionCodec(encoding)
    findings = analyze(PUBLISHED).findings
    index = LineIndex(PUBLISHED, codec)
    converter = default_converter()
    merged = [Merged(findings[0], ORIGIN_PROFILE, True)] + [
        Merged(f, ORIGIN_ANALYSIS, False) for f in findings[1:]
    ]

    def expected(shown: list[Merged]) -> object:
        return converter.unstructure(
            types.PublishDiagnosticsParams(
                uri="file:///a.py",
                version=3,
                diagnostics=[merged_to_diagnostic(m, index) for m in shown],
            )
        )

    published = PublishedDiagnostics()
    for shown in (merged, merged, [Merged(f, ORIGIN_ANALYSIS, False) for f in findings]):
        params = published.params_json("file:///a.py", 3, PUBLISHED, shown, codec)
        published.forget_unpublished()
        assert json.loads(params) == expected(shown)
    assert json.loads(params)["diagnostics"][0]["source"] == "gpulens"
    measured = published.params_json("file:///a.py", 3, PUBLISHED, merged[:1], codec)
    first = json.loads(measured)["diagnostics"][0]
    assert first["source"] == "gpulens (measured)" and first["data"]["origin"] == "profile"


def test_the_debounce_follows_what_the_document_costs() -> None:
    from gpulens.lsp.diagnostics import MAX_DEBOUNCE_S, PAUSE_S, adaptive_delay_s

    assert adaptive_delay_s(None, 0.0) == 0.0  # never analysed: at once
    assert adaptive_delay_s(0.020, 0.1) == pytest.approx(0.005)  # 2,000 lines: a few ms
    assert adaptive_delay_s(0.300, 0.1) == MAX_DEBOUNCE_S  # a large file: at most this
    assert adaptive_delay_s(0.300, PAUSE_S) == 0.0  # the first change after a pause
    assert adaptive_delay_s(0.040, 0.1) < adaptive_delay_s(0.200, 0.1)
