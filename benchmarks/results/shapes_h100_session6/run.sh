#!/bin/bash
# Session 6: the five shapes with gpulint's DEFAULT rules (`check --fix --unsafe-fixes`, no --extend-select).
# MODE=speed: shapes_speed rounds; MODE=verify: gpulint verify on the five gpulint-fixed shapes.
D=$(cd "$(dirname "$0")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$D"/whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/*.py /tmp/s/ && cd /tmp/s || exit 1
nvidia-smi -L; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; date -u
export PYTHONUNBUFFERED=1
if [ "${MODE:-speed}" = speed ]; then
echo "## python3 shapes_speed.py --run . --rounds ${ROUNDS:-2} --first-round ${FIRST:-1} --steps 300 --warmup 100 --variants as_written gpulint ${EXTRA} hand ${ONLY:+--only $ONLY} --raw \$OUT/shapes_raw.txt"
python3 shapes_speed.py --run . --rounds ${ROUNDS:-2} --first-round ${FIRST:-1} --steps 300 --warmup 100 --variants as_written gpulint ${EXTRA} hand ${ONLY:+--only $ONLY} --raw $OUT/shapes_raw.txt
else
for s in ${ONLY:-finetune_encoder diffusion_unet gpt_getbatch mlp_tensordataset resnet_mapstyle}; do
echo "## python3 -m gpulint verify as_written/$s.py --fixed gpulint/$s.py --rounds ${VR:-4} --noise-runs 2 --max-steps 60 --warmup 20 --timeout 60 --output-format json -- --steps 400"
timeout 170 python3 -m gpulint verify as_written/$s.py --fixed gpulint/$s.py --rounds ${VR:-4} --noise-runs 2 --max-steps 60 --warmup 20 --timeout 60 --output-format json -- --steps 400 > $OUT/verify_$s.json 2> $OUT/verify_$s.log
echo "rc=$? $(python3 -c "import json,sys; d=json.load(open('$OUT/verify_$s.json')); print(d.get('verdict'), d.get('speed',{}).get('speedup') if isinstance(d.get('speed'),dict) else '')" 2>&1 | tail -1)"
done
fi
date -u
