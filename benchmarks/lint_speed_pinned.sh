#!/bin/bash
# benchmarks/lint_speed.py on a machine of its own, pinned to two CPUs, with each tool installed as a user installs
# it (pip, byte-compiled): this tree, a baseline tree, and TorchFix, each in its own target folder.
#
#   bash benchmarks/lint_speed_pinned.sh WHEELS TORCHFIX_WHEELS BASELINE_TREE CORPUS BIG_CORPUS OUT [ROUNDS]
#
# WHEELS: gpulint's dependencies (libcst, pathspec; click and PyYAML from the system), TORCHFIX_WHEELS: TorchFix
# 0.7.0 and its own (libcst 1.5.1, flake8, pycodestyle, pyflakes, mccabe), as `pip download --no-deps` gives them.
# BASELINE_TREE: e.g. `git archive <commit> | tar x -C base`. Nothing is fetched.
set -e
WHEELS=$1; TF=$2; BASE=$3; CORPUS=$4; BIG=$5; OUT=$6; ROUNDS=${7:-3}
python3 -m pip install -q --no-index --no-deps --target /tmp/lsp_site "$WHEELS"/*.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/lsp_tf "$TF"/*.whl
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/lsp_new .
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/lsp_base "$BASE"
printf '#!/bin/sh\nPYTHONPATH=/tmp/lsp_new:/tmp/lsp_site exec python3 "$@"\n' > /tmp/lsp_py_new
printf '#!/bin/sh\nPYTHONPATH=/tmp/lsp_base:/tmp/lsp_site exec python3 "$@"\n' > /tmp/lsp_py_base
printf '#!/bin/sh\nPYTHONPATH=/tmp/lsp_tf exec python3 -m torchfix "$@"\n' > /tmp/lsp_torchfix
chmod +x /tmp/lsp_py_new /tmp/lsp_py_base /tmp/lsp_torchfix
# Does the pinning hold? Four busy processes on two CPUs take about twice as long as one.
B='import time; t=time.perf_counter(); sum(range(30_000_000)); print(round(time.perf_counter()-t, 2))'
echo "one busy process: $(taskset -c 0,1 python3 -c "$B") s; four: $( (for i in 1 2 3 4; do
  taskset -c 0,1 python3 -c "$B" & done; wait) | tr '\n' ' ')s"
taskset -c 0,1 /tmp/lsp_py_new benchmarks/lint_speed.py "$CORPUS" --torchfix /tmp/lsp_torchfix --big "$BIG" \
  --before /tmp/lsp_py_base --rounds "$ROUNDS" --torchfix-rounds 2 2>&1 | tee "$OUT"
