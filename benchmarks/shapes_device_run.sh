#!/bin/bash
# Issue 12's GPU measurement in one place: the five shapes of benchmarks/programs/shapes timed in ONE interleaved
# run (as written, gpulint-fixed with default rules, hand), then `gpulint verify` on each gpulint-fixed shape.
#
# Here (no GPU needed):
#   python benchmarks/shapes_speed.py --prepare .devcarry/s13/shapes
#   cp benchmarks/shapes_speed.py benchmarks/shapes_device_run.sh benchmarks/tf32_bimodal.py .devcarry/s13/
#   python -m pip wheel --no-deps -w .devcarry/s13/whl .
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .devcarry/s13/whl libcst==1.9.0
# On the device (run tool, carry .devcarry/s13), back to back so that the machine stays warm between calls:
#   MODE=bimodal bash .devcarry/s13/shapes_device_run.sh          # host-noise probe: tf32_bimodal.py, pinned or not
#   CPUS=auto ORDER=shuffle ROUNDS=6 MODE=start WAIT=560 bash .devcarry/s13/shapes_device_run.sh   # starts the run
#   MODE=wait WAIT=560 bash .devcarry/s13/shapes_device_run.sh    # follows it until it is done (3 rounds ~ 800 s)
#   MODE=verify bash .devcarry/s13/shapes_device_run.sh           # the verifier, ~120-250 s a shape
# Every follow copies raw.txt and run.log to $OUT as it goes, so a call cut short still returns the data.
# CPUS (a CPU list or `auto`, default: not pinned) and ORDER (fixed or shuffle, default fixed; SEED, default 0) go
# to shapes_speed.py --cpus/--order/--seed; the raw file's header line records them and the CPU set used.
# MODE=bimodal runs tf32_bimodal.py in pairs of 2 processes, unpinned then pinned (--cpus ${CPUS:-auto}), PAIRS times
# (default 3), so that the two arms are interleaved; with `auto` of more than 8 CPUs a third arm pins to 8 of them.
# BUDGET (seconds) goes to --budget-s: no round starts that would end past it. The machine goes back 30 s after a
# call ends, so a MODE=wait call that comes later finds a fresh machine and no run (twelfth landing, H200): where the
# calls cannot follow each other within seconds, run `MODE=start WAIT=570 BUDGET=540` alone, one call per run.
# Check `status` first: the run needs about 1,600 s of device time in all.
D=$(cd "$(dirname "$0")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$D"/whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
OPTS="--order ${ORDER:-fixed} --seed ${SEED:-0}${CPUS:+ --cpus $CPUS}${BUDGET:+ --budget-s $BUDGET}"
follow() {  # until the run is done or WAIT seconds pass; then copy what it wrote
  local t0=$SECONDS
  while [ ! -e /tmp/s/done ] && [ $((SECONDS - t0)) -lt ${WAIT:-560} ]; do
    sleep 5; cp /tmp/s/raw.txt /tmp/s/run.log "$OUT"/ 2>/dev/null
  done
  cp /tmp/s/raw.txt /tmp/s/run.log "$OUT"/ 2>/dev/null; cat /tmp/s/run.log | tail -40
  [ -e /tmp/s/done ] && echo "RUN DONE" || echo "RUN STILL GOING"
}
case "${MODE:-start}" in
start)
  rm -rf /tmp/s && cp -r "$D/shapes" /tmp/s && cp "$D"/shapes_speed.py /tmp/s/ && cd /tmp/s || exit 1
  { nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; nproc; uptime; date -u
    echo "## python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --variants as_written gpulint hand --raw raw.txt $OPTS"
  } > /tmp/s/run.log 2>&1
  setsid nohup bash -c "python3 shapes_speed.py --run . --rounds ${ROUNDS:-3} --steps 300 --warmup 100 --variants as_written gpulint hand --raw raw.txt $OPTS >> run.log 2>&1; date -u >> run.log; touch done" > /dev/null 2>&1 < /dev/null &
  sleep 2; follow ;;
wait) cd /tmp/s && follow ;;
bimodal)
  nvidia-smi -L; nproc; date -u; nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader
  A=$(python3 -c "import sys; sys.path.insert(0, '$D'); import shapes_speed as s; c, h = s.resolve_cpus('${CPUS:-auto}'); print(s.format_cpulist(c))")
  N=$(python3 -c "import sys; sys.path.insert(0, '$D'); import shapes_speed as s; print(len(s.parse_cpulist('$A')))")
  B=""; [ "$N" -gt 8 ] && B=$(python3 -c "import sys; sys.path.insert(0, '$D'); import shapes_speed as s; print(s.format_cpulist(s.parse_cpulist('$A')[:8]))")
  echo "# arms: unpinned | pinned $A${B:+ | pinned $B}"
  for i in $(seq ${PAIRS:-3}); do
    echo "## round $i unpinned"; python3 "$D"/tf32_bimodal.py --processes 2
    echo "## round $i pinned $A"; python3 "$D"/tf32_bimodal.py --processes 2 --cpus "$A"
    [ -n "$B" ] && { echo "## round $i pinned $B"; python3 "$D"/tf32_bimodal.py --processes 2 --cpus "$B"; }
  done 2>&1 | tee "$OUT"/bimodal.log
  date -u ;;
verify)
  rm -rf /tmp/v && cp -r "$D/shapes" /tmp/v && cd /tmp/v || exit 1
  nvidia-smi -L; date -u
  for s in ${SHAPES:-mlp_tensordataset finetune_encoder gpt_getbatch resnet_mapstyle diffusion_unet}; do
    echo "## python3 -m gpulint verify as_written/$s.py --fixed gpulint/$s.py --rounds ${VR:-3} --noise-runs 2 --max-steps 60 --warmup 20 --timeout 90 --output-format json -- --steps 400"
    python3 -m gpulint verify as_written/$s.py --fixed gpulint/$s.py --rounds ${VR:-3} --noise-runs 2 --max-steps 60 --warmup 20 --timeout 90 --output-format json -- --steps 400 > verify_$s.json 2> verify_$s.log
    echo "rc=$?"; tail -c 600 verify_$s.log; python3 -c "import json,sys; d=json.load(open('verify_$s.json')); print(d.get('verdict'), '|', d.get('summary', '')[:400])" 2>&1 | tail -2
    tar czf "$OUT"/verify.tgz verify_*.json verify_*.log; date -u
  done ;;
esac
