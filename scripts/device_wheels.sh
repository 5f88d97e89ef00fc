#!/usr/bin/env bash
# Wheels the device machine (Python 3.12, no network) lacks for `pytest -m gpu` and the
# profiler benchmarks: cupti-python, the language-server stack, IPython and a kernel.
# Run here, in the repository root; the device call carries `.whl` and installs them with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
           --platform manylinux1_x86_64 --platform any)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .whl \
  cupti-python==13.0.1 pygls==2.1.1 lsprotocol==2025.0.0 cattrs==26.2.1 \
  pytest-asyncio==1.5.0 pytest-lsp==1.0.1 \
  ipython==9.18.1 ipython-pygments-lexers decorator jedi parso matplotlib-inline pexpect \
  ptyprocess prompt-toolkit wcwidth stack-data executing asttokens pure-eval traitlets \
  ipykernel comm debugpy jupyter-client jupyter-core nest-asyncio pyzmq tornado
ls .whl
