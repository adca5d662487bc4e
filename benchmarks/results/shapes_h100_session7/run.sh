#!/bin/bash
# Session 7 (branch thru3): the five shapes with gpulint's DEFAULT rules after GPU406 left preview.
# Env: ROUNDS, FIRST (first round number), ONLY (shapes), VARIANTS, BUDGET (s).
D=$(cd "$(dirname "$0")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$D"/whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m gpulint --version
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; date -u
export PYTHONUNBUFFERED=1
V=${VARIANTS:-as_written gpulint hand}
echo "## python3 shapes_speed.py --run . --rounds ${ROUNDS:-2} --first-round ${FIRST:-1} --steps 300 --warmup 100 --variants $V ${ONLY:+--only $ONLY} --budget-s ${BUDGET:-480} --raw \$OUT/shapes_raw.txt"
python3 shapes_speed.py --run . --rounds ${ROUNDS:-2} --first-round ${FIRST:-1} --steps 300 --warmup 100 --variants $V ${ONLY:+--only $ONLY} --budget-s ${BUDGET:-480} --raw $OUT/shapes_raw.txt
date -u
