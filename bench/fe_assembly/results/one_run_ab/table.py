import json, glob, statistics as st, sys
d = sys.argv[1] if len(sys.argv) > 1 else __import__('os').path.dirname(__file__)
rows = {}
for f in sorted(glob.glob(d + '/*.json')):
    name = f.split('/')[-1][:-5]
    pre, part, np, v, i = name.split('_')
    j = json.load(open(f))
    r = j['results']
    rows.setdefault((pre, part, np, v), []).append((st.median(r['accrete']['later_median_s']), st.median(r['bound']['later_median_s']),
        j['summary']['accrete_later_over_bound'], j['summary']['petsc_coo_over_accrete_later'], j['summary']['petsc_coo_later_over_bound'], j['checks_failed']))
print('| cell | build | accrete later [s] | bound later [s] | later / bound | COO / accrete | COO / bound |')
print('| --- | --- | --- | --- | --- | --- | --- |')
for (pre, part, np, v), xs in rows.items():
    f = lambda k, fmt: ', '.join(fmt % x[k] for x in xs)
    print(f'| `{pre}` {part} P = {np[2:]} | {v} | {f(0,"%.4f")} | {f(1,"%.4f")} | {f(2,"%.2f")} | {f(3,"%.2f")} | {f(4,"%.2f")} |', '' if all(x[5]==0 for x in xs) else 'CHECK FAILED')
