#!/bin/bash
# One self-contained timing call (session 14): K = number of the first round, N = most rounds; stops before a round
# that would pass BUDGET seconds. Raw lines go straight to $OUT so a cut call still returns them.
D=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
{ nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; date -u; } > "$OUT/env_$K.txt" 2>&1
echo "## python3 shapes_speed.py --run . --rounds ${N:-3} --first-round $K --budget-s ${BUDGET:-550} --steps ${STEPS:-600} --warmup 100 --variants as_written gpulint hand gpulint_pw --raw raw_$K.txt --order shuffle --seed $K" > "$OUT/run_$K.log"
PYTHONUNBUFFERED=1 python3 shapes_speed.py --run . --rounds ${N:-3} --first-round $K --budget-s ${BUDGET:-550} --steps ${STEPS:-600} --warmup 100 \
  --variants as_written gpulint hand gpulint_pw --raw "$OUT/raw_$K.txt" --order shuffle --seed $K >> "$OUT/run_$K.log" 2>&1
date -u >> "$OUT/run_$K.log"; cat "$OUT/env_$K.txt"; tail -25 "$OUT/run_$K.log"
