"""Port NumPy to CuPy: allowlisted names move to ``cp.``, host boundaries get ``cp.asnumpy``."""

from __future__ import annotations

import pytest
from refactor_checks import DATA, applied, example, lines

from gpulens.analysis.model import Span
from gpulens.analysis.refactors.numpy_to_cupy import port_numpy_to_cupy


def test_pipeline_whole_file() -> None:
    expected = (DATA / "pipeline.ported.txt").read_text(encoding="utf-8")
    assert applied(port_numpy_to_cupy, example("pipeline"), None) == expected


def test_pipeline_selection_converts_where_the_host_takes_over() -> None:
    expected = (DATA / "pipeline.ported_lines.txt").read_text(encoding="utf-8")
    assert applied(port_numpy_to_cupy, example("pipeline"), lines(5, 9)) == expected


def test_host_mark_keeps_numpy_and_converts_its_inputs() -> None:
    text = (
        "import numpy as np\n\n"
        "x = np.arange(10)\n"
        "y = x * 2\n"
        "n = x.shape[0]\n"
        "total = np.sum(y) + n  # gpulens: host\n"
    )
    assert applied(port_numpy_to_cupy, text, None) == (
        "import numpy as np\nimport cupy as cp\n\n"
        "x = cp.arange(10)\n"
        "y = x * 2\n"
        "n = x.shape[0]\n"
        "total = np.sum(cp.asnumpy(y)) + n  # gpulens: host\n"
    )


def test_existing_cupy_import_reused_and_plain_numpy_import() -> None:
    text = "import numpy\nimport cupy as xp\n\na = numpy.linalg.norm(numpy.ones(3))\n"
    assert applied(port_numpy_to_cupy, text, None) == (
        "import numpy\nimport cupy as xp\n\na = xp.linalg.norm(xp.ones(3))\n"
    )


def test_selection_inside_a_function_with_tabs() -> None:
    text = (
        "import numpy as np\n\n\n"
        "def normalise(a):\n"
        "\tb = np.asarray(a, dtype=np.float32)\n"
        "\treturn b / np.linalg.norm(b)\n"
    )
    assert applied(port_numpy_to_cupy, text, Span(4, 3, 4, 9)) == (
        "import numpy as np\nimport cupy as cp\n\n\n"
        "def normalise(a):\n"
        "\tb = cp.asarray(a, dtype=cp.float32)\n"
        "\treturn b / np.linalg.norm(cp.asnumpy(b))\n"
    )


def test_names_outside_the_allowlist_stay_numpy() -> None:
    text = "import numpy as np\nx = np.zeros(3)\nnp.save('x.npy', np.ones(2))\n"
    assert applied(port_numpy_to_cupy, text, None) == (
        "import numpy as np\nimport cupy as cp\nx = cp.zeros(3)\nnp.save('x.npy', np.ones(2))\n"
    )


def test_arguments_of_host_calls_stay_numpy() -> None:
    text = "import numpy as np\nimport matplotlib.pyplot as plt\nplt.plot(np.linspace(0, 1, 5))\n"
    assert port_numpy_to_cupy(text, None) == []


def test_cp_taken_gives_plain_cupy_import() -> None:
    text = "import numpy as np\ncp = 3\nx = np.ones(cp)\n"
    assert applied(port_numpy_to_cupy, text, None) == (
        "import numpy as np\nimport cupy\ncp = 3\nx = cupy.ones(cp)\n"
    )


def test_reassigned_name_is_host_again() -> None:
    text = (
        "import numpy as np\nimport pandas as pd\n"
        "x = np.ones(3)\n"
        "x = [1, 2]\n"
        "frame = pd.DataFrame(x)\n"
    )
    output = applied(port_numpy_to_cupy, text, lines(2, 2))
    assert output.endswith("frame = pd.DataFrame(x)\n")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("import torch\nx = torch.zeros(3)\n", id="no numpy"),
        pytest.param("import numpy as np\nx = np.zeros(\n", id="syntax error"),
        pytest.param("import numpy as np\nnp.save('a', b)\n", id="nothing portable"),
        pytest.param("import numpy as np\nx = np.zeros(3)  # gpulens: host\n", id="host line"),
        pytest.param("import numpy as np\nx = cp.zeros(3)\n", id="already ported"),
    ],
)
def test_nothing_to_do(text: str) -> None:
    assert port_numpy_to_cupy(text, None) == []
