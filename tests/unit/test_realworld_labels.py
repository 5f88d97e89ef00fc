"""The real-world benchmark's labels and scoring, with no network: the label files parse and
hold what the benchmark needs, the scores are right on small inputs worked out by hand, and
the unpacking and gpulens run work on archives and sources made here."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "realworld.py"
# held-out parts labeled with sites first; their findings are judged once, later
BLIND = (
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
    "heldout9",
    "heldout10",
    "heldout11",
)


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("realworld", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realworld"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


rw = _load_benchmark()


# --- the committed labels ----------------------------------------------------------------------


def test_every_label_file_parses_with_valid_entries() -> None:
    packages = rw.load_corpus()
    assert len(packages) >= 6
    for package in packages:
        if package.split in BLIND:  # its findings are judged once, later; its sites now
            assert package.sites, f"{package.name}: no site is listed"
        else:
            assert package.findings, f"{package.name}: no finding is judged"
        for label in package.findings:
            assert label.verdict in rw.VERDICTS
            assert label.rule in rw.RULES
            assert label.path.startswith(package.scope), f"{package.name}: {label.path}"
        for site in package.sites:
            assert site.path.startswith(package.scope), f"{package.name}: {site.path}"


def test_every_package_is_pinned_to_one_file() -> None:
    for package in rw.load_corpus():
        assert package.version in package.file, package.name
        assert package.file.endswith((".tar.gz", ".whl", ".zip")), package.name
        assert len(package.sha256) == 64


def test_a_held_out_part_exists_beside_the_tuned_one() -> None:
    splits = [p.split for p in rw.load_corpus()]
    assert splits.count("heldout") >= 2
    assert splits.count("tuned") >= 4
    assert splits.count("heldout2") >= 3
    assert splits.count("heldout3") >= 3
    assert splits.count("heldout4") >= 3
    assert splits.count("heldout5") >= 3
    assert splits.count("heldout6") >= 3
    assert splits.count("heldout7") >= 3
    assert splits.count("heldout8") >= 3
    assert splits.count("heldout9") >= 3
    assert splits.count("heldout10") >= 3
    assert splits.count("heldout11") >= 3


@pytest.mark.parametrize(
    ("split", "at_least"),
    [
        ("heldout2", 40),
        ("heldout3", 80),
        ("heldout4", 80),
        ("heldout5", 80),
        ("heldout6", 80),
        ("heldout7", 80),
        ("heldout8", 80),
        ("heldout9", 80),
        ("heldout10", 80),
        ("heldout11", 80),
    ],
)
def test_each_blind_part_lists_sites_of_its_own(split: str, at_least: int) -> None:
    corpus = rw.load_corpus()
    part = [p for p in corpus if p.split == split]
    assert sum(len(p.sites) for p in part) >= at_least
    # new code bases: none of them is already labeled in another part
    assert not {p.name for p in part} & {p.name for p in corpus if p.split != split}


def test_the_sites_to_find_number_at_least_forty() -> None:
    assert sum(len(p.sites) for p in rw.load_corpus()) >= 40


# --- the loader refuses what it cannot use -----------------------------------------------------

HEADER = """\
name = "demo"
version = "1.0"
file = "demo-1.0.tar.gz"
sha256 = "{sha}"
split = "tuned"
style = "a demo"
scope = ["pkg/"]
""".format(sha="0" * 64)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "demo.toml"
    path.write_text(HEADER + body)
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "maybe", '
            'reason = "a reason here" }]',
            "verdict 'maybe'",
        ),
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU099", verdict = "fp", '
            'reason = "a reason here" }]',
            "rule 'GPU099'",
        ),
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "fp", '
            'reason = "" }]',
            "one-line reason",
        ),
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "fp", '
            'reason = "a reason here" }, { path = "pkg/a.py", line = 3, rule = "GPU001", '
            'verdict = "tp", reason = "another reason" }]',
            "labeled twice",
        ),
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "tp", '
            'reason = "a real sync per step" }]',
            "not a site",
        ),
        (
            'findings = [{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "fp", '
            'reason = "a reason here", extra = 1 }]',
            "unknown extra",
        ),
        ('sites = [{ path = "pkg/a.py", line = 0, rule = "GPU001", reason = "a reason" }]', "line"),
    ],
)
def test_the_loader_names_the_entry_at_fault(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(rw.CorpusError, match=message):
        rw.load_package(_write(tmp_path, body))


@pytest.mark.parametrize("split", BLIND)
def test_the_loader_takes_the_blind_held_out_splits(tmp_path: Path, split: str) -> None:
    path = tmp_path / "demo.toml"
    path.write_text(HEADER.replace('"tuned"', f'"{split}"'))
    assert rw.load_package(path).split == split


@pytest.mark.parametrize("split", ["tuned", "heldout", *BLIND])
def test_the_command_line_takes_each_split(split: str, capsys: pytest.CaptureFixture) -> None:
    # an unknown --only stops before any download, after the split was accepted
    assert rw.main(["--split", split, "--only", "no-such-package"]) == 1
    assert "--only no-such-package: no such package" in capsys.readouterr().err


def test_the_loader_refuses_an_unknown_split(tmp_path: Path) -> None:
    path = tmp_path / "demo.toml"
    path.write_text(HEADER.replace('"tuned"', '"tuning"'))
    with pytest.raises(rw.CorpusError, match="split 'tuning'"):
        rw.load_package(path)


# --- scoring -----------------------------------------------------------------------------------


def _package(findings, sites, split: str = "tuned"):
    return rw.Package(
        name=f"demo-{split}",
        version="1.0",
        file="demo-1.0.tar.gz",
        sha256="0" * 64,
        split=split,
        style="a demo",
        scope=("pkg/",),
        findings=tuple(rw.Label(*f) for f in findings),
        sites=tuple(rw.Site(*s) for s in sites),
        source=Path("demo.toml"),
    )


def _seen(path: str, line: int, rule: str, column: int = 1, severity: str = "warning"):
    return rw.Observed(path, line, column, rule, severity, "a message")


def test_scores_count_each_verdict_and_leave_unlabeled_findings_out() -> None:
    package = _package(
        findings=[
            ("pkg/a.py", 10, "GPU001", "tp", "a sync per step"),
            ("pkg/a.py", 20, "GPU001", "negligible", "once per epoch"),
            ("pkg/a.py", 30, "GPU009", "fp", "loop over parameters"),
            ("pkg/a.py", 40, "GPU002", "fp", "distinct tensors"),
            ("pkg/b.py", 5, "GPU001", "fp", "a label whose finding is gone"),
        ],
        sites=[
            ("pkg/a.py", 10, "GPU001", "a sync per step"),
            ("pkg/a.py", 50, "GPU001", "a missed sync"),
            ("pkg/a.py", 60, "GPU009", "a missed element loop"),
        ],
    )
    observed = [
        _seen("pkg/a.py", 10, "GPU001", column=5),
        _seen("pkg/a.py", 10, "GPU001", column=9),  # same line and rule: counted once
        _seen("pkg/a.py", 20, "GPU001"),
        _seen("pkg/a.py", 30, "GPU009"),
        _seen("pkg/a.py", 40, "GPU002"),
        _seen("pkg/a.py", 60, "GPU001"),  # unlabeled, and the wrong rule for the site on 60
    ]
    score = rw.score_package(package, observed)
    total = score.total.all
    assert (total.findings, total.tp, total.negligible, total.fp) == (5, 1, 1, 2)
    assert total.unlabeled == 1
    assert total.lenient == pytest.approx(2 / 4)
    assert total.strict == pytest.approx(1 / 4)
    assert (total.sites, total.sites_found) == (3, 1)
    assert total.recall == pytest.approx(1 / 3)
    assert [(f.path, f.line, f.rule) for f in score.unlabeled] == [("pkg/a.py", 60, "GPU001")]
    assert [(s.path, s.line) for s in score.stale] == [("pkg/b.py", 5)]
    assert [(s.line, s.rule) for s in score.missed] == [(50, "GPU001"), (60, "GPU009")]
    assert score.by_rule["GPU009"].all.sites == 1 and score.by_rule["GPU009"].all.sites_found == 0
    assert score.by_rule["GPU002"].all.lenient == 0.0


def test_a_site_added_from_a_judged_finding_counts_for_precision_not_recall() -> None:
    """Recall over a site list grown from the analysis's own tp findings would flatter it:
    such sites keep their tp finding countable and stay out of recall."""
    package = _package(
        findings=[("pkg/a.py", 10, "GPU001", "tp", "a sync per step")],
        sites=[
            ("pkg/a.py", 10, "GPU001", "a sync per step, found by gpulens first", True),
            ("pkg/a.py", 50, "GPU001", "a missed sync, listed by reading", False),
        ],
    )
    score = rw.score_package(package, [_seen("pkg/a.py", 10, "GPU001")])
    total = score.total.all
    assert (total.tp, total.strict) == (1, 1.0)
    assert (total.sites, total.sites_found, total.recall) == (1, 0, 0.0)
    assert [(s.line, s.rule) for s in score.missed] == [(50, "GPU001")]


def test_a_site_told_by_a_tp_finding_of_another_rule_counts_as_found_and_says_so() -> None:
    """A judge who calls a finding of another rule on the site's line tp says the user was
    told of that pitfall; a negligible or fp one there, or a hint in the shown view, does not."""
    package = _package(
        findings=[
            ("pkg/a.py", 10, "GPU002", "tp", "the same copy per step, named as a loop's copy"),
            ("pkg/a.py", 20, "GPU002", "negligible", "true, not worth it"),
            ("pkg/a.py", 30, "GPU002", "tp", "a hint, judged tp"),
        ],
        sites=[
            ("pkg/a.py", 10, "GPU003", "a host-made tensor moved per step"),
            ("pkg/a.py", 20, "GPU003", "a host-made tensor moved per step"),
            ("pkg/a.py", 30, "GPU003", "a host-made tensor moved per step"),
        ],
    )
    observed = [
        _seen("pkg/a.py", 10, "GPU002"),
        _seen("pkg/a.py", 20, "GPU002"),
        _seen("pkg/a.py", 30, "GPU002", severity="hint"),
    ]
    score = rw.score_package(package, observed)
    every, shown = score.total.all, score.total.shown
    assert (every.sites, every.sites_found, every.found_otherwise) == (3, 2, 2)
    assert (shown.sites, shown.sites_found, shown.found_otherwise) == (3, 1, 1)
    assert [s.line for s in score.missed] == [20]
    report = rw.build_report([score])
    assert "2 sites count as found by a tp finding of another rule" in rw.format_text(report)
    assert json.loads(rw.format_json(report))["total"]["sites_found_by_another_rule"] == 2


def test_a_finding_judged_fp_finds_no_site_even_on_its_own_line() -> None:
    """An assert's message read as a per-step sync sits on the line of the assert's real sync:
    a false message there tells the user nothing true, so the site stays missed."""
    package = _package(
        findings=[
            ("pkg/a.py", 10, "GPU001", "fp", "the message is formatted only when the assert fails"),
            ("pkg/a.py", 20, "GPU001", "negligible", "true, a stop test the algorithm needs"),
        ],
        sites=[
            ("pkg/a.py", 10, "GPU001", "the assert's comparison syncs every step"),
            ("pkg/a.py", 20, "GPU001", "a sync per step"),
            ("pkg/a.py", 30, "GPU001", "a sync per step, not judged yet"),
        ],
    )
    observed = [
        _seen("pkg/a.py", 10, "GPU001"),
        _seen("pkg/a.py", 20, "GPU001"),
        _seen("pkg/a.py", 30, "GPU001"),
    ]
    score = rw.score_package(package, observed)
    assert (score.total.all.sites, score.total.all.sites_found) == (3, 2)
    assert (score.total.shown.sites, score.total.shown.sites_found) == (3, 2)
    assert [s.line for s in score.missed] == [10]


def test_the_loader_reads_from_finding_and_refuses_a_non_boolean(tmp_path: Path) -> None:
    site = '{ path = "pkg/a.py", line = 3, rule = "GPU001", reason = "a sync per step", '
    good = _write(tmp_path, f"sites = [\n  {site}from_finding = true }},\n]\n")
    assert rw.load_package(good).sites[0].from_finding is True
    bad = _write(tmp_path, f"sites = [\n  {site}from_finding = 1 }},\n]\n")
    with pytest.raises(rw.CorpusError, match="from_finding must be true or false"):
        rw.load_package(bad)


def test_the_loader_reads_who_judged_a_finding_and_refuses_an_empty_name(tmp_path: Path) -> None:
    label = '{ path = "pkg/a.py", line = 3, rule = "GPU001", verdict = "fp", reason = "a reason", '
    good = _write(tmp_path, f'findings = [\n  {label}by = "round5" }},\n]\n')
    assert rw.load_package(good).findings[0].verdict == "fp"
    bad = _write(tmp_path, f'findings = [\n  {label}by = "" }},\n]\n')
    with pytest.raises(rw.CorpusError, match="by must be a non-empty string"):
        rw.load_package(bad)


def test_missed_sites_are_shown_in_context(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("".join(f"line{n}\n" for n in range(1, 12)))
    site = rw.Site("pkg/a.py", 6, "GPU001", "a sync per step")
    package = _package([], [])
    shown = rw.format_missed(rw.PackageScore(package, rw.Score(), {}, [], [], [site]), tmp_path)
    assert "pkg/a.py:6 GPU001 (missed)" in shown
    assert ">    6  line6" in shown and "a sync per step" in shown


def test_the_report_adds_packages_up_by_split_and_by_rule() -> None:
    tuned = rw.score_package(
        _package([("pkg/a.py", 1, "GPU001", "fp", "not a GPU value")], []),
        [_seen("pkg/a.py", 1, "GPU001")],
    )
    heldout = rw.score_package(
        _package(
            [("pkg/a.py", 1, "GPU001", "tp", "a sync per step")],
            [("pkg/a.py", 1, "GPU001", "a sync per step")],
            split="heldout",
        ),
        [_seen("pkg/a.py", 1, "GPU001")],
    )
    second = rw.score_package(
        _package([], [("pkg/a.py", 7, "GPU009", "an element loop per step")], split="heldout2"),
        [],
    )
    third = rw.score_package(
        _package([], [("pkg/b.py", 3, "GPU001", "a sync per step")], split="heldout3"),
        [_seen("pkg/b.py", 3, "GPU001")],
    )
    fourth = rw.score_package(
        _package(
            [], [("pkg/c.py", 5, "GPU008", "a copy to the host per iteration")], split="heldout4"
        ),
        [],
    )
    fifth = rw.score_package(
        _package(
            [], [("pkg/d.py", 2, "GPU004", "a clock read with work queued")], split="heldout5"
        ),
        [_seen("pkg/d.py", 2, "GPU004")],
    )
    sixth = rw.score_package(
        _package(
            [], [("pkg/e.py", 7, "GPU006", "a pinned batch copied blocking")], split="heldout6"
        ),
        [],
    )
    seventh = rw.score_package(
        _package([], [("pkg/f.py", 3, "GPU008", "an asnumpy per solver step")], split="heldout7"),
        [_seen("pkg/f.py", 3, "GPU008")],
    )
    eighth = rw.score_package(
        _package(
            [], [("pkg/g.py", 9, "GPU005", "a loader feeding the GPU unpinned")], split="heldout8"
        ),
        [],
    )
    ninth = rw.score_package(
        _package(
            [], [("pkg/h.py", 4, "GPU010", "a layer sized 1000 under autocast")], split="heldout9"
        ),
        [_seen("pkg/h.py", 4, "GPU010")],
    )
    report = rw.build_report(
        [tuned, heldout, second, third, fourth, fifth, sixth, seventh, eighth, ninth]
    )
    assert report.by_split["tuned"].all.lenient == 0.0
    assert report.by_split["heldout"].all.strict == 1.0
    assert report.total.all.lenient == pytest.approx(0.5)
    assert report.by_rule["GPU001"].all.findings == 3  # the heldout3 one is unlabeled
    assert report.by_split["heldout2"].all.recall == 0.0
    assert report.by_split["heldout3"].all.recall == 1.0
    assert report.by_split["heldout4"].all.recall == 0.0
    assert report.by_split["heldout5"].all.recall == 1.0
    assert report.by_split["heldout6"].all.recall == 0.0
    assert report.by_split["heldout7"].all.recall == 1.0
    assert report.by_split["heldout8"].all.recall == 0.0
    assert report.by_split["heldout9"].all.recall == 1.0
    assert report.total.all.recall == pytest.approx(5 / 9)
    text = rw.format_text(report)
    assert "heldout part" in text and "GPU001" in text
    assert "all, heldout2 part" in text and "demo-heldout2 (heldout2)" in text
    assert "shown, heldout3 part" in text and "demo-heldout3 (heldout3)" in text
    assert "all, heldout4 part" in text and "demo-heldout4 (heldout4)" in text
    assert "all, heldout5 part" in text and "demo-heldout5 (heldout5)" in text
    assert "all, heldout6 part" in text and "demo-heldout6 (heldout6)" in text
    assert "all, heldout7 part" in text and "demo-heldout7 (heldout7)" in text
    assert "all, heldout8 part" in text and "demo-heldout8 (heldout8)" in text
    assert "all, heldout9 part" in text and "demo-heldout9 (heldout9)" in text
    # the parts come in their fixed order, the newest last
    assert text.index("all, heldout2 part") < text.index("all, heldout3 part")
    assert text.index("all, heldout3 part") < text.index("all, heldout4 part")
    assert text.index("all, heldout4 part") < text.index("all, heldout5 part")
    assert text.index("all, heldout5 part") < text.index("all, heldout6 part")
    assert text.index("all, heldout6 part") < text.index("all, heldout7 part")
    assert text.index("all, heldout7 part") < text.index("all, heldout8 part")
    assert text.index("all, heldout8 part") < text.index("all, heldout9 part")


def test_hints_are_scored_apart_from_the_findings_shown_by_default() -> None:
    package = _package(
        findings=[
            ("pkg/a.py", 10, "GPU001", "tp", "a sync per step"),
            ("pkg/a.py", 20, "GPU001", "tp", "a sync per step, as a hint"),
            ("pkg/a.py", 30, "GPU001", "fp", "a hint on a host value"),
            ("pkg/a.py", 40, "GPU007", "negligible", "an info in a demo"),
            ("pkg/a.py", 50, "GPU009", "fp", "a warning on a module loop"),
        ],
        sites=[
            ("pkg/a.py", 10, "GPU001", "a sync per step"),
            ("pkg/a.py", 20, "GPU001", "a sync per step, only a hint reports it"),
        ],
    )
    observed = [
        _seen("pkg/a.py", 10, "GPU001"),
        _seen("pkg/a.py", 20, "GPU001", severity="hint"),
        _seen("pkg/a.py", 30, "GPU001", severity="hint"),
        _seen("pkg/a.py", 40, "GPU007", severity="info"),
        _seen("pkg/a.py", 50, "GPU009", severity="error"),
        _seen("pkg/a.py", 60, "GPU001", severity="hint"),  # unlabeled
    ]
    total = rw.score_package(package, observed).total
    assert (total.all.findings, total.all.tp, total.all.negligible, total.all.fp) == (6, 2, 1, 2)
    # shown: error, warning and info; the hints are left out of its figures and its recall
    shown = total.shown
    assert (shown.findings, shown.tp, shown.negligible, shown.fp) == (3, 1, 1, 1)
    assert shown.lenient == pytest.approx(2 / 3) and shown.strict == pytest.approx(1 / 3)
    assert (shown.sites, shown.sites_found) == (2, 1)
    assert (total.all.sites, total.all.sites_found) == (2, 2)
    hints = total.hints
    assert (hints.findings, hints.tp, hints.negligible, hints.fp) == (3, 1, 0, 1)
    assert hints.unlabeled == 1
    assert hints.sites == 0 and hints.recall is None


def test_a_line_shown_once_counts_as_shown_whatever_the_order() -> None:
    hint = _seen("pkg/a.py", 10, "GPU001", column=3, severity="hint")
    warning = _seen("pkg/a.py", 10, "GPU001", column=9)
    for observed in ([hint, warning], [warning, hint]):
        (kept,) = rw.dedupe(observed)
        assert kept.severity == "warning"


def test_the_report_and_its_outputs_carry_both_ways() -> None:
    tuned = rw.score_package(
        _package(
            [
                ("pkg/a.py", 1, "GPU001", "tp", "a sync per step"),
                ("pkg/a.py", 2, "GPU001", "fp", "a hint on a host value"),
            ],
            [("pkg/a.py", 1, "GPU001", "a sync per step")],
        ),
        [_seen("pkg/a.py", 1, "GPU001"), _seen("pkg/a.py", 2, "GPU001", severity="hint")],
    )
    heldout = rw.score_package(
        _package([], [], split="heldout"), [_seen("pkg/b.py", 3, "GPU009", severity="hint")]
    )
    report = rw.build_report([tuned, heldout])
    assert report.total.shown.lenient == 1.0 and report.total.all.lenient == 0.5
    assert report.by_split["heldout"].hints.unlabeled == 1
    assert report.by_rule["GPU001"].hints.fp == 1
    text = rw.format_text(report)
    assert "shown, heldout part" in text and "hints, all parts" in text
    assert "(hint) a message" in text  # the unlabeled hint says what it is
    payload = json.loads(rw.format_json(report))
    assert payload["schema"] == "gpulens.realworld/2"
    assert payload["total"]["precision_lenient"] == 0.5
    assert payload["total"]["shown"]["precision_lenient"] == 1.0
    assert payload["total"]["hints"]["fp"] == 1
    assert payload["packages"][1]["unlabeled"][0]["severity"] == "hint"


def test_a_severity_the_scoring_does_not_know_is_an_error() -> None:
    item = {"path": "pkg/a.py", "line": 1, "column": 1, "code": "GPU001", "message": "m"}
    assert rw.parse_findings([{**item, "severity": "hint"}])[0].severity == "hint"
    with pytest.raises(rw.CorpusError, match="unknown severity: notice"):
        rw.parse_findings([{**item, "severity": "notice"}])


def test_no_labeled_finding_reads_as_no_figure_not_zero() -> None:
    tally = rw.Tally(findings=3)
    assert tally.lenient is None and tally.strict is None and tally.recall is None
    assert "–" in rw._row("x", tally)


# --- unpacking and running on local material ---------------------------------------------------


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_sdist_unpacks_to_its_python_files_without_the_top_folder(tmp_path: Path) -> None:
    archive = tmp_path / "demo-1.0.tar.gz"
    archive.write_bytes(
        _tar_gz(
            {
                "demo-1.0/pkg/a.py": b"x = 1\n",
                "demo-1.0/README.md": b"# demo\n",
                "demo-1.0/../../escape.py": b"bad = 1\n",
            }
        )
    )
    rw._unpack(archive, tmp_path / "out")
    found = sorted(
        p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")
    )
    assert found == ["pkg", "pkg/a.py"]
    assert not (tmp_path / "escape.py").exists()


def test_a_wheel_unpacks_as_it_is(tmp_path: Path) -> None:
    archive = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(archive, "w") as wheel:
        wheel.writestr("pkg/a.py", "x = 1\n")
        wheel.writestr("demo-1.0.dist-info/METADATA", "Name: demo\n")
    rw._unpack(archive, tmp_path / "out")
    assert (tmp_path / "out" / "pkg" / "a.py").read_text() == "x = 1\n"
    assert not (tmp_path / "out" / "demo-1.0.dist-info").exists()


TRAINING = b"""\
import torch
model = torch.nn.Linear(8, 8).to("cuda")
data = torch.randn(64, 8, device="cuda")
for step in range(100):
    loss = model(data).sum()
    loss.backward()
    print(loss.item())
"""


def test_a_cached_archive_is_unpacked_checked_and_scored_end_to_end(tmp_path: Path) -> None:
    data = _tar_gz({"demo-1.0/pkg/train.py": TRAINING, "demo-1.0/docs/conf.py": b"x = 1\n"})
    (tmp_path / "archives").mkdir()
    (tmp_path / "archives" / "demo-1.0.tar.gz").write_bytes(data)
    package = rw.Package(
        name="demo",
        version="1.0",
        file="demo-1.0.tar.gz",
        sha256=hashlib.sha256(data).hexdigest(),
        split="tuned",
        style="a demo",
        scope=("pkg/",),
        findings=(rw.Label("pkg/train.py", 7, "GPU001", "tp", "loss.item() every step"),),
        sites=(rw.Site("pkg/train.py", 7, "GPU001", "loss.item() every step"),),
        source=Path("demo.toml"),
    )
    source = rw.ensure_source(package, cache=tmp_path)  # the archive is there: no download
    files = rw.scope_files(package, source)
    assert files == ["pkg/train.py"]
    score = rw.score_package(package, rw.run_gpulens(source, files))
    assert (score.total.all.tp, score.total.all.sites_found) == (1, 1)
    assert (score.total.shown.tp, score.total.shown.sites_found) == (1, 1)  # a warning
    new = rw.Observed("pkg/train.py", 7, 11, "GPU001", "warning", "a message")
    shown = rw.format_unlabeled(rw.PackageScore(package, rw.Score(), {}, [new], [], []), source)
    assert ">    7      print(loss.item())" in shown
    assert 'line = 7, rule = "GPU001", verdict = ""' in shown


def test_a_cached_archive_whose_hash_differs_is_not_used(tmp_path: Path) -> None:
    data = _tar_gz({"demo-1.0/pkg/a.py": b"x = 1\n"})
    (tmp_path / "demo-1.0.tar.gz").write_bytes(data)
    package = rw.Package(
        name="demo",
        version="1.0",
        file="demo-1.0.tar.gz",
        sha256=hashlib.sha256(data).hexdigest(),
        split="tuned",
        style="a demo",
        scope=("pkg/",),
        findings=(),
        sites=(),
        source=Path("demo.toml"),
    )
    assert rw.cached_archive(package, tmp_path) == tmp_path / "demo-1.0.tar.gz"
    (tmp_path / "demo-1.0.tar.gz").write_bytes(data + b"changed")
    assert rw.cached_archive(package, tmp_path) is None
