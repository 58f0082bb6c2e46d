#!/usr/bin/env python3
"""Table of the aligned-baselines A/B (bench/hessian README, "Aligned
baselines"): medians over runs of each implementation's T and of the
per-run ratios, for the build before (baselines' storage where glibc put
it) and after (on a cache line). Run from this directory."""
import glob, json, statistics as st
from collections import defaultdict

runs = defaultdict(list)
for f in sorted(glob.glob('*_run*.json')):
    mpi, p, build, _ = f[:-5].split('_')
    runs[(mpi, p, build)].append(json.load(open(f)))

def T(d, name):
    return next((r['T'] for r in d['results'] if r['name'] == name), None)

names = ['accrete_packets', 'accrete_packets_repro', 'mpi_alltoallv', 'mpi_shared_memory', 'local_apply_ref']
print('| MPI | P | build | runs | packets [s] | repro [s] | Alltoallv [s] | MPI-3 shm [s] | local-apply ref [s] | bound [s] '
      '| packets / bound | packets / ref | best baseline / packets | repro / packets | checksums |')
print('| --- | --- | --- | --- | ' + '---: | ' * 10 + '--- |')
for key in sorted(runs, key=lambda k: (k[0] != 'mpich', k[1], k[2] != 'before')):
    ds = runs[key]
    med = lambda f: st.median(f(d) for d in ds)
    cols = [med(lambda d, n=n: T(d, n)) for n in names]
    bound = med(lambda d: d['physical_bound_T'])
    ratio = lambda num, den: med(lambda d: num(d) / den(d))
    pk = lambda d: T(d, 'accrete_packets')
    best = lambda d: min(T(d, 'mpi_alltoallv'), T(d, 'mpi_shared_memory'))
    ok = all(r['checksum_ok'] for d in ds for r in d['results'] if 'checksum_ok' in r and r['name'] != 'compute_only')
    mpi = {'mpich': 'MPICH', 'openmpi': 'Open MPI'}[key[0]]
    print(f'| {mpi} | {key[1][1:]} | {key[2]} | {len(ds)} | ' + ' | '.join(f'{c:.4f}' for c in cols) +
          f' | {bound:.4f} | {ratio(pk, lambda d: d["physical_bound_T"]):.2f} | {ratio(pk, lambda d: T(d, "local_apply_ref")):.2f}'
          f' | {ratio(best, pk):.2f} | {ratio(lambda d: T(d, "accrete_packets_repro"), pk):.2f} | {"ok" if ok else "FAILED"} |')
