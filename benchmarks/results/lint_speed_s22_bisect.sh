#!/bin/bash
D=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/c && tar xzf $D/corpus_examples.tgz -C /tmp/c && tar xzf $D/corpus_fairseq.tgz -C /tmp/c
printf '' > /tmp/empty.toml
i=0
for v in base $(ls $D/bisect); do
  if [ $v = base ]; then W=$D/gp_base; else W=$D/bisect/$v; fi
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/s_$v $D/whl_gp/*.whl $W/*.whl || exit 1
  PYTHONPATH=/tmp/s_$v python3 -m compileall -q /tmp/s_$v >/dev/null 2>&1
  (cd /tmp/c; for r in 1 2 3; do
     for corp in pytorch+examples; do
       s=$( { TIMEFORMAT="%U %S %R"; time taskset -c $i env PYTHONPATH=/tmp/s_$v python3 -m gpulint check --no-cache --exit-zero --output-format concise --jobs 1 --config /tmp/empty.toml $corp >/tmp/o_${v}_$corp.txt 2>/dev/null; } 2>&1 | tail -1)
       echo "$v $corp r$r $s"
     done
   done
   s=$( { TIMEFORMAT="%U %S %R"; time taskset -c $i env PYTHONPATH=/tmp/s_$v python3 -m gpulint check --no-cache --exit-zero --output-format concise --jobs 1 --config /tmp/empty.toml facebookresearch+fairseq >/tmp/o_${v}_fairseq.txt 2>/dev/null; } 2>&1 | tail -1)
   echo "$v fairseq r1 $s") > $OUT/t_$v.txt &
  i=$((i+1))
done
# profiles: base and head on examples
for v in base b8_20428f1; do
  (cd /tmp/c/facebookresearch+fairseq; taskset -c $i env PYTHONPATH=/tmp/s_$v python3 -c "
import cProfile,pstats,sys
sys.argv=['gpulint','check','--no-cache','--exit-zero','-q','--jobs','1','--config','/tmp/empty.toml','.']
from gpulint.cli import main
p=cProfile.Profile(); p.enable()
try: main()
except SystemExit: pass
p.disable(); p.dump_stats('$OUT/fprof_$v.pstats')
" >/dev/null 2>&1; python3 -c "
import pstats; s=pstats.Stats('$OUT/fprof_$v.pstats'); s.sort_stats('cumulative').print_stats('gpulint',60)" > $OUT/fprof_$v.txt 2>&1) &
  i=$((i+1))
done
wait
cat $OUT/t_*.txt > $OUT/all.txt; md5sum /tmp/o_*.txt >> $OUT/all.txt; wc -l /tmp/o_*.txt >> $OUT/all.txt; rm $OUT/t_*.txt $OUT/fprof_*.txt; cat $OUT/all.txt
