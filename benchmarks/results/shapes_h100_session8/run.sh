#!/bin/bash
# Session 8 (branch thru4): GPT and UNet with gpulint's DEFAULT rules after GPU410's device-resident batch and
# GPU411's lists built once; `gpulint_cl` = the gpulint-fixed UNet with both models in channels_last (GPU418's
# lever, fp32 here). Env: ROUNDS, BUDGET (s).
D=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; date -u
export PYTHONUNBUFFERED=1
echo "## python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --variants as_written gpulint gpulint_cl hand --only diffusion_unet gpt_getbatch --budget-s ${BUDGET:-420} --raw \$OUT/shapes_raw.txt"
python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --variants as_written gpulint gpulint_cl hand --only diffusion_unet gpt_getbatch --budget-s ${BUDGET:-420} --raw $OUT/shapes_raw.txt
date -u
