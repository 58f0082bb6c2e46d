#!/usr/bin/env python3
"""The plain-MPI dist_array peer with its window's elements on a cache
line (after) against the build before (where Open MPI put them, 8 bytes
past a page): HF proxy and matmul under Open MPI at P = 1 and 2, 3
interleaved runs. Per cell: the MPI peer's time before and after (medians),
and the ratio MPI / accrete of each build (median of the runs; above 1:
accrete faster). Run in openmpi/ or mpich/ (python3 ../table.py)."""
import collections, glob, json, re, statistics as st

cells = collections.defaultdict(lambda: collections.defaultdict(list))
bad = []
for f in sorted(glob.glob('*_r*.json')):
    m = re.match(r'(hf|matmul)_(small|paper)_P(\d)_(before|after)_r\d+\.json$', f)
    j = json.load(open(f))
    bench, preset, p, v = m.group(1), m.group(2), int(m.group(3)), m.group(4)
    by = collections.defaultdict(dict)
    for c in j['cells']:
        if c['impl'] in ('accrete', 'mpi') and not c.get('verified', False):
            bad.append(f)
        key = (c['distribution'],) + ((c['op'],) if bench == 'matmul' else ())
        by[key][c['impl']] = c
    for key, im in by.items():
        if 'mpi' not in im or 'accrete' not in im:
            continue
        phases = ('acc', 'get') if bench == 'hf' else ('seconds',)
        for ph in phases:
            t = (lambda c: c[ph + '_s']) if bench == 'hf' else (lambda c: c['seconds'])
            name = f"{'HF proxy' if bench == 'hf' else 'matmul'} {preset} {' '.join(key)}" + (f' {ph}' if bench == 'hf' else '')
            cells[(name, p)][v].append((t(im['mpi']), t(im['accrete'])))
print('| cell | P | MPI peer before [s] | MPI peer after [s] | MPI / accrete, before | MPI / accrete, after | runs |')
print('| --- | --- | ---: | ---: | ---: | ---: | ---: |')
for (name, p) in sorted(cells):
    c = cells[(name, p)]
    if 'before' not in c or 'after' not in c:
        continue
    med = lambda xs: st.median(xs)
    b, a = c['before'], c['after']
    print(f'| {name} | {p} | {med([x[0] for x in b]):.4g} | {med([x[0] for x in a]):.4g} | '
          f'{med([x[0] / x[1] for x in b]):.2f} | {med([x[0] / x[1] for x in a]):.2f} | {min(len(a), len(b))} |')
if bad:
    print('unverified results in:', ', '.join(sorted(set(bad))))
