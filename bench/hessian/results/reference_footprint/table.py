#!/usr/bin/env python3
"""Table of the reference-footprint experiment (bench/hessian README,
"Aligned baselines"): the local-apply reference adding every owner's part
into one private array (`one`, as built) or each owner's part into its own
(`spread`, REF_SPREAD=1 in a build not kept). Run from this directory."""
import glob, json, statistics as st
from collections import defaultdict

R = defaultdict(list)
for f in sorted(glob.glob('*_run*.json')):
    mpi, p, v, _ = f[:-5].split('_')
    d = json.load(open(f))
    T = {r['name']: r['T'] for r in d['results']}
    R[(mpi, p, v)].append((T['accrete_packets'], T['local_apply_ref'], d['physical_bound_T']))
print('| MPI | P | reference array | runs | packets [s] | local-apply ref [s] | bound [s] | packets / ref | ref / bound |')
print('| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |')
for k in sorted(R, key=lambda k: (k[0] != 'mpich', k[1], k[2])):
    x = R[k]
    m = lambda i: st.median(r[i] for r in x)
    mpi = {'mpich': 'MPICH', 'openmpi': 'Open MPI'}[k[0]]
    print(f'| {mpi} | {k[1][1:]} | {"one per owner" if k[2] == "spread" else k[2]} | {len(x)} | {m(0):.4f} | {m(1):.4f} | {m(2):.4f} | '
          f'{st.median(r[0] / r[1] for r in x):.2f} | {st.median(r[1] / r[2] for r in x):.2f} |')
