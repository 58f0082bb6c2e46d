#!/usr/bin/env python3
"""Table of the small-preset sweep with aligned baselines (bench/hessian
README, "The small presets with aligned baselines"): medians over runs of
each implementation's time (per round for `small100`, 100 rounds of
`small`) and of the per-run ratio best plain-MPI baseline / packets. Run
from this directory."""
import glob, json, statistics as st
from collections import defaultdict

R = defaultdict(list)
for f in sorted(glob.glob('*_run*.json')):
    mpi, cfg, p, _ = f[:-5].split('_')
    R[(cfg, mpi, int(p[1:]))].append(json.load(open(f)))

names = ['accrete_packets', 'mpi_accumulate', 'mpi_alltoallv', 'mpi_shared_memory', 'local_apply_ref']
print('| preset | MPI | P | runs | packets [ms] | MPI_Accumulate [ms] | Alltoallv [ms] | MPI-3 shm [ms] | local-apply ref [ms] '
      '| best baseline / packets, per run | median | packets / bound | checksums |')
print('| --- | --- | --- | --- | ' + '---: | ' * 5 + '--- | ---: | ---: | --- |')
order = {'tiny': 0, 'small': 1, 'small100': 2}
for k in sorted(R, key=lambda k: (order[k[0]], k[1] != 'openmpi', k[2])):
    ds = R[k]
    def T(d, n):
        return next((r['T'] for r in d['results'] if r['name'] == n), None)
    cols = []
    for n in names:
        v = [T(d, n) for d in ds if T(d, n) is not None]
        cols.append(f'{1e3 * st.median(v):.3f}' if v else '—')
    per = [min(T(d, n) for n in names[1:4] if T(d, n) is not None) / T(d, 'accrete_packets') for d in ds]
    bound = st.median(T(d, 'accrete_packets') / d['physical_bound_T'] for d in ds)
    ok = all(r.get('checksum_ok', True) for d in ds for r in d['results'] if r['name'] != 'compute_only')
    label = {'tiny': 'tiny', 'small': 'small', 'small100': 'small (100 rounds, per round)'}[k[0]]
    mpi = {'mpich': 'MPICH', 'openmpi': 'Open MPI'}[k[1]]
    print(f'| {label} | {mpi} | {k[2]} | {len(ds)} | ' + ' | '.join(cols) +
          f' | {", ".join(f"{x:.2f}" for x in per)} | {st.median(per):.2f} | {bound:.2f} | {"ok" if ok else "FAILED"} |')
