# The stratified draw of the precision samples (precision11_sample.tsv, precision13_sample.tsv).
# Pool: the baseline findings in BASELINE_DIR/*.out (concise) or BASELINE_DIR/*.json (`--output-format json`; a
# finding is turned into its concise line `path:[cell N:]row:col: CODE message`) on lines that no label set and no earlier precision sample in
# LABELS_DIR covers (every *.tsv there with the label sets' columns, except the files whose names start with a
# --skip prefix: the sample being drawn); per rule max(4, round(TARGET * share)), round-robin over repositories in
# a random.Random(SEED) order. Writes OUT (draw#, repo, concise finding).
# precision11: python benchmarks/labels/precision11_draw.py benchmarks/labels /work/base_out_dc08
#   (defaults: --seed 11 --target 190 --skip precision_audit precision11 --out sample.txt)
# precision13: python benchmarks/labels/precision11_draw.py benchmarks/labels /work/base_out_4f21 --seed 13
#   --skip precision_audit precision13 --out precision13_draw.txt
# precision15: python benchmarks/labels/precision11_draw.py benchmarks/labels /tmp/p15/base77 --seed 15
#   --skip precision_audit precision15 --out draw.txt   (base77: the 77 of /work/base_out_dd8b/*.out complete at 06:07
#   UTC, AntixK+PyTorch-VAE .. salesforce+BLIP in name order)
# precision16: python benchmarks/labels/precision11_draw.py benchmarks/labels /tmp/p16/base63 --seed 16 --target 250
#   --skip precision_audit precision16 --out draw.txt   (base63: the 63 of /work/base_out_fdd5/*.out complete at 09:14
#   UTC, AntixK+PyTorch-VAE .. lucidrains+x-transformers in name order)
# precision17: python benchmarks/labels/precision11_draw.py benchmarks/labels /tmp/p17/base --seed 17 --target 290
#   --skip precision_audit precision17 --out draw.txt   (base: the JSON outputs of /work/head21 complete at the draw)
# precision18: python benchmarks/labels/precision11_draw.py benchmarks/labels /tmp/p18/A --seed 18 --target 170
#   --skip precision_audit precision18 --out drawA.txt   (A: /work/head21m's JSON of the 12 checkouts no earlier sample
#   drew from, microsoft+LoRA .. pytorch+torchtitan less gsplat, monodepth2 and pytorch+examples, and heldout16's 8), then
#   /tmp/p18/B (the other 96 checkouts) with --target 60 --out drawB.txt
import argparse, glob, os, re, random, collections, csv, sys

ap = argparse.ArgumentParser()
ap.add_argument('labels', nargs='?', default=os.path.dirname(os.path.abspath(__file__)))
ap.add_argument('baseline', nargs='?', default='/work/base_out_dc08')
ap.add_argument('--seed', type=int, default=11)
ap.add_argument('--target', type=int, default=190)
ap.add_argument('--skip', nargs='+', default=['precision_audit', 'precision11'])
ap.add_argument('--out', default='sample.txt')
args = ap.parse_args()
for d in (args.labels, args.baseline):
    if not os.path.isdir(d):
        sys.exit('error: %s is not a folder' % d)
lab = set()
for f in glob.glob(os.path.join(args.labels, '*.tsv')):
    if os.path.basename(f).startswith(tuple(args.skip)):
        continue
    for r in csv.DictReader(open(f), delimiter='\t', quoting=csv.QUOTE_NONE):
        lab.add((r['repo'].replace('/', '+'), r['path'], r['line']))


def concise(f):
    if f.endswith('.out'):
        return open(f)
    import json
    lines = []
    for x in json.load(open(f)):
        path = x['filename'][2:] if x['filename'].startswith('./') else x['filename']
        cell = 'cell %d:' % x['cell'] if x.get('cell') is not None else ''
        lines.append('%s:%s%d:%d: %s %s' % (path, cell, x['location']['row'], x['location']['column'], x['code'],
                                            x['message']))
    return lines


pool = []
outs = sorted(glob.glob(os.path.join(args.baseline, '*.out')) + [
    f for f in glob.glob(os.path.join(args.baseline, '*.json')) if not os.path.basename(f).startswith('score_')])
for f in outs:
    repo = os.path.splitext(os.path.basename(f))[0]
    for l in concise(f):
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
T = args.target
tot = len(pool)
rng = random.Random(args.seed)
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
with open(args.out, 'w') as f:
    for i, s in enumerate(sample):
        f.write('%d\t%s\t%s\n' % (i, s[0], s[5]))
