"""Move to device: factories get ``device=``, modules and host tensors ``.to(device)``."""

from __future__ import annotations

import pytest
from refactor_checks import DATA, applied, example, lines

from gpulens.analysis.model import Span
from gpulens.analysis.refactors.move_to_device import move_to_device


def move(device: str = "cuda"):
    return lambda text, selection: move_to_device(text, selection, device)


def test_training_script_whole_file() -> None:
    expected = (DATA / "train.moved.txt").read_text(encoding="utf-8")
    assert applied(move(), example("train"), None) == expected


def test_selection_in_loop_with_chosen_device() -> None:
    expected = (DATA / "train.loop_cuda1.txt").read_text(encoding="utf-8")
    assert applied(move("cuda:1"), example("train"), lines(23, 26)) == expected


def test_cpu_device_and_selection_leaves_the_rest() -> None:
    text = "import torch\n\nx = torch.ones(3)\ny = torch.ones(3)\n"
    assert applied(move("cpu"), text, lines(2, 2)) == (
        'import torch\ndevice = torch.device("cpu")\n\n'
        "x = torch.ones(3, device=device)\ny = torch.ones(3)\n"
    )


def test_aliases_resolved_and_torch_imported_for_the_preamble() -> None:
    text = "from torch import zeros, arange\n\na = zeros(2, 3)\nb = arange(10)\n"
    assert applied(move(), text, None) == (
        "from torch import zeros, arange\n"
        "import torch\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n\n'
        "a = zeros(2, 3, device=device)\nb = arange(10, device=device)\n"
    )


def test_module_alias_and_existing_device_variable_reused() -> None:
    text = (
        "import torch as T\n"
        "gpu_device = T.device('cuda:0')\n"
        "x = T.rand(4)\n"
        "y = T.eye(3).cuda()\n"
        "z = x.cuda(non_blocking=True)\n"
    )
    assert applied(move(), text, None) == (
        "import torch as T\n"
        "gpu_device = T.device('cuda:0')\n"
        "x = T.rand(4, device=gpu_device)\n"
        "y = T.eye(3).to(gpu_device)\n"
        "z = x.to(gpu_device, non_blocking=True)\n"
    )


def test_device_parameter_of_the_enclosing_function() -> None:
    text = (
        "import torch\n\n\ndef make(n, device):\n    buffer = torch.empty(n)\n    return buffer\n"
    )
    assert applied(move(), text, Span.point(4, 6)) == (
        "import torch\n\n\n"
        "def make(n, device):\n"
        "    buffer = torch.empty(n, device=device)\n"
        "    return buffer\n"
    )


def test_tabs_and_no_final_newline() -> None:
    text = "import torch\nif True:\n\tx = torch.full((2,), 1.0)\n\tm = torch.nn.Linear(2, 2)"
    assert applied(move(), text, None) == (
        "import torch\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "if True:\n\tx = torch.full((2,), 1.0, device=device)\n"
        "\tm = torch.nn.Linear(2, 2).to(device)"
    )


def test_header_only_file_without_final_newline() -> None:
    text = "import torch\nx = torch.zeros(1)"
    assert applied(move(), text, None).startswith("import torch\ndevice = torch.device(")


def test_literal_tensor_gets_device_and_variable_tensor_gets_to() -> None:
    text = "import torch\ndevice = 'cuda'\na = torch.tensor([1, -2])\nb = torch.tensor(values)\n"
    assert applied(move(), text, None) == (
        "import torch\ndevice = 'cuda'\n"
        "a = torch.tensor([1, -2], device=device)\nb = torch.tensor(values).to(device)\n"
    )


def test_name_taken_by_something_else_gets_another_device_name() -> None:
    text = "import torch\n\ndevice = get_device()\nx = torch.ones(1)\n"
    output = applied(move(), text, lines(3, 3))
    assert "torch_device = torch.device(" in output
    assert "x = torch.ones(1, device=torch_device)" in output


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("import numpy as np\nx = np.zeros(3)\n", id="no torch"),
        pytest.param("import torch\nx = torch.zeros(3\n", id="syntax error"),
        pytest.param("import torch\nx = torch.zeros(3, device='cpu')\n", id="has device"),
        pytest.param("import torch\nx = torch.zeros(3).to(dev)\n", id="already moved"),
        pytest.param("import torch\nx = torch.zeros(3).numpy()\n", id="wanted on host"),
        pytest.param("import torch\nd = torch.device('cuda')\n", id="torch.device itself"),
        pytest.param("import torch\nx = torch.zeros(3).to('cpu')\n", id="to cpu"),
        pytest.param("import torch\nopt = torch.optim.SGD(p)\nopt(1)\n", id="optimizer"),
        pytest.param("import torch\n\nprint('hi')\n", id="nothing to move"),
        pytest.param("import torch\nx = torch.zeros(**options)\n", id="kwargs may hold device"),
        pytest.param("import torch\nm = torch.nn.Linear(2, 2)\nm.to(d)\n", id="module moved"),
        pytest.param("import torch\nclass A:\n    pass\na = A()\na(1)\n", id="not a module"),
        pytest.param("import torch\r\nx = torch.ones(1)\rprint(x)\n", id="lone carriage return"),
    ],
)
def test_nothing_to_do(text: str) -> None:
    assert move_to_device(text, None) == []


def test_model_like_names_from_elsewhere() -> None:
    text = (
        "import torch\nfrom models import ResNet\n"
        "net = ResNet()\nx = torch.from_numpy(batch)\ny = net(x)\n"
    )
    output = applied(move(), text, None)
    assert "net = ResNet().to(device)" in output
    assert "x = torch.from_numpy(batch).to(device)" in output
    assert "y = net(x)\n" in output  # x is moved where it is made, not twice


def test_crlf_file_keeps_its_line_endings() -> None:
    text = "import torch\r\nx = torch.ones(2)\r\n"
    output = applied(move(), text, None)
    assert output.count("\r\n") == 3
    assert "\n" not in output.replace("\r\n", "")
