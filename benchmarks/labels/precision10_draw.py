# precision10: the stratified draw of benchmarks/labels/precision10_sample.tsv (pool: baseline 5447ca9 findings in
# /work/base_out_5447ca9/*.old on lines no label set covers; per rule max(4, round(215 * share)), round-robin over
# repositories in a random.Random(10) order). Writes sample.txt (draw#, repo, concise finding) in the working directory.
import glob, os, re, random, collections, csv
lab=set()
for f in glob.glob('/work/main/benchmarks/labels/*.tsv'):
    if 'precision_audit' in f: continue
    for r in csv.DictReader(open(f),delimiter='\t'):
        lab.add((r['repo'].replace('/','+'),r['path'],r['line']))
pool=[]
for f in sorted(glob.glob('/work/base_out_5447ca9/*.old')):
    repo=os.path.basename(f)[:-4]
    for l in open(f):
        l=l.rstrip('\n')
        m=re.match(r'(.*?):(cell \d+:)?(\d+):(\d+): (GPU\d+) ',l)
        if not m: continue
        path,cell,line,col,rule=m.groups()
        if (repo,path,line) in lab and not cell: continue
        pool.append((repo,path,cell or '',int(line),rule,l))
print(len(pool))
byrule=collections.defaultdict(list)
for p in pool: byrule[p[4]].append(p)
T=215; tot=len(pool)
rng=random.Random(10)
sample=[]
for rule,items in sorted(byrule.items()):
    n=min(len(items),max(4,round(T*len(items)/tot)))
    byrepo=collections.defaultdict(list)
    for it in items: byrepo[it[0]].append(it)
    repos=list(byrepo); rng.shuffle(repos)
    for r in repos: rng.shuffle(byrepo[r])
    got=[]
    while len(got)<n:
        for r in repos:
            if byrepo[r] and len(got)<n: got.append(byrepo[r].pop())
    sample+=got
print(len(sample), collections.Counter(s[4] for s in sample))
print(len(set(s[0] for s in sample)))
with open('sample.txt','w') as f:
    for i,s in enumerate(sample): f.write('%d\t%s\t%s\n'%(i,s[0],s[5]))
