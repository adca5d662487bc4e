#!/bin/bash
# Encoder and ResNet after the integer-dtype change (GPU403 now reports both), with ablations; one interleaved run.
D=$(cd "$(dirname "$0")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$D"/whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
{ nvidia-smi -L; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; date -u
  echo "## python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --only $ONLY --variants $VARIANTS --raw raw.txt"; } > run.log 2>&1
python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --only $ONLY --variants $VARIANTS --raw raw.txt >> run.log 2>&1 &
P=$!
while kill -0 $P 2>/dev/null; do sleep 5; cp raw.txt run.log "$OUT"/ 2>/dev/null; done
date -u >> run.log; cp raw.txt run.log "$OUT"/; tail -30 run.log
