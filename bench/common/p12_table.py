#!/usr/bin/env python3
"""Issue 41's P <= 2 table from bench/common/run_p12.sh's JSON: per cell,
the best plain-MPI baseline's time over accrete's (rates: accrete's over the
baseline's) within one run, median over the runs and their range; bold
below 1. Usage: p12_table.py [results dir]"""
import collections, glob, json, os, re, statistics, sys

here = os.path.dirname(os.path.abspath(__file__))
d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "results", "p12")
cells = collections.defaultdict(list)  # (bench, mpi, P, node, cell) -> [ratio per run]
failed = []


def add(key, ratio):
    cells[key].append(ratio)


for path in sorted(glob.glob(os.path.join(d, "*.json"))):
    m = re.match(r"(.+)_(openmpi|mpich)_P(\d)_node(\w+)_r(\d+)\.json$", os.path.basename(path))
    if not m:
        continue
    name, mpi, p, ns = m.group(1), m.group(2), int(m.group(3)), m.group(4)
    try:
        j = json.load(open(path))
    except ValueError:
        failed.append(path)
        continue
    base = (mpi, p, ns)
    if name == "dht":
        if j.get("wrong_values", 1) != 0:
            failed.append(path)
        res = {(x["table"], x["value_bytes"]): x for x in j["results"]}
        for (table, vb), x in res.items():
            if table not in ("rpc", "lz"):
                continue
            ref = res[("mpi", vb)]
            for op in ("inserts", "finds"):
                add(("dht",) + base + (f"{table} {op[:-1]} {vb} B",), x[op + "_per_s"] / ref[op + "_per_s"])
    elif name.startswith("hf_"):
        preset = name[3:]
        by = collections.defaultdict(dict)
        for c in j["cells"]:
            if c["impl"] in ("accrete", "mpi") and not c.get("verified", False):
                failed.append(path)
            by[c["distribution"]][c["impl"]] = c
        for dist, impls in by.items():
            for ph in ("acc", "get"):
                add(("hf_proxy",) + base + (f"{preset} {dist} {ph}",), impls["mpi"][ph + "_s"] / impls["accrete"][ph + "_s"])
    elif name.startswith("matmul"):
        by = collections.defaultdict(dict)
        for c in j["cells"]:
            if c["impl"] in ("accrete", "mpi") and not c.get("verified", False):
                failed.append(path)
            by[(c["distribution"], c["op"])][c["impl"]] = c
        for (dist, op), impls in by.items():
            add(("matmul",) + base + (f"small {dist} {op}",), impls["mpi"]["seconds"] / impls["accrete"]["seconds"])
    elif name.startswith("heat3d"):
        if not j.get("identical", False):
            failed.append(path)
        v = {x["name"]: x["halo_s"] for x in j["variants"]}
        best = min(v["sendrecv"], v["mpi_rget"])
        for acc in ("acc_get", "acc_put"):
            add(("heat3d",) + base + (f"{acc} {'excl.' if j['sync'] else 'incl.'} wait",), best / v[acc])
    elif name == "extend_add":
        for c in j["cases"]:
            if not c.get("exact", False):
                failed.append(path)
            v = c["variants"]
            best = min(v["mpi_alltoallv"]["median_s"], v["mpi_p2p"]["median_s"])
            for acc in ("accrete_put", "accrete_rpc"):
                add(("extend_add",) + base + (f"n {c['n']} {acc}",), best / v[acc]["median_s"])

print("| bench | MPI | P | node size | cell | best plain MPI / accrete (median) | range | runs |")
print("| --- | --- | --- | --- | --- | ---: | --- | ---: |")
losing = 0
for key in sorted(cells, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
    rs = cells[key]
    med = statistics.median(rs)
    losing += med < 1
    medtxt = f"**{med:.2f}**" if med < 1 else f"{med:.2f}"
    mpi = {"openmpi": "Open MPI", "mpich": "MPICH"}[key[1]]
    print(f"| {key[0]} | {mpi} | {key[2]} | {key[3]} | {key[4]} | {medtxt} | {min(rs):.2f}-{max(rs):.2f} | {len(rs)} |")
print(f"\n{len(cells)} cells, {losing} with a median below 1; runs that failed their checks: {len(set(failed))}")
for f in sorted(set(failed)):
    print("  check failed:", f)
