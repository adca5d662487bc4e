#!/bin/bash
D=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
{ nvidia-smi -L; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; date -u; } > "$OUT/env_pw$K.txt" 2>&1
PYTHONUNBUFFERED=1 python3 shapes_speed.py --run . --only ${ONLY:-resnet_mapstyle} --rounds ${N:-6} --first-round $K --budget-s ${BUDGET:-400} --steps 300 --warmup 100 \
  --variants ${VARIANTS:-as_written gpulint gpulint_pw hand} --raw "$OUT/raw_pw$K.txt" --order shuffle --seed $K > "$OUT/run_pw$K.log" 2>&1
date -u >> "$OUT/run_pw$K.log"; cat "$OUT/env_pw$K.txt"; tail -30 "$OUT/run_pw$K.log"
