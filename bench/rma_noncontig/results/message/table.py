"""Strided cells of bench_rma_noncontig (ACCRETE_NODE_SIZE=1) with the
message path: µs per operation, medians of 7, and derived datatype over
message (above 1: the message is faster). Usage: table.py mpich_node1.json"""
import collections
import json
import sys

rows = collections.OrderedDict()
for r in json.load(open(sys.argv[1]))["rows"]:
    rows.setdefault((r["shape"], r["op"]), {})[r["impl"]] = r["us"]
print("| shape | op | accrete (auto) | forced datatype | forced batched | forced message | MPI derived datatype | datatype / message |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (shape, op), v in rows.items():
    if "acc_message" not in v:
        continue
    print(f"| {shape} | {op} | {v['accrete']:.3g} | {v['acc_datatype']:.3g} | {v['acc_batched']:.3g} | "
          f"{v['acc_message']:.3g} | {v['mpi_dtype']:.3g} | {v['acc_datatype'] / v['acc_message']:.2f} |")
