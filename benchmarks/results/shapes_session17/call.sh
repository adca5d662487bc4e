#!/bin/bash
# One self-contained timing call (session 17): ResNet and encoder, GPU403's autocast fix (gpulint) against the
# previous default fix (gpulint_old), as written and hand. K = first round, N = most rounds, BUDGET seconds.
D=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
{ nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; date -u; } > "$OUT/env_$K.txt" 2>&1
PYTHONUNBUFFERED=1 python3 shapes_speed.py --run . --only ${ONLY:-resnet_mapstyle finetune_encoder} --rounds ${N:-5} --first-round $K \
  --budget-s ${BUDGET:-540} --steps ${STEPS:-300} --warmup 100 --variants as_written gpulint gpulint_old hand \
  --raw "$OUT/raw_$K.txt" --order shuffle --seed $K > "$OUT/run_$K.log" 2>&1
date -u >> "$OUT/run_$K.log"; cat "$OUT/env_$K.txt"; tail -30 "$OUT/run_$K.log"
