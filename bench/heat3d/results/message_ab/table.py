"""Table of message_ab/run.sh: µs of halo exchange per step (median over
rounds of each run's median of 5) and the best plain-MPI variant's time over
accrete's, median and range over rounds."""
import glob
import json
import os
import statistics

here = os.path.dirname(os.path.abspath(__file__))
print("| halo time | accrete's choice | rounds | best MPI | (3) acc_get | (4) acc_put | best MPI / (3) | best MPI / (4) |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
for sync, label in ((0, "incl. wait"), (1, "exchange only")):
    for m, name in (("datatype", "derived datatypes (before)"), ("auto", "one message per face")):
        runs = []
        for f in sorted(glob.glob(f"{here}/heat3d_sync{sync}_{m}_r*.json")):
            j = json.load(open(f))
            assert j["identical"], f
            runs.append({v["name"]: v["halo_s"] * 1e6 / j["steps"] for v in j["variants"]})
        if not runs:
            continue
        best = [min(r["sendrecv"], r["mpi_rget"]) for r in runs]
        med = lambda k: statistics.median(r[k] for r in runs)
        def ratio(k):
            x = [b / r[k] for b, r in zip(best, runs)]
            return f"{statistics.median(x):.2f} ({min(x):.2f}-{max(x):.2f})"
        print(f"| {label} | {name} | {len(runs)} | {statistics.median(best):.1f} | {med('acc_get'):.1f} | "
              f"{med('acc_put'):.1f} | {ratio('acc_get')} | {ratio('acc_put')} |")
