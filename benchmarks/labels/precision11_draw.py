# precision11: the stratified draw of benchmarks/labels/precision11_sample.tsv (pool: baseline dc08f9d findings in
# /work/base_out_dc08/*.out on lines no label set and no precision10 sample covers; per rule max(4, round(190 *
# share)), round-robin over repositories in a random.Random(11) order). Writes sample.txt (draw#, repo, concise
# finding) in the working directory.
# usage: python benchmarks/labels/precision11_draw.py [LABELS_DIR] [BASELINE_DIR]
import glob, os, re, random, collections, csv, sys
LAB = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
BASE = sys.argv[2] if len(sys.argv) > 2 else '/work/base_out_dc08'
lab = set()
for f in glob.glob(os.path.join(LAB, '*.tsv')):
    if os.path.basename(f).startswith(('precision_audit', 'precision11')):
        continue
    for r in csv.DictReader(open(f), delimiter='\t', quoting=csv.QUOTE_NONE):
        lab.add((r['repo'].replace('/', '+'), r['path'], r['line']))
pool = []
for f in sorted(glob.glob(os.path.join(BASE, '*.out'))):
    repo = os.path.basename(f)[:-4]
    for l in open(f):
        l = l.rstrip('\n')
        m = re.match(r'(.*?):(cell \d+:)?(\d+):(\d+): (GPU\d+) ', l)
        if not m:
            continue
        path, cell, line, col, rule = m.groups()
        if (repo, path, line) in lab:
            continue
        pool.append((repo, path, cell or '', int(line), rule, l))
print(len(pool))
byrule = collections.defaultdict(list)
for p in pool:
    byrule[p[4]].append(p)
T = 190
tot = len(pool)
rng = random.Random(11)
sample = []
for rule, items in sorted(byrule.items()):
    n = min(len(items), max(4, round(T * len(items) / tot)))
    byrepo = collections.defaultdict(list)
    for it in items:
        byrepo[it[0]].append(it)
    repos = sorted(byrepo)
    rng.shuffle(repos)
    for r in repos:
        byrepo[r].sort()
        rng.shuffle(byrepo[r])
    got = []
    while len(got) < n:
        for r in repos:
            if byrepo[r] and len(got) < n:
                got.append(byrepo[r].pop())
    sample += got
print(len(sample), sorted(collections.Counter(s[4] for s in sample).items()))
print(len(set(s[0] for s in sample)), 'repositories')
with open('sample.txt', 'w') as f:
    for i, s in enumerate(sample):
        f.write('%d\t%s\t%s\n' % (i, s[0], s[5]))
