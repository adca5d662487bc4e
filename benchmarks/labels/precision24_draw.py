import json, random, sys, glob
from pathlib import Path
import importlib.util
spec = importlib.util.spec_from_file_location("sl", "/work/main/benchmarks/score_labels.py"); sl = importlib.util.module_from_spec(spec); sys.modules["sl"]=sl; spec.loader.exec_module(sl)
labelled = set(); commits = {}; heldrepos = set()
for s in glob.glob('/work/main/benchmarks/labels/*.tsv'):
    if 'sample' in s or 'audit' in s: continue
    for lb in sl.read_labels(Path(s)):
        labelled.add((lb.repo, lb.path, lb.line)); commits[lb.repo] = lb.commit
        if any(f'heldout{n}' in s for n in (19,20,21,22,23)): heldrepos.add(lb.repo)
sampled = set()
for s in glob.glob('/work/main/benchmarks/labels/precision2*_sample.tsv'):
    for ln in open(s).read().splitlines()[1:]:
        c = ln.split('\t')
        if len(c) > 4: sampled.add((c[0], c[2], int(c[3])))
pool = []
for pb in sorted(Path('/work/head27m').glob('*.json')):
    if pb.name.startswith('_'): continue
    repo = pb.stem.replace('+', '/')
    if repo in heldrepos: continue
    seen = set()
    for f in json.loads(pb.read_text()):
        k = (repo, f['_path'], f['location']['row'])
        if k in labelled or k in sampled or k in seen: continue
        seen.add(k)
        pool.append((repo, f['_path'], f['location']['row'], f['code'], f['message']))
pool.sort()
print(len(pool), len(heldrepos), file=sys.stderr)
sample = random.Random(24).sample(pool, 60)
for i, (repo, p, row, code, msg) in enumerate(sample):
    print(f"{i}\t{repo}\t{commits.get(repo,'')}\t{p}\t{row}\t{code}\t{msg}")
