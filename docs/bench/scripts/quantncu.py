"""Nsight Compute's view of the device quantizer kernels alone (issue 13 item 5): each case of a
quantsweep.py JSON list is built as a Plan, launched once to compile and warm, then once more between
cudaProfilerStart / Stop, so `ncu --profile-from-start off` sees exactly one launch per case.
argv[1]: JSON list of cases [fmt, opts, dtype, op, overrides] (quantsweep.py's form).
Run: ncu --profile-from-start off --section SpeedOfLight ... python3 quantncu.py cases.json"""
import json, sys
import torch, qkgen
from qkgen.backends import open_device
from qkgen.runtime.plan import Plan

dev = open_device("cuda", 0)
N, K = 4096, 14336


def sizes_of(fmt, qt, n):  # as quantsweep.py
    if fmt.inline:
        return {"nblocks": n // fmt.block, "code_bytes": n // fmt.block * fmt.block_bytes}
    return {"n": n, "units": -(-n // qt.blocksize), "code_bytes": -(-n * fmt.low_bits // 8)}


TD = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
torch.manual_seed(0)
cudart = torch.cuda.cudart()
for fmt_name, opts, dtype, op, ov in json.load(open(sys.argv[1])):
    fmt = qkgen.formats.get(fmt_name)
    x = torch.randn(N, K, device="cuda").to(TD[dtype])
    want = qkgen.quantize(x, fmt_name, **opts)
    kw = {"dtype": dtype, **({"blocksize": want.blocksize} if not fmt.inline else {}), **ov}
    plan = Plan.make(dev, op, fmt, **kw)
    sz = sizes_of(fmt, want, N * K)
    outs = plan.outputs(sz, like=x)
    args = {"x": x, **{k: b for k, (b, _, _) in outs.items()}}
    plan.launch(args, sz)
    torch.cuda.synchronize()
    cudart.cudaProfilerStart()
    plan.launch(args, sz)
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()
    print(f"profiled {plan.ks.name} ({fmt_name} {dtype} {op} {json.dumps(ov)})", flush=True)
    del x, outs, args
    torch.cuda.empty_cache()
