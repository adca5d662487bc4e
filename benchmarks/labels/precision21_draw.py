import json, random, sys, glob
sys.path.insert(0, '/work/main/benchmarks')
from pathlib import Path
import importlib.util
spec = importlib.util.spec_from_file_location("sl", "/work/main/benchmarks/score_labels.py"); sl = importlib.util.module_from_spec(spec); sys.modules["sl"]=sl; spec.loader.exec_module(sl)
labelled = set()
commits = {}
for s in glob.glob('/work/main/benchmarks/labels/*.tsv'):
    if 'sample' in s or 'audit' in s: continue
    for lb in sl.read_labels(Path(s)):
        labelled.add((lb.repo, lb.path, lb.line)); commits[lb.repo] = lb.commit
def key(f): return (f["_path"], f["location"]["row"], f["location"]["column"], f["code"])
new = []
for pb in sorted(Path('/work/head24m').glob('*.json')):
    if pb.name.startswith('_'): continue
    pa = Path('/work/head24base') / pb.name
    if not pa.exists(): continue
    fa = {key(f) for f in json.loads(pa.read_text())}
    repo = pb.stem.replace('+', '/')
    for f in json.loads(pb.read_text()):
        if key(f) in fa: continue
        if (repo, f['_path'], f['location']['row']) in labelled: continue
        new.append((repo, f['_path'], f['location']['row'], f['code'], f['message']))
new.sort()
print(len(new), file=sys.stderr)
random.seed(2521)
sample = random.sample(new, 80)
for i, (repo, p, row, code, msg) in enumerate(sample):
    print(f"{i}\t{repo}\t{commits.get(repo,'')}\t{p}\t{row}\t{code}\t{msg}")
