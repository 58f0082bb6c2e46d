#!/usr/bin/env python3
"""A/B of the dist_array direct-path prefetch (bench/hf_proxy/README.md):
accrete's time before -> after and plain MPI / accrete in each build,
medians over the rounds (each run interleaves accrete and MPI)."""
import collections, glob, json, os, re, statistics as st
d = os.path.dirname(os.path.abspath(__file__))
acc = collections.defaultdict(list); ratio = collections.defaultdict(list)
for f in glob.glob(os.path.join(d, "*.json")):
    m = re.match(r"(hf|mm)_(\w+?)_(openmpi|mpich)_P(\d)_(before|after)_r(\d)\.json", os.path.basename(f))
    b, preset, mpi, p, v, r = m.groups()
    j = json.load(open(f))
    by = collections.defaultdict(dict)
    for c in j["cells"]:
        assert c.get("verified", False) or c["impl"] == "ga", f
        key = (c["distribution"],) + ((c["op"],) if b == "mm" else ())
        by[key][c["impl"]] = c
    for key, impls in by.items():
        phases = ("acc", "get") if b == "hf" else ("seconds",)
        for ph in phases:
            t = lambda i: impls[i][ph + "_s"] if b == "hf" else impls[i]["seconds"]
            k = ("hf_proxy" if b == "hf" else "matmul", preset, mpi, int(p), " ".join(key), ph if b == "hf" else "")
            acc[k + (v,)].append(t("accrete")); ratio[k + (v,)].append(t("mpi") / t("accrete"))
print("| bench | preset | MPI | P | cell | phase | accrete before -> after [ms] | MPI / accrete before | after |")
print("| --- | --- | --- | --- | --- | --- | --- | ---: | ---: |")
for k in sorted({k[:-1] for k in acc}):
    b, a = k + ("before",), k + ("after",)
    if a not in acc or b not in acc: continue
    mb, ma = st.median(ratio[b]), st.median(ratio[a])
    f = lambda x: f"**{x:.2f}**" if x < 1 else f"{x:.2f}"
    print(f"| {k[0]} | {k[1]} | {'Open MPI' if k[2] == 'openmpi' else 'MPICH'} | {k[3]} | {k[4]} | {k[5]} | {1e3*st.median(acc[b]):.1f} -> {1e3*st.median(acc[a]):.1f} | {f(mb)} | {f(ma)} |")
