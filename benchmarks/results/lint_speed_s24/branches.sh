#!/bin/bash
# Cold lint CPU time of each branch's wheel, all at once, each pinned to its own 2 cores.
D=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/c && tar xzf $D/corpus_examples.tgz -C /tmp/c && tar xzf $D/corpus_fairseq.tgz -C /tmp/c
i=0; cd /tmp
for v in base head recall64 recall65 recall66 recall67 recall68 precision20; do
  [ -d /tmp/site_$v ] || python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/site_$v $D/whl_gp/*.whl $D/br/$v/*.whl || exit 1
done
for v in base head recall64 recall65 recall66 recall67 recall68 precision20; do
  c=$((2*i)),$((2*i+1)); i=$((i+1))
  ( for corpus in pytorch+examples pytorch+examples pytorch+examples facebookresearch+fairseq; do
      /usr/bin/time -o /tmp/time_$v -f "%e %U %S" taskset -c $c env PYTHONPATH=/tmp/site_$v python3 -m gpulint check --no-cache --exit-zero --jobs 2 --output-format json /tmp/c/$corpus > /tmp/out_${v}_$corpus.json 2>/tmp/err_${v}_$corpus.txt; s=$(cat /tmp/time_$v); tail -c 300 /tmp/err_${v}_$corpus.txt
      echo "$v $corpus $s $(python3 -c "import json;print(len(json.load(open('/tmp/out_${v}_$corpus.json'))))")"
    done ) > $OUT/t_$v.txt 2>&1 &
done
wait
cat $OUT/t_*.txt
