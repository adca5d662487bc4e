#!/bin/bash
# Issue 11's lint speed on a quiet host: the device machine's CPUs (its GPU unused), two cores pinned with taskset,
# so that the figures do not depend on the development machine's load. One `run` call of the device tool.
#
# Here (no GPU needed), into an ignored folder that the call carries (`carry: [".devcarry/s18"]`):
#   D=.devcarry/s18; mkdir -p $D/whl_gp $D/whl_tf $D/gp_base $D/gp_head
#   P="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
#   $P -d $D/whl_gp libcst==1.9.0 click pathspec pyyaml
#   $P -d $D/whl_tf torchfix==0.7.0 libcst==1.5.1 flake8==7.5.0 mccabe==0.7.0 pycodestyle==2.15.0 pyflakes==4.1.0 pyyaml
#   (cd BEFORE_CHECKOUT && pip wheel -q --no-deps -w $OLDPWD/$D/gp_base .)   # and the same for HEAD into gp_head
#   tar czf $D/corpus_examples.tgz --exclude=.git -C /work/trials pytorch+examples
#   (cd /work/labelrepos && find facebookresearch+fairseq -name "*.py" -not -path "*/.git/*" | tar czf $OLDPWD/$D/corpus_fairseq.tgz -T -)
#   cp benchmarks/lint_speed.py benchmarks/lint_speed_device.sh $D/
# On the device (run tool): `bash .devcarry/s18/lint_speed_device.sh` (CPUS=2,3 R=3 TR=2 by default).
# gpulint (each version) and TorchFix (with the libcst it pins) are installed into separate targets, never together.
D=$(cd "$(dirname "$0")" && pwd); set -x
mkdir -p /tmp/c && tar xzf $D/corpus_examples.tgz -C /tmp/c && tar xzf $D/corpus_fairseq.tgz -C /tmp/c
for v in base head; do
  ls $D/gp_$v/*.whl >/dev/null 2>&1 || continue
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_$v $D/whl_gp/*.whl $D/gp_$v/*.whl || exit 1
  printf '#!/bin/sh\nPYTHONPATH=/tmp/site_%s exec python3 "$@"\n' $v > /tmp/py_$v; chmod +x /tmp/py_$v
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_tf $D/whl_tf/*.whl || exit 1
printf '#!/bin/sh\nPYTHONPATH=/tmp/site_tf exec python3 -m torchfix "$@"\n' > /tmp/torchfix; chmod +x /tmp/torchfix
/tmp/torchfix --version; /tmp/py_base -c "import libcst, gpulint; print(gpulint.__file__)"
{ nproc; uptime; python3 --version; date -u; } 2>&1
set +x
B=""; G=/tmp/py_base; [ -x /tmp/py_head ] && B="--before /tmp/py_base" && G=/tmp/py_head
cd /tmp/c
PYTHONUNBUFFERED=1 taskset -c ${CPUS:-2,3} $G $D/lint_speed.py /tmp/c/pytorch+examples --torchfix /tmp/torchfix \
  --big /tmp/c/facebookresearch+fairseq $B --rounds ${R:-3} --torchfix-rounds ${TR:-2} 2>&1 | tee $OUT/lint_speed.txt
date -u; uptime
