"""One row per cell of run.sh's A/B: accrete's rate over the MPI table's in
the same run, median (range, runs) for each build."""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for f in glob.glob(d + '/*.json'):
    build, mpi, p, _ = os.path.basename(f)[:-5].split('_')
    res = json.load(open(f))['results']
    base = {x['value_bytes']: x for x in res if x['table'] == 'mpi'}
    for x in res:
        if x['table'] not in ('rpc', 'lz'):
            continue
        for phase, key in (('insert', 'inserts_per_s'), ('find', 'finds_per_s')):
            ref = base[x['value_bytes']][key]
            if ref:
                rows.setdefault((mpi, p[1:], x['table'], x['value_bytes'], phase), {}).setdefault(build, []).append(
                    x[key] / ref)


def cell(v):
    return '%.2f (%.2f-%.2f, %d)' % (statistics.median(v), min(v), max(v), len(v)) if v else '-'


print('| MPI | P | table | value (B) | phase | before (range, runs) | after (range, runs) |')
print('|---|---|---|---|---|---|---|')
for k in sorted(rows):
    print('| %s | %s | %s | %s | %s | %s | %s |' % (k + (cell(rows[k].get('base', [])), cell(rows[k].get('new', [])))))
