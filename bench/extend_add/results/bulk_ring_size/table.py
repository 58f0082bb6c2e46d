"""Table of the bulk ring A/B (run.sh; `table.py split` for split/run.sh, whose configurations are
A: HEAD, B: the small ring taking messages up to 32 KiB, C: HEAD with a 2 MiB bulk ring): per MPI and
cell, median (range) over rounds.
extend-add: best plain-MPI variant / accrete variant (above 1: accrete faster) and the
`send` step [ms]; fe_assembly: accrete's later and first rounds over the bound."""
import collections, glob, json, os, re, statistics as S, sys

here = os.path.dirname(os.path.abspath(__file__))
d = os.path.join(here, sys.argv[1]) if len(sys.argv) > 1 else here
cells = collections.defaultdict(list)
for f in glob.glob(d + "/ea_*.json"):
    cfg, mpi = re.search(r"ea_(\w+?)_(openmpi|mpich)_r\d+\.json", f).groups()
    for c in json.load(open(f))["cases"]:
        v = c["variants"]
        best = min(v["mpi_alltoallv"]["median_s"], v["mpi_p2p"]["median_s"])
        for var in ("accrete_rpc", "upcxx_rpc", "accrete_put"):
            cells[(mpi, f"n {c['n']} {var}", cfg)].append(best / v[var]["median_s"])
            if var != "accrete_put":
                cells[(mpi, f"n {c['n']} {var} send [ms]", cfg)].append(v[var]["profile_ms"]["send"])
for f in glob.glob(d + "/fe_*.json"):
    cfg, mpi = re.search(r"fe_(\w+?)_(openmpi|mpich)_r\d+\.json", f).groups()
    s = json.load(open(f))["summary"]
    cells[(mpi, "fe small slab later / bound", cfg)].append(s["accrete_later_over_bound"])
    cells[(mpi, "fe small slab first / bound", cfg)].append(s["accrete_first_over_bound"])
cfgs = sorted({k[2] for k in cells}, key=lambda c: (len(c), c))  # 2M before 8M; A, B, C
print("| MPI | cell | " + " | ".join(cfgs) + " |")
print("| --- | --- | " + " | ".join("---" for _ in cfgs) + " |")
for key in sorted({k[:2] for k in cells}):
    row = []
    for c in cfgs:
        x = cells.get(key + (c,), [])
        row.append(f"{S.median(x):.2f} ({min(x):.2f}-{max(x):.2f}), {len(x)} runs" if x else "")
    print(f"| {'Open MPI' if key[0] == 'openmpi' else 'MPICH'} | {key[1]} | " + " | ".join(row) + " |")
