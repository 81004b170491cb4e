"""What one launch costs on an OpenCL device, apart from the kernel's work: an empty kernel's profiling
events (START -> END, and QUEUED/SUBMIT -> START), with no buffer, one small buffer and one large buffer
as arguments, 1 and 2048 work-groups of 128; and two launches back to back inside one pair of markers
(the gap between them). Median of 200 after 20, plain pyopencl (no qkgen code on the launch path).
argv[1]: the device, by name substring (default NVIDIA)."""
import sys
import numpy as np
import pyopencl as cl

name = sys.argv[1] if len(sys.argv) > 1 else "NVIDIA"
dev = next(d for p in cl.get_platforms() for d in p.get_devices() if name in d.name or name in p.name)
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = """
__kernel void none(void) {}
__kernel void one(__global uint* a) { if (get_global_id(0) == (uint)-1) a[0] = 1u; }
"""
prg = cl.Program(ctx, src).build()
none, one = cl.Kernel(prg, "none"), cl.Kernel(prg, "one")
small = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
large = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 30)
print(f"device {dev.name} | driver {dev.driver_version} | {dev.platform.version}")


def stats(kernel, args, groups):
    times = []
    for i in range(220):
        e = kernel(q, (groups * 128,), (128,), *args)
        e.wait()
        if i >= 20:
            p = e.profile
            times.append(((p.end - p.start) / 1e3, (p.start - p.submit) / 1e3))
    run, wait = np.median(np.array(times), axis=0)
    return run, wait


for label, kernel, args in (("no args", none, ()), ("4 KB buffer", one, (small,)),
                            ("1 GB buffer", one, (large,))):
    for groups in (1, 2048):
        run, wait = stats(kernel, args, groups)
        print(f"{label:<12} {groups:>5} groups: START->END {run:6.2f} us  SUBMIT->START {wait:6.2f} us")

# two launches: the first's START to the second's END, and the first's END to the second's START
spans = []
for i in range(220):
    e1 = one(q, (2048 * 128,), (128,), large)
    e2 = one(q, (2048 * 128,), (128,), large)
    e2.wait()
    if i >= 20:
        spans.append(((e2.profile.end - e1.profile.start) / 1e3, (e2.profile.start - e1.profile.end) / 1e3))
total, gap = np.median(np.array(spans), axis=0)
print(f"two launches back to back: first START -> second END {total:6.2f} us, gap END -> START {gap:6.2f} us")
