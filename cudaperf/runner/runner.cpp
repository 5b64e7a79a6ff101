// cudaperf runner: the trusted host program inside which untrusted candidate libraries run.
//
// One runner process serves one candidate evaluation (plus the trusted baseline variant it is
// timed against). It is started by cudaperf/gpuworker.py inside the sandbox (new session, rlimits,
// scrubbed environment) and speaks a line protocol: commands on fd 3, replies on fd 4, so that a
// candidate's printf floods on stdout/stderr can never corrupt the protocol.
//
// Guarantees (what the Python side relies on):
//  * The CUDA context is created before privileges are dropped (--uid), so the candidate runs as an
//    unprivileged user that cannot read the reference outputs kept by the parent.
//  * Every candidate call is followed by cudaDeviceSynchronize before outputs are read, so work
//    left on side streams is finished (and counted in timings, which include the sync).
//  * Outputs are poisoned before each checked call; inputs are compared byte for byte after it.
//  * Host-only work (reading input files, building poison buffers, comparing inputs, writing
//    outputs) has commands of its own (stage, store), so the parent can keep it outside the GPU
//    lock: the lock then covers only device work, and a timed region never waits on file I/O.
//  * If candidate host code forks, the child can never speak the protocol (pid check after every
//    call) and exits at once.
//  * A sticky CUDA error (illegal address, launch failure) is reported and the runner exits, since
//    the context is unusable; the parent starts a fresh runner for the next candidate.
//
// Commands (one line each, space separated; paths never contain spaces):
//   init <shim.so> <flush_bytes>           -> ok <device name with _ for spaces> <cc> <l2 bytes>
//   shim <shim.so>                          -> ok | err <reason>   (after init: another task's call shim,
//                                              for a runner kept across tasks; a new path each time,
//                                              since dlopen hands back the library already open under a path)
//   load <slot> <lib.so> <symbol>          -> ok | err <reason>
//   stage <argfile>                         -> ok | err <reason>     (host only: reads inputs, builds poison)
//   alloc                                   -> ok | err <reason>     (device buffers for the staged args)
//   reset                                   -> ok | cuda ...         (fresh inputs, poisoned outputs on the device)
//   run <slot>                              -> ok <ms> | cuda <code> <name> <sticky>
//                                              (reset, one call, device sync, every buffer copied back)
//   store <outdir>                          -> ok <modified-inputs csv or -> | err <reason>
//                                              (host only: inputs of the last run compared, outputs written)
//   time <slot,slot,..> <warmup> <reps> <flush 0|1> [<spot rep>]
//                                           -> ok <a1,a2,..> <b1,b2,..> .. (one field per slot, in order)
//                                              | cuda <code> <name> <sticky>
//                                              (on the buffers as they are: the parent sends reset first;
//                                               with a spot rep, `store` then gives that timed call's outputs)
//   free                                    -> ok
//   mem                                     -> ok <free bytes> <total bytes>  (device memory)
//   quit
// Argfile lines:  P <name> <role> <elem_bytes> <numel> <datafile|-> <poison_hex|->
//                 S <name> <code> <value>     code: i8 u8 i16 u16 i32 u32 i64 u64 f32 f64 b
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <iterator>
#include <map>
#include <string>
#include <vector>

typedef void (*caller_t)(void *fn, void **args);

struct Arg {
  std::string name, role;
  bool is_ptr = false;
  size_t elem = 0, numel = 0;
  std::vector<unsigned char> host;    // what reset copies to the device: inputs, or poison (out)
  std::string src;                    // the input file `host` holds (runs never change `host`)
  std::vector<unsigned char> back;    // the device contents after the last run (pre-faulted)
  bool back_valid = false;            // `back` was copied from the device by that run
  void *dev = nullptr;
  unsigned char scalar[8] = {0};
  void *argp = nullptr;  // what the caller shim dereferences
};

static FILE *cmd_in = nullptr, *rep_out = nullptr;
static pid_t runner_pid;
static caller_t caller = nullptr;
static std::map<int, void *> slots;
static std::vector<Arg> args;    // bound to device buffers (alloc)
static std::vector<Arg> staged;  // read by stage, not yet bound
static bool have_run = false;    // `back` holds the results of a run on the current args
static std::vector<void *> argv_ptrs;
static void *flush_buf = nullptr;
static size_t flush_bytes = 0;
static bool have_gpu = false;

// Host buffers of freed args, kept by size for the next stage. Why: malloc maps a buffer of
// hundreds of MB with mmap and unmaps it when freed, so every perf-size stage after a small check
// configuration faulted in and zeroed fresh pages for its inputs, poisoned outputs and copy-back
// buffers -- 6x the cost of the stage that reused the previous layout's buffers
// (benchmarks/bench_runner_stage.py, host-emulated, 3 x 256 MiB: 742 ms against 120 ms; with the
// pool both take 120 ms: data/bench/runner_stage_cpu-2core_session14.log). A pooled
// buffer keeps its old bytes: every user overwrites all of it (an input file read whole, a poison
// fill, a copy back from the device before anything reads it).
static std::multimap<size_t, std::vector<unsigned char>> spare;
static size_t spare_bytes = 0;
// The spares are the pages a perf-size layout held while bound, kept while a small one is bound
// and taken again by the next perf stage: a runner's resident peak stays that of one big layout,
// as before; only between perf stages is it not given back. 2 GiB holds a layout of 6 x 256 MiB
// (1 GiB kept half of it: 316 ms a stage). The parent's RSS watchdog counts these pages.
static size_t spare_cap = (size_t)2 << 30;
static const size_t SPARE_MIN = (size_t)1 << 20;  // smaller ones come from malloc's own free lists

static void recycle(std::vector<unsigned char> &v) {
  size_t n = v.size();
  if (n >= SPARE_MIN && n <= spare_cap) {
    // the largest spares go first when full: perf-size layouts of other tasks are the least likely reused
    while (spare_bytes + n > spare_cap && !spare.empty()) {
      auto last = std::prev(spare.end());
      spare_bytes -= last->first;
      spare.erase(last);
    }
    spare_bytes += n;
    spare.emplace(n, std::move(v));
  }
  std::vector<unsigned char>().swap(v);
}

// `v` resized to exactly n bytes: a spare of that size when there is one (contents arbitrary),
// else fresh zeroed memory.
static void take(std::vector<unsigned char> &v, size_t n) {
  if (v.size() == n) return;
  recycle(v);
  auto it = spare.find(n);
  if (it != spare.end()) {
    v.swap(it->second);
    spare_bytes -= n;
    spare.erase(it);
  } else {
    v.resize(n);
  }
}

static void recycle_args(std::vector<Arg> &list) {
  for (auto &a : list) { recycle(a.host); recycle(a.back); a.src.clear(); }
}

static void reply(const char *fmt, ...) {
  if (getpid() != runner_pid) _exit(0);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(rep_out, fmt, ap);
  va_end(ap);
  fputc('\n', rep_out);
  fflush(rep_out);
}

static bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorAssert:
    case cudaErrorHardwareStackError: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace: case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout: case cudaErrorECCUncorrectable: case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

// Returns true when the error was reported (caller stops the command).
static bool report_cuda(cudaError_t e) {
  if (e == cudaSuccess) return false;
  bool sticky = is_sticky(e);
  reply("cuda %d %s %d", (int)e, cudaGetErrorName(e), sticky ? 1 : 0);
  if (sticky) { fflush(stdout); _exit(3); }
  cudaGetLastError();  // clear a non-sticky error so the runner stays usable
  return true;
}

static void after_call() {
  // A fork in candidate host code returns here in the child too: it must not go on.
  if (getpid() != runner_pid) _exit(0);
}

static bool read_file(const char *path, std::vector<unsigned char> &buf, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  buf.resize(n);
  size_t got = n ? fread(buf.data(), 1, n, f) : 0;
  fclose(f);
  return got == n;
}

// Outputs go into files the parent created at their exact size: written through a shared
// mapping, so RLIMIT_FSIZE (which caps printf floods) never limits a large output.
static bool write_file(const std::string &path, const void *data, size_t n) {
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != n) { close(fd); return false; }
  if (n == 0) { close(fd); return true; }
  void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return false;
  memcpy(m, data, n);
  // No msync: the parent reads the same page cache; forcing the pages to disk would only cost time.
  munmap(m, n);
  return true;
}

static void free_args() {
  for (auto &a : args)
    if (a.dev) cudaFree(a.dev);
  recycle_args(args);
  args.clear();
  argv_ptrs.clear();
}

// The bound arg at this position if it has the same name and size as `a`.
static Arg *same_layout(size_t idx, const Arg &a) {
  if (idx < args.size() && args[idx].is_ptr && args[idx].name == a.name && args[idx].elem == a.elem &&
      args[idx].numel == a.numel)
    return &args[idx];
  return nullptr;
}

// Host side of an argfile: input files read, poison buffers built, copy-back buffers touched,
// all before the parent takes the GPU lock. No CUDA call here. A buffer of the same layout as the
// bound one (perf-size check, timing and recheck follow each other) takes over the bound one's
// host memory: faulting in fresh pages for hundreds of MB cost more than the copy into them. The
// bound args are then spent: nothing runs on them until `alloc` binds these (and if this stage
// fails they are dropped, so a run cannot read a buffer that was taken).
static std::string stage_args(const char *path) {
  recycle_args(staged);
  staged.clear();
  bool took = false;
  FILE *f = fopen(path, "r");
  if (!f) return "cannot open argfile";
  char kind[4], name[256], role[32], data[4096], poison[64], code[8], val[128];
  std::string err;
  while (err.empty() && fscanf(f, "%3s", kind) == 1) {
    Arg a;
    if (kind[0] == 'P') {
      unsigned long long elem, numel;
      if (fscanf(f, "%255s %31s %llu %llu %4095s %63s", name, role, &elem, &numel, data, poison) != 6) {
        err = "bad P line"; break;
      }
      a.name = name; a.role = role; a.is_ptr = true; a.elem = elem; a.numel = numel;
      size_t n = elem * numel;
      if (Arg *old = same_layout(staged.size(), a)) {
        a.host.swap(old->host);
        a.back.swap(old->back);
        a.src.swap(old->src);
        took = true;
      }
      if (strcmp(data, "-") == 0 && a.role != "out") { err = "input " + a.name + " without a data file"; break; }
      if (strcmp(data, "-") != 0) {
        // Input files are immutable (one per task, test, seed): the same one again is already here.
        if (!(a.src == data && a.host.size() == n)) {
          take(a.host, n);
          if (!read_file(data, a.host, n)) { err = std::string("cannot read ") + data; break; }
        }
        a.src = data;
      } else if (strcmp(poison, "-") != 0) {
        size_t len = strlen(poison) / 2;
        if (len == 0 || elem % len != 0) { err = "bad poison"; break; }
        a.src.clear();
        std::vector<unsigned char> pat(len);
        for (size_t i = 0; i < len; i++) { unsigned v; sscanf(poison + 2 * i, "%2x", &v); pat[i] = (unsigned char)v; }
        take(a.host, n);
        // Doubling copies: a few memcpy calls instead of a byte loop over hundreds of MB.
        size_t done = n < len ? n : len;
        memcpy(a.host.data(), pat.data(), done);
        while (done < n) { size_t k = done < n - done ? done : n - done; memcpy(a.host.data() + done, a.host.data(), k); done += k; }
      } else {  // an out buffer without poison keeps its device contents: nothing to copy there
        recycle(a.host);
        a.src.clear();
      }
      take(a.back, n);  // touched now (a spare, or zeroed): the copy back under the lock never page-faults
    } else if (kind[0] == 'S') {
      if (fscanf(f, "%255s %7s %127s", name, code, val) != 3) { err = "bad S line"; break; }
      a.name = name;
      std::string c = code;
      if (c == "f32") { float v = strtof(val, nullptr); memcpy(a.scalar, &v, 4); }
      else if (c == "f64") { double v = strtod(val, nullptr); memcpy(a.scalar, &v, 8); }
      else if (c == "i64" || c == "u64") { long long v = strtoll(val, nullptr, 10); memcpy(a.scalar, &v, 8); }
      else if (c == "i32" || c == "u32") { long long v = strtoll(val, nullptr, 10); int32_t w = (int32_t)v; memcpy(a.scalar, &w, 4); }
      else if (c == "i16" || c == "u16") { int16_t w = (int16_t)strtol(val, nullptr, 10); memcpy(a.scalar, &w, 2); }
      else if (c == "i8" || c == "u8" || c == "b") { int8_t w = (int8_t)strtol(val, nullptr, 10); memcpy(a.scalar, &w, 1); }
      else { err = "bad scalar code " + c; break; }
    } else {
      err = std::string("bad line kind ") + kind; break;
    }
    staged.push_back(std::move(a));
  }
  fclose(f);
  if (!err.empty()) { recycle_args(staged); staged.clear(); }
  if (took) {
    have_run = false;
    if (!err.empty()) free_args();
  }
  return err;
}

// Binds the staged args to device buffers. A new argfile with the same buffer layout (names and
// sizes) keeps the device buffers: the recheck after timing then runs on the very pointers that
// were timed, with new contents, so a candidate that memoised results by pointer during timing
// returns stale outputs and fails.
static std::string alloc_args() {
  if (staged.empty()) return "nothing staged";
  std::vector<Arg> old;
  old.swap(args);
  args.swap(staged);
  argv_ptrs.clear();
  have_run = false;
  std::string err;
  for (size_t idx = 0; idx < args.size(); idx++) {
    Arg &a = args[idx];
    if (!a.is_ptr) continue;
    if (idx < old.size() && old[idx].is_ptr && old[idx].name == a.name && old[idx].elem == a.elem &&
        old[idx].numel == a.numel && old[idx].dev) {
      a.dev = old[idx].dev;
      old[idx].dev = nullptr;
    } else {
      size_t bytes = a.numel ? a.elem * a.numel : a.elem;  // never a null pointer for empty buffers
      cudaError_t e = cudaMalloc(&a.dev, bytes);
      if (e != cudaSuccess) { a.dev = nullptr; err = std::string("cudaMalloc ") + cudaGetErrorName(e); break; }
    }
  }
  for (auto &o : old) if (o.dev) cudaFree(o.dev);
  recycle_args(old);
  if (!err.empty()) { free_args(); return err; }
  argv_ptrs.resize(args.size());
  for (size_t i = 0; i < args.size(); i++)
    argv_ptrs[i] = args[i].is_ptr ? (void *)&args[i].dev : (void *)args[i].scalar;
  return "";
}

// Fresh inputs and poisoned outputs on the device before a checked call.
static cudaError_t reset_buffers() {
  for (auto &a : args) {
    if (!a.is_ptr || a.host.empty()) continue;  // an out buffer without poison keeps its contents
    cudaError_t e = cudaMemcpy(a.dev, a.host.data(), a.host.size(), cudaMemcpyHostToDevice);
    if (e) return e;
  }
  return cudaDeviceSynchronize();
}

// Device part of a checked call: poison, call, sync, every buffer copied back to `back`.
static void cmd_run(int slot) {
  have_run = false;
  if (!slots.count(slot)) { reply("err no such slot"); return; }
  if (args.empty()) { reply("err no args"); return; }
  if (report_cuda(reset_buffers())) return;
  cudaEvent_t s, t;
  cudaEventCreate(&s); cudaEventCreate(&t);
  cudaEventRecord(s, 0);
  caller(slots[slot], argv_ptrs.data());
  after_call();
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (report_cuda(e)) return;
  cudaEventRecord(t, 0);
  cudaEventSynchronize(t);
  float ms = 0; cudaEventElapsedTime(&ms, s, t);
  cudaEventDestroy(s); cudaEventDestroy(t);
  for (auto &a : args) {
    size_t n = a.is_ptr ? a.elem * a.numel : 0;
    if (a.back.size() != n) a.back.resize(n);
    if (n && report_cuda(cudaMemcpy(a.back.data(), a.dev, n, cudaMemcpyDeviceToHost))) return;
    a.back_valid = a.is_ptr;
  }
  have_run = true;
  reply("ok %.6f", ms);
}

// Host part of a checked call: inputs compared byte for byte, outputs written for the parent.
static void cmd_store(const char *outdir) {
  if (!have_run) { reply("err nothing run"); return; }
  std::string modified;
  for (auto &a : args) {
    if (!a.is_ptr) continue;
    size_t n = a.elem * a.numel;
    if (a.role == "in") {
      // (a spot check inside a timed region copies back outputs only: inputs are not judged then)
      if (n && a.back_valid && memcmp(a.back.data(), a.host.data(), n) != 0) modified += (modified.empty() ? "" : ",") + a.name;
    } else if (n && !a.back_valid) {
      reply("err output %s was not copied back", a.name.c_str()); return;
    } else if (!write_file(std::string(outdir) + "/" + a.name + ".bin", a.back.data(), n)) {
      reply("err cannot write output %s", a.name.c_str()); return;
    }
  }
  reply("ok %s", modified.empty() ? "-" : modified.c_str());
}

// Times the slots interleaved: every repetition calls each slot once, forward on even
// repetitions and backward on odd ones, so slow drift (clocks, temperature) hits all equally.
// With spot >= 0, the call of order[0] in repetition `spot` is also checked: its outputs are
// poisoned before it and copied back after it (both outside the timed interval, the poison
// before the L2 flush), so `store` can hand the parent what that timed call really wrote. A
// candidate that skips work while it is timed cannot know which call is looked at.
static void cmd_time(const std::vector<int> &order, int warmup, int reps, int flush, int spot) {
  for (int sl : order) if (!slots.count(sl)) { reply("err no such slot"); return; }
  if (args.empty()) { reply("err no args"); return; }
  have_run = false;  // the timed calls change outputs (and inout buffers): `back` is stale
  for (auto &a : args) a.back_valid = false;
  size_t k = order.size();
  for (int w = 0; w < warmup; w++)
    for (size_t j = 0; j < k; j++) { caller(slots[order[j]], argv_ptrs.data()); after_call(); }
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (report_cuda(e)) return;
  std::vector<std::vector<float>> ms_of(k);
  cudaEvent_t s, t;
  cudaEventCreate(&s); cudaEventCreate(&t);
  for (int r = 0; r < reps; r++) {
    for (size_t j = 0; j < k; j++) {
      size_t which = (r % 2 == 0) ? j : k - 1 - j;
      bool spotted = r == spot && which == 0;
      if (spotted)
        for (auto &a : args)
          if (a.is_ptr && a.role == "out" && !a.host.empty() &&
              report_cuda(cudaMemcpy(a.dev, a.host.data(), a.host.size(), cudaMemcpyHostToDevice))) return;
      if (flush && flush_buf) cudaMemsetAsync(flush_buf, r & 0xff, flush_bytes, 0);
      cudaEventRecord(s, 0);
      caller(slots[order[which]], argv_ptrs.data());
      after_call();
      // The sync sits inside the timed region: work the candidate left on other streams counts.
      e = cudaDeviceSynchronize();
      if (e == cudaSuccess) e = cudaGetLastError();
      if (report_cuda(e)) return;
      cudaEventRecord(t, 0);
      cudaEventSynchronize(t);
      float ms = 0;
      cudaEventElapsedTime(&ms, s, t);
      ms_of[which].push_back(ms);
      if (spotted) {
        for (auto &a : args) {
          size_t n = a.is_ptr && a.role != "in" ? a.elem * a.numel : 0;
          if (n && a.back.size() != n) a.back.resize(n);
          if (n && report_cuda(cudaMemcpy(a.back.data(), a.dev, n, cudaMemcpyDeviceToHost))) return;
          a.back_valid = n > 0;
        }
        have_run = true;
      }
    }
  }
  cudaEventDestroy(s); cudaEventDestroy(t);
  std::string out = "ok";
  char buf[64];
  for (size_t j = 0; j < k; j++) {
    out += ' ';
    for (size_t i = 0; i < ms_of[j].size(); i++) { snprintf(buf, sizeof buf, "%s%.6f", i ? "," : "", ms_of[j][i]); out += buf; }
  }
  reply("%s", out.c_str());
}

static void drop_privileges(long uid) {
  // Best effort, as root: a network namespace of its own (no network for candidate host code),
  // and a mount namespace in which the world-writable places (/tmp, /var/tmp, /dev/shm) are
  // fresh private tmpfs, so nothing the candidate writes there outlives the runner or reaches
  // other processes. The runner's cwd (its scratch dir) stays reachable: the parent only ever
  // sends paths relative to it, and cwd keeps the original directory even once overmounted.
  unshare(CLONE_NEWNET);
  if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
    const char *dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};
    for (const char *d : dirs) mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777");
  }
  if (setgroups(0, nullptr) != 0 || setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
    fprintf(stderr, "runner: cannot drop privileges to uid %ld: %s\n", uid, strerror(errno));
    _exit(4);
  }
}

int main(int argc, char **argv) {
  long drop_uid = -1;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--uid") && i + 1 < argc) drop_uid = atol(argv[++i]);
  signal(SIGXFSZ, SIG_IGN);  // a printf flood hits the file-size limit: writes fail, we live
  signal(SIGPIPE, SIG_IGN);
  runner_pid = getpid();
  cmd_in = fdopen(3, "r");
  rep_out = fdopen(4, "w");
  if (!cmd_in || !rep_out) { fprintf(stderr, "runner: protocol fds 3/4 missing\n"); return 2; }
  bool dropped = false;
  char line[8192];
  while (fgets(line, sizeof line, cmd_in)) {
    if (getpid() != runner_pid) _exit(0);
    char op[16] = {0};
    sscanf(line, "%15s", op);
    if (!strcmp(op, "init")) {
      char shim[4096]; unsigned long long fb = 0;
      if (sscanf(line, "%*s %4095s %llu", shim, &fb) != 2) { reply("err bad init"); continue; }
      void *h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
      if (!h || !(caller = (caller_t)dlsym(h, "cudaperf_call"))) { reply("err shim %s", dlerror()); continue; }
      cudaError_t e = cudaFree(0);  // create the context while still privileged
      if (e == cudaSuccess) {
        have_gpu = true;
        flush_bytes = fb;
        if (fb && cudaMalloc(&flush_buf, fb) != cudaSuccess) { flush_buf = nullptr; flush_bytes = 0; }
      }
      // Drop privileges whether or not a GPU was found: no candidate code ever runs as root.
      if (drop_uid >= 0 && !dropped) drop_privileges(drop_uid);
      dropped = true;
      if (e != cudaSuccess) { reply("cuda %d %s 0", (int)e, cudaGetErrorName(e)); continue; }
      cudaDeviceProp p;
      cudaGetDeviceProperties(&p, 0);
      for (char *c = p.name; *c; c++) if (*c == ' ') *c = '_';
      reply("ok %s %d.%d %d", p.name, p.major, p.minor, p.l2CacheSize);
    } else if (!strcmp(op, "shim")) {
      char shim[4096];
      if (sscanf(line, "%*s %4095s", shim) != 1) { reply("err bad shim"); continue; }
      if (!dropped) { reply("err shim before init"); continue; }
      // The shim is trusted (generated from the task's signature); opened unprivileged like a
      // candidate, from the scratch dir.
      void *h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
      caller_t c = h ? (caller_t)dlsym(h, "cudaperf_call") : nullptr;
      if (!c) { const char *m = dlerror(); std::string s = m ? m : "?"; for (auto &ch : s) if (ch == '\n') ch = ' '; reply("err shim %s", s.c_str()); continue; }
      caller = c;
      slots.clear();  // the previous task's entry points take other arguments
      reply("ok");
    } else if (!strcmp(op, "load")) {
      int slot; char path[4096], sym[512];
      if (sscanf(line, "%*s %d %4095s %511s", &slot, path, sym) != 3) { reply("err bad load"); continue; }
      if (!dropped) { reply("err load before init"); continue; }
      // RTLD_LOCAL: the candidate's symbols cannot interpose on the runner's CUDA calls.
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      after_call();
      if (!h) { const char *m = dlerror(); std::string s = m ? m : "?"; for (auto &c : s) if (c == '\n') c = ' '; reply("err dlopen %s", s.c_str()); continue; }
      void *fn = dlsym(h, sym);
      if (!fn) { reply("err missing symbol %s", sym); continue; }
      slots[slot] = fn;
      // Load-time work may have left an error behind (only meaningful with a context).
      if (have_gpu && report_cuda(cudaGetLastError())) continue;
      reply("ok");
    } else if (!strcmp(op, "stage")) {
      char path[4096];
      if (sscanf(line, "%*s %4095s", path) != 1) { reply("err bad stage"); continue; }
      std::string err = stage_args(path);
      if (err.empty()) reply("ok"); else reply("err %s", err.c_str());
    } else if (!strcmp(op, "alloc")) {
      if (!have_gpu) { reply("err no gpu"); continue; }
      std::string err = alloc_args();
      if (err.empty()) reply("ok"); else reply("err %s", err.c_str());
    } else if (!strcmp(op, "reset")) {
      if (args.empty()) { reply("err no args"); continue; }
      if (!report_cuda(reset_buffers())) reply("ok");
    } else if (!strcmp(op, "run")) {
      int slot;
      if (sscanf(line, "%*s %d", &slot) != 1) { reply("err bad run"); continue; }
      cmd_run(slot);
    } else if (!strcmp(op, "store")) {
      char outdir[4096];
      if (sscanf(line, "%*s %4095s", outdir) != 1) { reply("err bad store"); continue; }
      cmd_store(outdir);
    } else if (!strcmp(op, "time")) {
      int warm, reps, flush, spot = -1; char list[256];
      int got = sscanf(line, "%*s %255s %d %d %d %d", list, &warm, &reps, &flush, &spot);
      if (got < 4 || reps < 1 || warm < 0 || spot >= reps) { reply("err bad time"); continue; }
      std::vector<int> order;
      for (char *tok = strtok(list, ","); tok; tok = strtok(nullptr, ",")) order.push_back(atoi(tok));
      if (order.empty() || order.size() > 32) { reply("err bad time"); continue; }
      cmd_time(order, warm, reps, flush, spot);
    } else if (!strcmp(op, "free")) {
      free_args();
      reply("ok");
    } else if (!strcmp(op, "mem")) {
      // Device memory free and total: a shared runner (cudaperf.sharedrunner) retires itself
      // when a candidate left memory allocated behind it.
      if (!have_gpu) { reply("err no gpu"); continue; }
      size_t fr = 0, tot = 0;
      if (report_cuda(cudaMemGetInfo(&fr, &tot))) continue;
      reply("ok %zu %zu", fr, tot);
    } else if (!strcmp(op, "quit")) {
      break;
    } else {
      reply("err unknown command %s", op);
    }
  }
  fflush(stdout);
  _exit(0);  // skip static destructors: candidate libraries may have registered hostile ones
}
