"""GPU007's fix for a file with no device variable writes the preamble "Move to device" writes."""

from __future__ import annotations

from gpulens.analysis import analyze
from gpulens.analysis.edits import apply_edits, fix_all_edits

SITES = "model = Net().cuda()\nx = load().cuda()\ny = other().cuda()\n"


def test_a_name_the_file_already_uses_is_not_shadowed() -> None:
    # `device` holds something the analysis cannot read as a device: it must stay untouched
    text = "import torch\nimport args\n\ndevice = args.device\n" + SITES
    fixed = apply_edits(text, fix_all_edits(analyze(text).findings))
    assert "device = args.device\n" in fixed
    assert 'torch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in fixed
    assert fixed.count(".to(torch_device)") == 3


def test_the_chosen_device_and_a_missing_torch_import() -> None:
    from gpulens.analysis import Config

    text = "from torch import nn\nimport torch as T\n\n" + SITES
    findings = analyze(text, Config(device="cuda:1")).findings
    # `.cuda()` is the current GPU, cuda:1 another one: a quick-fix that says so, not fix-all
    assert fix_all_edits(findings) == []
    assert all("cuda:1" in f.fixes[0].title for f in findings)
    fixed = apply_edits(text, [e for f in findings for e in f.fixes[0].edits])
    assert 'device = T.device("cuda:1")\n' in fixed
    assert fixed.count(".to(device)") == 3
