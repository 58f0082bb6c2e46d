"""MPI / accrete and GA / accrete per cell and build (A: tile generation
inlined per implementation; B: one out-of-line make_tile), two runs each."""
import glob, json, os
d = os.path.dirname(os.path.abspath(__file__))
rows = {}
for f in sorted(glob.glob(d + '/*.json')):
    mpi, np_, v, i = os.path.basename(f)[:-5].split('_')
    j = json.load(open(f))
    for c in j['cells']:
        if c['impl'] == 'accrete' or 'acc_over_accrete' not in c:
            continue
        for ph in ('acc', 'get'):
            rows.setdefault((mpi, np_[2:], c['distribution'], c['impl'], ph), {}).setdefault(v, []).append(c[ph + '_over_accrete'])
print('| MPI | P | distribution | peer | phase | A: peer / accrete | B: peer / accrete |')
print('| --- | --- | --- | --- | --- | --- | --- |')
for (mpi, p, dist, impl, ph), by in sorted(rows.items()):
    f = lambda v: ', '.join('%.2f' % x for x in by.get(v, []))
    print(f'| {"Open MPI" if mpi == "ompi" else "MPICH"} | {p} | {dist} | {impl} | {ph} | {f("A")} | {f("B")} |')
