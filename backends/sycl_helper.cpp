// Host-only bridge between Python (ctypes) and DPC++'s kernel_compiler.
//
// Built with a plain host C++17 compiler (no -fsycl) against the SYCL headers
// and libsycl.so of the intel-sycl-rt wheel; see sycl_native.py.
//
// Conventions (all entry points are extern "C"):
//   * every function returns 0 on success, non-zero on failure;
//   * on failure, if `err` is non-null, *err receives a malloc'd message
//     (for builds: the exception text plus the full DPC++ build log) that the
//     caller releases with qk_free();
//   * handles (queue refs aside) are heap objects owned by the caller and
//     released with the matching qk_*_release().
//   * queue_ref is a dpctl DPCTLSyclQueueRef, i.e. a `sycl::queue *`
//     (dpctl.SyclQueue.addressof_ref()); it is only borrowed.
#include <sycl/sycl.hpp>
#include <sycl/ext/oneapi/experimental/syclbin_kernel_bundle.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace syclex = sycl::ext::oneapi::experimental;
using exe_bundle = sycl::kernel_bundle<sycl::bundle_state::executable>;

namespace {

char *dup_str(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

int fail(char **err, const std::string &msg, int code = 1) {
  if (err) *err = dup_str(msg);
  return code;
}

// Run `f`, turning any C++ exception into a status code + message, so that
// nothing ever unwinds through the C ABI into Python.
template <typename F> int guarded(char **err, F &&f) {
  if (err) *err = nullptr;
  try {
    f();
    return 0;
  } catch (const sycl::exception &e) {
    return fail(err, std::string("SYCL exception (") + e.code().message() +
                         "): " + e.what());
  } catch (const std::exception &e) {
    return fail(err, std::string("C++ exception: ") + e.what());
  } catch (...) {
    return fail(err, "unknown C++ exception");
  }
}

sycl::queue &Q(void *queue_ref) { return *static_cast<sycl::queue *>(queue_ref); }

} // namespace

// Argument kinds for qk_launch.
enum { QK_ARG_VALUE = 0, QK_ARG_USM = 1, QK_ARG_LOCAL = 2 };

namespace {

template <int D>
sycl::nd_range<D> make_nd_range(const size_t *global, const size_t *local) {
  sycl::range<D> g, l;
  for (int d = 0; d < D; ++d) {
    g[d] = global[d];
    l[d] = local[d];
  }
  return sycl::nd_range<D>{g, l};
}

void set_args(sycl::handler &h, int nargs, const void *const *arg_ptrs,
              const size_t *arg_sizes, const int *kinds) {
  for (int i = 0; i < nargs; ++i) {
    switch (kinds[i]) {
    case QK_ARG_USM:
      // A typed pointer arg lets the runtime use the USM-pointer path
      // (clSetKernelArgMemPointerINTEL on OpenCL), not a plain value.
      h.set_arg(i, *static_cast<void *const *>(arg_ptrs[i]));
      break;
    case QK_ARG_LOCAL: {
      syclex::work_group_memory<char[]> wgm(arg_sizes[i], h);
      h.set_arg(i, wgm);
      break;
    }
    default:
      h.set_arg(i, syclex::raw_kernel_arg(arg_ptrs[i], arg_sizes[i]));
    }
  }
}

template <int D>
void submit(sycl::queue &q, sycl::kernel &k, int nargs,
            const void *const *arg_ptrs, const size_t *arg_sizes,
            const int *kinds, const size_t *global, const size_t *local,
            size_t local_mem_bytes, sycl::event *ev) {
  sycl::nd_range<D> ndr = make_nd_range<D>(global, local);
  auto cgf = [&](sycl::handler &h) {
    set_args(h, nargs, arg_ptrs, arg_sizes, kinds);
    if (local_mem_bytes) {
      syclex::nd_launch(
          h,
          syclex::launch_config{
              ndr, syclex::properties{
                       syclex::work_group_scratch_size(local_mem_bytes)}},
          k);
    } else {
      h.parallel_for(ndr, k);
    }
  };
  if (ev)
    *ev = q.submit(cgf);
  else // no event asked for: the runtime may skip making a native one
    syclex::submit(q, cgf);
}

} // namespace

extern "C" {

// Version of this C ABI; bump when a signature changes.
int qk_abi_version() { return 4; }

void qk_free(void *p) { std::free(p); }

// "backend|vendor|device name|driver version" of the queue's device: a key
// for on-disk caches of compiled bundles (malloc'd, qk_free it).
int qk_device_desc(void *queue_ref, char **out, char **err) {
  return guarded(err, [&] {
    sycl::device d = Q(queue_ref).get_device();
    std::string s = d.get_backend() == sycl::backend::opencl ? "opencl"
                    : d.get_backend() == sycl::backend::ext_oneapi_level_zero
                        ? "level_zero"
                        : "other";
    s += "|" + d.get_info<sycl::info::device::vendor>() + "|" +
         d.get_info<sycl::info::device::name>() + "|" +
         d.get_info<sycl::info::device::driver_version>();
    *out = dup_str(s);
  });
}

// 1 if the queue's device can build SYCL source at run time.
int qk_can_build_sycl(void *queue_ref, int *out, char **err) {
  return guarded(err, [&] {
    *out = Q(queue_ref).get_device().ext_oneapi_can_build(
               syclex::source_language::sycl)
               ? 1
               : 0;
  });
}

// Compile SYCL C++ `src` for the queue's device. `opts` are clang-style
// options (e.g. "-O3", "-DTILE=64"). On success *bundle_out is an executable
// bundle; *log_out (optional) receives the build log (warnings) either way.
int qk_build(void *queue_ref, const char *src, const char *const *opts,
             int nopts, void **bundle_out, char **log_out, char **err) {
  if (log_out) *log_out = nullptr;
  std::string log;
  int rc = guarded(err, [&] {
    sycl::queue &q = Q(queue_ref);
    std::vector<std::string> o(opts, opts + (opts ? nopts : 0));
    auto src_kb = syclex::create_kernel_bundle_from_source(
        q.get_context(), syclex::source_language::sycl, std::string(src));
    auto kb = syclex::build(src_kb, std::vector<sycl::device>{q.get_device()},
                            syclex::properties{syclex::build_options{o},
                                               syclex::save_log{&log}});
    *bundle_out = new exe_bundle(std::move(kb));
  });
  if (rc != 0 && err && !log.empty()) {
    // Append the log unless the exception text already carries it.
    std::string msg = *err ? *err : "";
    if (msg.find(log) == std::string::npos) {
      qk_free(*err);
      *err = dup_str(msg + "\n--- build log ---\n" + log);
    }
  }
  if (log_out && !log.empty()) *log_out = dup_str(log);
  return rc;
}

// Serialize an executable bundle to SYCLBIN bytes (malloc'd, qk_free them).
int qk_bundle_save(void *bundle, char **data_out, size_t *size_out,
                   char **err) {
  return guarded(err, [&] {
    std::vector<char> bytes =
        static_cast<exe_bundle *>(bundle)->ext_oneapi_get_content();
    char *p = static_cast<char *>(std::malloc(bytes.size() ? bytes.size() : 1));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, bytes.data(), bytes.size());
    *data_out = p;
    *size_out = bytes.size();
  });
}

// Recreate an executable bundle from SYCLBIN bytes for the queue's device.
int qk_bundle_load(void *queue_ref, const char *data, size_t size,
                   void **bundle_out, char **err) {
  return guarded(err, [&] {
    sycl::queue &q = Q(queue_ref);
    // get_kernel_bundle takes a mutable span but does not modify it.
    sycl::span<char> bytes(const_cast<char *>(data), size);
    auto kb = syclex::get_kernel_bundle<sycl::bundle_state::executable>(
        q.get_context(), std::vector<sycl::device>{q.get_device()}, bytes);
    *bundle_out = new exe_bundle(std::move(kb));
  });
}

void qk_bundle_release(void *bundle) { delete static_cast<exe_bundle *>(bundle); }

// Look a kernel up by its extern "C" function name (works for source-built
// bundles and for bundles loaded from SYCLBIN).
int qk_get_kernel(void *bundle, const char *name, void **kernel_out,
                  char **err) {
  return guarded(err, [&] {
    auto *kb = static_cast<exe_bundle *>(bundle);
    *kernel_out = new sycl::kernel(kb->ext_oneapi_get_kernel(std::string(name)));
  });
}

void qk_kernel_release(void *kernel) { delete static_cast<sycl::kernel *>(kernel); }

// Kernel facts for the queue's device. out[0] = sub-group size the compiler
// fixed (0 if none was required), out[1] = max sub-group size,
// out[2] = max work-group size, out[3] = private memory bytes per work-item,
// out[4] = number of kernel arguments (UINT64_MAX if the runtime will not
// say, as for bundles loaded from SYCLBIN).
int qk_kernel_info(void *queue_ref, void *kernel, uint64_t out[5],
                   char **err) {
  return guarded(err, [&] {
    namespace kds = sycl::info::kernel_device_specific;
    auto &k = *static_cast<sycl::kernel *>(kernel);
    sycl::device d = Q(queue_ref).get_device();
    out[0] = k.get_info<kds::compile_sub_group_size>(d);
    out[1] = k.get_info<kds::max_sub_group_size>(d);
    out[2] = k.get_info<kds::work_group_size>(d);
    out[3] = k.get_info<kds::private_mem_size>(d);
    try { // refused for bundles loaded from SYCLBIN
      out[4] = k.get_info<sycl::info::kernel::num_args>();
    } catch (const sycl::exception &) {
      out[4] = UINT64_MAX;
    }
  });
}

// Enqueue an nd_range launch of `kernel` on the queue, over `dims` (1..3)
// dimensions: global[0..dims) work-items in work-groups of local[0..dims)
// (each global size a multiple of its local size; dimension 0 is SYCL's
// slowest-varying one, as an nd_range's first range entry).
//   kinds[i] == QK_ARG_VALUE: arg_ptrs[i] points to arg_sizes[i] bytes passed
//                             by value (scalars, small POD structs);
//   kinds[i] == QK_ARG_USM:   arg_ptrs[i] points to a void* holding a USM
//                             address (arg_sizes[i] ignored);
//   kinds[i] == QK_ARG_LOCAL: the parameter is a
//                             syclex::work_group_memory<T[]> of arg_sizes[i]
//                             bytes (arg_ptrs[i] ignored). This is the local
//                             memory that works for run-time compiled kernels
//                             (one kernel param; local_accessor also works but
//                             its host-side type must match the kernel's).
// local_mem_bytes > 0 adds the work_group_scratch_size launch property
// (syclex::get_work_group_scratch_memory() in the kernel). NOTE: with
// intel-sycl-rt 2026.2.0 a kernel_compiler source that uses scratch memory
// (or group_local_memory*) segfaults inside syclex::build
// (ProgramManager::cacheKernelImplicitLocalArg), so today this is only
// reachable with bundles from elsewhere; use QK_ARG_LOCAL instead.
// If event_out is non-null it receives a sycl::event* (qk_event_*); if it is
// null the launch goes through syclex::submit (sycl_ext_oneapi_enqueue_functions),
// which on an in-order queue enqueues without making a native event (~5-15 us
// less a launch on the CPU OpenCL device); submission errors throw either way.
// The call returns once the launch is enqueued, not when it has finished.
int qk_launch(void *queue_ref, void *kernel, int nargs,
              const void *const *arg_ptrs, const size_t *arg_sizes,
              const int *kinds, int dims, const size_t *global,
              const size_t *local, size_t local_mem_bytes, void **event_out,
              char **err) {
  return guarded(err, [&] {
    sycl::queue &q = Q(queue_ref);
    auto &k = *static_cast<sycl::kernel *>(kernel);
    sycl::event ev;
    sycl::event *evp = event_out ? &ev : nullptr;
    switch (dims) {
    case 1:
      submit<1>(q, k, nargs, arg_ptrs, arg_sizes, kinds, global, local, local_mem_bytes, evp);
      break;
    case 2:
      submit<2>(q, k, nargs, arg_ptrs, arg_sizes, kinds, global, local, local_mem_bytes, evp);
      break;
    case 3:
      submit<3>(q, k, nargs, arg_ptrs, arg_sizes, kinds, global, local, local_mem_bytes, evp);
      break;
    default:
      throw std::invalid_argument("qk_launch: dims must be 1, 2 or 3");
    }
    if (event_out) *event_out = new sycl::event(std::move(ev));
  });
}

// Wait for the event; asynchronous errors of the queue are rethrown here.
int qk_event_wait(void *event, char **err) {
  return guarded(err, [&] { static_cast<sycl::event *>(event)->wait_and_throw(); });
}

// Device timestamps (ns) of a finished command. Needs a queue created with
// profiling enabled (dpctl: SyclQueue(..., property="enable_profiling")).
int qk_event_profile(void *event, uint64_t *start_ns, uint64_t *end_ns,
                     char **err) {
  return guarded(err, [&] {
    auto *e = static_cast<sycl::event *>(event);
    e->wait_and_throw();
    *start_ns = e->get_profiling_info<sycl::info::event_profiling::command_start>();
    *end_ns = e->get_profiling_info<sycl::info::event_profiling::command_end>();
  });
}

void qk_event_release(void *event) { delete static_cast<sycl::event *>(event); }

int qk_queue_wait(void *queue_ref, char **err) {
  return guarded(err, [&] { Q(queue_ref).wait_and_throw(); });
}

} // extern "C"
