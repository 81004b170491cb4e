"""Ahead-of-time compile of every generated kernel to Intel GPU machine code, without an Intel GPU.

Intel's offline compiler ocloc (Debian's intel-opencl-icd, with IGC) builds the OpenCL C, and the
SPIR-V that DPC++'s run-time compiler emits for the SYCL source, for dg2 (Arc A, Xe-HPG), pvc (Data
Center Max, Xe-HPC) and tgllp (Iris Xe, Xe-LP). Each zebin's .ze_info gives per kernel the SIMD width,
required sub-group size, GRFs, stack calls and per-thread memory; IGC's log adds "spilled around N".
A problem: a failed build; a required sub-group size the device lacks or other than the rendered
one; a SIMD width other than the required size; sub-group use without a required size.

    python -m qkgen.tools.aot [--sycl] [--device dg2 ...] [--jobs 2]   compile, print the report
    python -m qkgen.tools.aot fetch DIR     apt-get download + dpkg -x intel-opencl-icd into DIR

ocloc is looked for in $QKGEN_INTEL_GPU (the Makefile sets it), <sys.prefix>/intel-gpu, then PATH;
LD_LIBRARY_PATH is set for the ocloc process only and no OpenCL loader ever sees this driver.
Results are cached in the qkgen cache by source hash, device, options and ocloc version.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import cache_dir, load_entry, store_entry, store_file, verify_file, writable_dir
from ..kernels.render import render
from ..kernels.target import PROFILES, Target
from .catalog import variants

# Sub-group sizes each device supports (Intel's per-platform SIMD widths; ocloc rejects others).
DEVICES = {"dg2": (8, 16, 32), "pvc": (16, 32), "tgllp": (8, 16, 32)}
SYCL_PROFILES = ("sycl-intel-gpu", "sycl-intel-gpu-sg32")
SPILL = re.compile(r"kernel (\S+)\s+compiled SIMD(\d+) allocated (\d+) regs and spilled around (\d+)")


def opencl_profiles() -> tuple[Target, ...]:
    """The Intel GPU OpenCL profiles: sub-group 16, and 32 (made here until target.py names it)."""
    base = PROFILES["opencl-intel-gpu"]
    name = f"{base.name}-sg32"
    return base, PROFILES.get(name) or dataclasses.replace(base, name=name, subgroup_size=32)


@dataclass(frozen=True)
class Ocloc:
    exe: Path
    libdir: Path | None
    version: str

    def run(self, args: list[str], cwd: str) -> subprocess.CompletedProcess:
        env, lib = dict(os.environ), [str(self.libdir)] if self.libdir else []
        # for this process only: IGC, the front end and their LLVM
        env["LD_LIBRARY_PATH"] = os.pathsep.join(lib + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
        return subprocess.run([str(self.exe), *args], cwd=cwd, env=env, capture_output=True, text=True,
                              errors="replace", timeout=600)  # fmt: skip


def _candidates() -> list[tuple[Path, Path | None]]:
    roots = [Path(p).resolve() for p in (os.environ.get("QKGEN_INTEL_GPU"), f"{sys.prefix}/intel-gpu") if p]
    out = [(r / "usr/bin/ocloc", next(iter(sorted(r.glob("usr/lib/*/libocloc.so"))), None)) for r in roots]
    out = [(exe, lib.parent if lib else None) for exe, lib in out]
    if shutil.which("ocloc"):
        out.append((Path(shutil.which("ocloc")), None))
    return out


def find_ocloc() -> tuple[Ocloc | None, str]:
    """(ocloc, "") or (None, why it is missing or does not run)."""
    why = []
    for exe, libdir in _candidates():
        if not exe.is_file():
            why.append(f"no {exe}")
            continue
        tool = Ocloc(exe, libdir, "")
        with tempfile.TemporaryDirectory(prefix="qkgen-ocloc-") as tmp:
            r = tool.run(["query", "OCL_DRIVER_VERSION"], tmp)
            ver = Path(tmp, "OCL_DRIVER_VERSION")
            if r.returncode != 0 or not ver.is_file():
                why.append(f"{exe} does not run: {(r.stdout + r.stderr).strip()[-300:]}")
                continue
            igc = next(iter(sorted((libdir or exe.parent).glob("libigc.so*"))), exe)
            version = " ".join(ver.read_text().replace("\0", " ").split())
            return dataclasses.replace(tool, version=f"{version} igc:{igc.stat().st_size}"), ""
    stamp = Path(os.environ.get("QKGEN_INTEL_GPU") or Path(sys.prefix) / "intel-gpu") / "FETCH"
    if stamp.is_file():
        why.append(f"make's fetch said: {stamp.read_text().strip()}")
    return None, "ocloc (Intel's offline compiler, Debian's intel-opencl-icd) not found: " + "; ".join(why)


@dataclass
class Result:
    label: str  # source file name (OpenCL) or "<profile> part N" (SYCL)
    profiles: tuple[str, ...]  # the profiles whose rendering compiled to exactly this source
    device: str
    ok: bool
    log: str
    kernels: dict = field(default_factory=dict)  # name -> simd, reqd, grf, stack, mem, spill
    cached: bool = False
    expect_sg: int = 0  # the sub-group size the source was rendered for
    uses_sg: tuple[str, ...] = ()  # kernels that use sub-group operations

    def problems(self) -> list[str]:
        if not self.ok:
            return [f"{self.device} {self.label} ({', '.join(self.profiles)}): failed:\n{self.log[-3000:]}"]
        out, sizes = [], DEVICES[self.device]
        for name, k in self.kernels.items():
            where = f"{self.device} {name} ({', '.join(self.profiles)})"
            if k.get("reqd"):
                if k["reqd"] not in sizes:
                    out.append(f"{where}: required sub-group size {k['reqd']} is not one of {sizes}")
                if k["reqd"] != self.expect_sg:
                    out.append(f"{where}: requires sub-group {k['reqd']}, rendered for {self.expect_sg}")
                if k.get("simd") != k["reqd"]:
                    out.append(f"{where}: compiled SIMD{k.get('simd')}, required sub-group {k['reqd']}")
            elif name in self.uses_sg:
                out.append(f"{where}: uses sub-groups without a required size (compiled SIMD{k.get('simd')})")
        return out


def ze_info(binary: bytes) -> str:
    """The .ze_info section (YAML) of a zebin ELF."""
    shoff, = struct.unpack_from("<Q", binary, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", binary, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", binary, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx][4]
    for name, _, _, _, off, size in secs:
        if binary[strtab + name : binary.index(b"\0", strtab + name)] == b".ze_info":
            return binary[off : off + size].decode(errors="replace")
    return ""


def parse_ze_info(text: str) -> dict[str, dict]:
    """Per kernel: simd, reqd (intel_reqd_sub_group_size), grf, stack (has stack calls) and mem:
    bytes per per-thread memory buffer usage (private_space: arrays IGC keeps in memory, per work-item
    on dg2; single_space: private and spills in one scratch, per hardware thread; spill_fill_space)."""
    kernels, cur, section, usage = {}, None, "", None
    for line in text.splitlines():
        if line and not line[0].isspace():
            section, cur = line.split(":")[0], None
        elif section == "kernels" and line.startswith("  - name:"):
            name = line.split(":", 1)[1].strip()  # IGC adds an empty Intel_Symbol_Table_Void_Program
            cur = None if name.startswith("Intel_Symbol_Table") else kernels.setdefault(name, {"mem": {}})
        elif cur is not None:
            key, _, val = line.strip().lstrip("- ").partition(":")
            val = val.strip()
            if key == "has_stack_calls":
                cur["stack"] = val == "true"
            elif key in ("simd_size", "grf_count", "intel_reqd_sub_group_size"):
                cur[{"simd_size": "simd", "grf_count": "grf"}.get(key, "reqd")] = int(val)
            elif key == "usage":
                usage = val
            elif key == "size" and usage:
                cur["mem"][usage] = cur["mem"].get(usage, 0) + int(val)
                usage = None
    return kernels


def compile_one(tool: Ocloc, data: bytes, device: str, options: str, spirv: bool = False) -> dict:
    """Build one OpenCL C source or SPIR-V module for one device: {ok, log, kernels, cached}."""
    key = hashlib.sha256(b"\0".join([data, device.encode(), options.encode(), tool.version.encode(),
                                     b"spirv" if spirv else b"cl", b"aot-3"])).hexdigest()[:32]  # fmt: skip
    path = cache_dir("aot", key[:2], f"{key}.json")
    if (hit := load_entry(path, key)) is not None:
        return {**json.loads(hit), "cached": True}
    with tempfile.TemporaryDirectory(prefix="qkgen-aot-") as tmp:
        src = Path(tmp, "k.spv" if spirv else "k.cl")
        src.write_bytes(data)
        args = ["compile", "-file", str(src), "-device", device, "-out_dir", tmp, "-output", "k", "--format",
                "zebin", *(["-spirv_input"] if spirv else []), *(["-options", options] if options else [])]
        r = tool.run(args, tmp)
        bins = sorted(Path(tmp).glob("k*.bin"))
        log = (r.stdout + r.stderr).strip()
        ok = r.returncode == 0 and bool(bins) and "Build succeeded" in log
        kernels = parse_ze_info(ze_info(bins[0].read_bytes())) if ok else {}
    for name, simd, regs, spilled in SPILL.findall(log):
        kernels.setdefault(name, {"mem": {}}).update(spill=int(spilled), spill_simd=int(simd), regs=int(regs))
    out = {"ok": ok, "log": log, "kernels": kernels}
    if ok:  # failures are rebuilt every time: they must be seen
        store_entry(path, json.dumps(out).encode(), key)
    return {**out, "cached": False}


def opencl_options(target: Target, device: str) -> str:
    """The options qkgen's OpenCL backend passes (backends/opencl.py), with CL2.0 for CL3.0 on pvc:
    this IGC's own opencl-c.h fails under CL3.0 for pvc (image block I/O without __opencl_c_images),
    and without -cl-std (C 1.2) the integer dot product built-ins are not declared."""
    std = re.search(r"OpenCL C (\d)\.(\d)", target.lang)
    ver = "2.0" if std and device == "pvc" and std[1] == "3" else std and f"{std[1]}.{std[2]}"
    opts = [f"-cl-std=CL{ver}"] if std and int(std[1]) >= 2 else []
    return " ".join(opts + ["-cl-fp32-correctly-rounded-divide-sqrt"])


def _body(source: str) -> str:
    return source.split("*/", 1)[1] if source.startswith("/*") else source  # the header names the target


def opencl_units(targets=None, only=None) -> list[dict]:
    """One unit per distinct kernel source over the profiles (a kernel without sub-groups renders
    the same for 16 and 32 and is compiled once). `only`: a predicate on variant dicts."""
    units: dict[str, dict] = {}
    for t in targets or opencl_profiles():
        for v in (dict(v) for v in variants(None) if not only or only(v)):
            op, fmt = v.pop("op"), v.pop("format")
            ks = render(op, fmt, t, **v)
            sg = (ks.name,) if "sub_group" in _body(ks.source) else ()
            u = units.setdefault(_body(ks.source), dict(label=ks.filename, source=ks.source, profiles=[], target=t,
                                                        uses_sg=sg, op=op, format=fmt, params=v))  # v: the rest
            u["profiles"].append(t.name)
    return list(units.values())


def compile_units(tool: Ocloc, units: list[dict], device: str, jobs: int = 2) -> list[Result]:
    def one(u):
        spirv = "spirv" in u
        r = compile_one(tool, u["spirv"] if spirv else u["source"].encode(), device,
                        "" if spirv else opencl_options(u["target"], device), spirv)  # fmt: skip
        return Result(u["label"], tuple(u["profiles"]), device, r["ok"], r["log"], r["kernels"], r["cached"],
                      u["target"].subgroup_size, tuple(u["uses_sg"]))  # fmt: skip

    with ThreadPoolExecutor(max(1, jobs)) as ex:
        return list(ex.map(one, units))


# ---- SYCL: SPIR-V from DPC++'s run-time compiler (syclex::compile -> object bundle -> SYCLBIN) ----

_SPIRV_TOOL = r"""// qkgen: SYCL source -> SYCLBIN of an object bundle (its IR modules are spir64 SPIR-V)
#include <sycl/sycl.hpp>
#include <fstream>
namespace syclex = sycl::ext::oneapi::experimental;
int main(int argc, char **argv) {
  std::ifstream in(argv[1]);
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), log;
  std::vector<std::string> opts(argv + 3, argv + argc);
  try {
    for (auto &dev : sycl::device::get_devices()) {
      if (!dev.ext_oneapi_can_build(syclex::source_language::sycl)) continue;
      sycl::context ctx{dev};
      auto kb = syclex::create_kernel_bundle_from_source(ctx, syclex::source_language::sycl, src);
      auto obj = syclex::compile(kb, std::vector<sycl::device>{dev},
                                 syclex::properties{syclex::build_options{opts}, syclex::save_log{&log}});
      std::vector<char> bytes = obj.ext_oneapi_get_content();
      std::ofstream(argv[2], std::ios::binary).write(bytes.data(), bytes.size());
      std::cerr << "device: " << dev.get_info<sycl::info::device::name>() << "\n" << log;
      return 0;
    }
    std::cerr << "no SYCL device can build SYCL source (kernel_compiler)\n";
    return 3;
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n" << log;
    return 1;
  }
}
"""


def spirv_tool() -> Path:
    """The small SYCL host program above, built once with the system C++ against intel-sycl-rt."""
    from ..backends.sycl_native import SyclError, _compiler, _find_sycl

    inc, libsycl, rt = _find_sycl()
    cxx = _compiler()
    key = hashlib.sha256("\0".join([_SPIRV_TOOL, rt, str(libsycl.resolve()), cxx]).encode()).hexdigest()[:16]
    folder, _ = writable_dir("aot")
    exe = folder / f"qk_spirv-{key}"
    if verify_file(exe, key):
        return exe
    with tempfile.TemporaryDirectory(prefix="qkgen-aot-") as tmp:
        Path(tmp, "t.cpp").write_text(_SPIRV_TOOL)
        cmd = [cxx, "-std=c++17", "-O1", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING", f"-I{inc}", "t.cpp", "-o",
               "t", str(libsycl), f"-Wl,-rpath,{libsycl.parent}"]  # fmt: skip
        r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if r.returncode:
            raise SyclError(f"building the SPIR-V tool failed:\n{' '.join(cmd)}\n{r.stderr}")
        os.replace(Path(tmp, "t"), exe)
    store_file(exe, key)
    return exe


def syclbin_ir_modules(blob: bytes) -> list[tuple[int, bytes]]:
    """(IR type, bytes) of every IR module in a SYCLBIN (type 0: SPIR-V), inside its offload
    wrapper or bare. Layout: sycl/doc/design/SYCLBINDesign.md (version 1)."""
    at = blob.find(struct.pack("<I", 0x53594249))  # "SYBI"
    if at < 0:
        raise ValueError("not a SYCLBIN")
    _, ver, n_abs, n_ir, n_nat = struct.unpack_from("<5I", blob, at)
    meta_size, _bin_size = struct.unpack_from("<2Q", blob, at + 24)
    heads = at + 56 + 32 * n_abs
    meta = (heads + 32 * (n_ir + n_nat) + 7) // 8 * 8
    data = (meta + meta_size + 7) // 8 * 8
    out = []
    for i in range(n_ir):
        mo, ms, bo, bs = struct.unpack_from("<4Q", blob, heads + 32 * i)
        kind = re.search(rb"type=1\|(\d+)", blob[meta + mo : meta + mo + ms])
        out.append((int(kind[1]) if kind else -1, blob[data + bo : data + bo + bs]))
    return out


def build_spirv(source: str) -> list[bytes]:
    """The SPIR-V modules DPC++'s kernel_compiler emits for `source` (it splits kernels by their
    requirements: sub-group size, aspects); cached by source hash and runtime version."""
    import importlib.metadata as md

    from ..backends import icd

    icd.register_runtimes()  # qkgen's own CPU runtime registration: the kernel_compiler needs a device
    key = hashlib.sha256((md.version("intel-sycl-rt") + "\0" + source).encode()).hexdigest()[:32]
    path = cache_dir("aot", "spirv", f"{key}.json")
    if (hit := load_entry(path, key)) is not None:
        return [bytes.fromhex(m) for m in json.loads(hit)["spirv"]]
    tool = spirv_tool()
    with tempfile.TemporaryDirectory(prefix="qkgen-aot-") as tmp:
        Path(tmp, "k.cpp").write_text(source)
        r = subprocess.run([str(tool), "k.cpp", "k.syclbin"], cwd=tmp, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"DPC++ kernel_compiler failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
        mods = syclbin_ir_modules(Path(tmp, "k.syclbin").read_bytes())
    spv = [m for kind, m in mods if kind == 0 and m[:4] == struct.pack("<I", 0x07230203)]
    if not spv or len(spv) != len(mods):
        raise RuntimeError(f"expected SPIR-V modules in the object bundle, IR types: {[k for k, _ in mods]}")
    store_entry(path, json.dumps({"spirv": [m.hex() for m in spv]}).encode(), key)
    return spv


def sycl_units(per_module: int = 40, jobs: int = 2) -> list[dict]:
    """qkgen's SYCL kernels for the Intel GPU profiles as SPIR-V modules of up to `per_module`
    kernels each (one run-time compile parses the SYCL headers for ~2 s: batching pays)."""
    seen, parts = set(), []
    for name in SYCL_PROFILES:
        t, todo = PROFILES[name], []
        for v in variants(None):
            v = dict(v)
            ks = render(v.pop("op"), v.pop("format"), t, **v)
            if _body(ks.source) not in seen:  # identical in the other profile: compiled once
                seen.add(_body(ks.source))
                todo.append(ks)
        for i in range(0, len(todo), per_module):
            parts.append((t, i // per_module, todo[i : i + per_module]))

    def one(part):
        t, n, kss = part
        incl = dict.fromkeys(ln for ks in kss for ln in ks.source.splitlines() if ln.startswith("#include"))
        src = "\n".join([*incl, *(f"namespace qk_{i} {{\n{ks.source}}}" for i, ks in enumerate(kss))])
        sg = [f"__sycl_kernel_{ks.name}" for ks in kss if "sub_group" in _body(ks.source)]
        return [{"label": f"{t.name} part {n + 1} module {i + 1}", "spirv": m, "target": t,
                 "profiles": [t.name], "uses_sg": sg} for i, m in enumerate(build_spirv(src))]  # fmt: skip

    with ThreadPoolExecutor(max(1, jobs)) as ex:
        return [u for us in ex.map(one, parts) for u in us]


def report(results: list[Result]) -> str:
    """Per device: builds, kernels by SIMD width, stack calls, spills and per-thread memory; then
    every kernel that spills, calls or keeps memory per thread."""
    lines = []
    for dev in dict.fromkeys(r.device for r in results):
        rs = [r for r in results if r.device == dev]
        ks = [(r, n, k) for r in rs for n, k in r.kernels.items()]
        count = lambda f: sum(bool(f(k)) for _, _, k in ks)  # noqa: E731
        simd = {s: count(lambda k: k.get("simd") == s) for s in sorted({k.get("simd", 0) for _, _, k in ks})}
        mem = {u: count(lambda k: u in k["mem"]) for u in sorted({u for _, _, k in ks for u in k["mem"]})}
        fails, hits = sum(not r.ok for r in rs), sum(r.cached for r in rs)
        lines.append(f"{dev}: {len(rs)} builds ({fails} failed, {hits} cached), {len(ks)} kernels; SIMD "
                     + ", ".join(f"{s}: {c}" for s, c in simd.items())
                     + f"; {count(lambda k: k.get('spill'))} spill registers, "
                     f"{count(lambda k: k.get('stack'))} stack calls; per-thread memory: "
                     + (", ".join(f"{u} {c}" for u, c in mem.items()) or "none"))
        for r, n, k in ks:
            if k.get("spill") or k.get("stack") or k.get("mem"):
                mem = " ".join(f"{u}={b}" for u, b in k["mem"].items())
                lines.append(f"  {dev} {n} [{','.join(r.profiles)}]: SIMD{k.get('simd')} grf {k.get('grf')}"
                             f"{' stack-calls' if k.get('stack') else ''} spilled {k.get('spill', 0)} {mem}")
    return "\n".join(lines)


# ---- fetch: the Makefile's way to get ocloc without installing anything system-wide ----

def fetch(dest: Path) -> str:
    """apt-get download the packages of intel-opencl-icd's dependency closure that are not installed
    (never the OpenCL loader), unpack them into `dest` with dpkg -x. Returns a one-line status,
    also written to dest/FETCH; nothing outside `dest` changes, except apt's lists when empty."""
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)

    def sh(*cmd, cwd=None):
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    status = "ok"
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        status = "skipped: no apt-get/dpkg (not a Debian-like system); install Intel's ocloc to enable"
    else:
        if sh("apt-cache", "show", "intel-opencl-icd").returncode and os.geteuid() == 0:
            sh("apt-get", "update", "-qq")
        deps = sh("apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                  "--no-breaks", "--no-replaces", "--no-enhances", "intel-opencl-icd")  # fmt: skip
        names = sorted({n for n in deps.stdout.split() if re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", n)})
        names = [n for n in names if n != "ocl-icd-libopencl1" and not sh(
            "dpkg-query", "-W", "-f", "${db:Status-Abbrev}", n).stdout.startswith("ii")]  # fmt: skip
        if deps.returncode or "intel-opencl-icd" not in names:
            status = f"skipped: apt has no intel-opencl-icd ({(deps.stderr or deps.stdout).strip()[-200:]})"
        else:
            with tempfile.TemporaryDirectory(prefix="qkgen-debs-") as tmp:
                os.chmod(tmp, 0o755)
                r = sh("apt-get", "download", *names, cwd=tmp)
                debs = sorted(Path(tmp).glob("*.deb"))
                if r.returncode or len(debs) < len(names):
                    status = f"skipped: apt-get download {' '.join(names)} failed: {r.stderr.strip()[-300:]}"
                for deb in debs if status == "ok" else ():
                    sh("dpkg", "-x", str(deb), str(dest))
            shutil.rmtree(dest / "etc", ignore_errors=True)  # the .icd file: no loader may see this driver
            if status == "ok":
                os.environ["QKGEN_INTEL_GPU"] = str(dest)
                tool, why = find_ocloc()
                status = f"ok: {' '.join(names)}; ocloc {tool.version}" if tool else f"skipped: {why}"
    (dest / "FETCH").write_text(status + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m qkgen.tools.aot", description=__doc__.split("\n\n")[0])
    p.add_argument("action", nargs="?", choices=("compile", "fetch"), default="compile")
    p.add_argument("dest", nargs="?", help="fetch: the folder to unpack into")
    p.add_argument("--device", action="append", choices=list(DEVICES), help="default: all")
    p.add_argument("--sycl", action="store_true", help="the SYCL kernels' SPIR-V instead of OpenCL C")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)
    if args.action == "fetch":
        print(f"intel-gpu: {fetch(Path(args.dest or Path(sys.prefix) / 'intel-gpu'))}")
        return 0
    tool, why = find_ocloc()
    if tool is None:
        print(why, file=sys.stderr)
        return 2
    units = sycl_units(jobs=args.jobs) if args.sycl else opencl_units()
    results = [r for d in args.device or DEVICES for r in compile_units(tool, units, d, args.jobs)]
    print(report(results))
    problems = [m for r in results for m in r.problems()]
    print("\n".join(problems) or "no problems", file=sys.stderr if problems else sys.stdout)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
