"""Markdown table of a gemv_sweep.py output JSON: python3 sweep_table.py out.json"""
import json
import sys

data = json.load(open(sys.argv[1]))
# older outputs lack the op: argv[2], the cases file, gives it (rows in case order, none failed)
cases = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None
print(f"Copy ceiling in that run: {data['ceiling']:.0f} GB/s.\n")
print("| format | op | M | x | parameters | cold µs | % copy | hot µs | rel. error |")
print("|---|---|---|---|---|---|---|---|---|")
for i, r in enumerate(data["rows"]):
    ov = json.dumps(r["ov"]) if r["ov"] else "{}"
    op = r.get("op") or (cases[i][6].get("op", "gemv") if cases else "?")
    print(f"| {r['fmt']} | {op} | {r['m']} | {r['dtype']} | `{ov}` | {r['cold_us']:.1f} | {r['pct']:.0f}% | {r['hot_us']:.1f} | {r['rel']:.1e} |")
