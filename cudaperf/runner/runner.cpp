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
//  * If candidate host code forks, the child can never speak the protocol (pid check after every
//    call) and exits at once.
//  * A sticky CUDA error (illegal address, launch failure) is reported and the runner exits, since
//    the context is unusable; the parent starts a fresh runner for the next candidate.
//
// Commands (one line each, space separated; paths never contain spaces):
//   init <shim.so> <flush_bytes>           -> ok <device name with _ for spaces> <cc> <l2 bytes>
//   load <slot> <lib.so> <symbol>          -> ok | err <reason>
//   args <argfile>                          -> ok | err <reason>     (allocates device buffers)
//   check <slot> <outdir>                   -> ok <ms> <modified-inputs csv or -> | cuda <code> <name> <sticky>
//   time <slotA> <slotB|-> <warmup> <reps> <flush 0|1>
//                                           -> ok <a1,a2,..> <b1,b2,..|-> | cuda <code> <name> <sticky>
//   free                                    -> ok
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

#include <map>
#include <string>
#include <vector>

typedef void (*caller_t)(void *fn, void **args);

struct Arg {
  std::string name, role;
  bool is_ptr = false;
  size_t elem = 0, numel = 0;
  std::vector<unsigned char> host;    // initial contents (in/inout)
  std::vector<unsigned char> poison;  // one element's poison pattern (out)
  void *dev = nullptr;
  unsigned char scalar[8] = {0};
  void *argp = nullptr;  // what the caller shim dereferences
};

static FILE *cmd_in = nullptr, *rep_out = nullptr;
static pid_t runner_pid;
static caller_t caller = nullptr;
static std::map<int, void *> slots;
static std::vector<Arg> args;
static std::vector<void *> argv_ptrs;
static void *flush_buf = nullptr;
static size_t flush_bytes = 0;
static bool have_gpu = false;

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
  bool ok = msync(m, n, MS_SYNC) == 0;
  munmap(m, n);
  return ok;
}

static void free_args() {
  for (auto &a : args)
    if (a.dev) cudaFree(a.dev);
  args.clear();
  argv_ptrs.clear();
}

// Reading a new argfile with the same buffer layout (names and sizes) keeps the device buffers:
// the recheck after timing then runs on the very pointers that were timed, with new contents,
// so a candidate that memoised results by pointer during timing returns stale outputs and fails.
static std::string load_args(const char *path) {
  std::vector<Arg> old;
  old.swap(args);
  argv_ptrs.clear();
  FILE *f = fopen(path, "r");
  if (!f) return "cannot open argfile";
  char kind[4], name[256], role[32], data[4096], poison[64], code[8], val[128];
  while (fscanf(f, "%3s", kind) == 1) {
    Arg a;
    if (kind[0] == 'P') {
      unsigned long long elem, numel;
      if (fscanf(f, "%255s %31s %llu %llu %4095s %63s", name, role, &elem, &numel, data, poison) != 6) {
        fclose(f); return "bad P line";
      }
      a.name = name; a.role = role; a.is_ptr = true; a.elem = elem; a.numel = numel;
      if (strcmp(data, "-") != 0 && !read_file(data, a.host, elem * numel)) {
        fclose(f); return std::string("cannot read ") + data;
      }
      if (strcmp(poison, "-") != 0) {
        size_t len = strlen(poison) / 2;
        a.poison.resize(len);
        for (size_t i = 0; i < len; i++) { unsigned v; sscanf(poison + 2 * i, "%2x", &v); a.poison[i] = (unsigned char)v; }
      }
      size_t idx = args.size();
      if (idx < old.size() && old[idx].is_ptr && old[idx].name == a.name && old[idx].elem == a.elem &&
          old[idx].numel == a.numel && old[idx].dev) {
        a.dev = old[idx].dev;
        old[idx].dev = nullptr;
      } else {
        size_t bytes = elem * numel ? elem * numel : elem;  // never a null pointer for empty buffers
        cudaError_t e = cudaMalloc(&a.dev, bytes);
        if (e != cudaSuccess) {
          fclose(f);
          for (auto &o : old) if (o.dev) cudaFree(o.dev);
          return std::string("cudaMalloc ") + cudaGetErrorName(e);
        }
      }
    } else if (kind[0] == 'S') {
      if (fscanf(f, "%255s %7s %127s", name, code, val) != 3) { fclose(f); return "bad S line"; }
      a.name = name;
      std::string c = code;
      if (c == "f32") { float v = strtof(val, nullptr); memcpy(a.scalar, &v, 4); }
      else if (c == "f64") { double v = strtod(val, nullptr); memcpy(a.scalar, &v, 8); }
      else if (c == "i64" || c == "u64") { long long v = strtoll(val, nullptr, 10); memcpy(a.scalar, &v, 8); }
      else if (c == "i32" || c == "u32") { long long v = strtoll(val, nullptr, 10); int32_t w = (int32_t)v; memcpy(a.scalar, &w, 4); }
      else if (c == "i16" || c == "u16") { int16_t w = (int16_t)strtol(val, nullptr, 10); memcpy(a.scalar, &w, 2); }
      else if (c == "i8" || c == "u8" || c == "b") { int8_t w = (int8_t)strtol(val, nullptr, 10); memcpy(a.scalar, &w, 1); }
      else { fclose(f); return "bad scalar code " + c; }
    } else {
      fclose(f); return std::string("bad line kind ") + kind;
    }
    args.push_back(std::move(a));
  }
  fclose(f);
  for (auto &o : old) if (o.dev) cudaFree(o.dev);
  argv_ptrs.resize(args.size());
  for (size_t i = 0; i < args.size(); i++)
    argv_ptrs[i] = args[i].is_ptr ? (void *)&args[i].dev : (void *)args[i].scalar;
  return "";
}

// Fresh inputs and poisoned outputs on the device before a checked call.
static cudaError_t reset_buffers() {
  for (auto &a : args) {
    if (!a.is_ptr) continue;
    size_t n = a.elem * a.numel;
    if (a.role == "out") {
      if (!a.poison.empty() && n) {
        std::vector<unsigned char> p(n);
        for (size_t i = 0; i < n; i++) p[i] = a.poison[i % a.poison.size()];
        cudaError_t e = cudaMemcpy(a.dev, p.data(), n, cudaMemcpyHostToDevice);
        if (e) return e;
      }
    } else if (n) {
      cudaError_t e = cudaMemcpy(a.dev, a.host.data(), n, cudaMemcpyHostToDevice);
      if (e) return e;
    }
  }
  return cudaDeviceSynchronize();
}

static void cmd_check(int slot, const char *outdir) {
  if (!slots.count(slot)) { reply("err no such slot"); return; }
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
  std::string modified;
  for (auto &a : args) {
    if (!a.is_ptr) continue;
    size_t n = a.elem * a.numel;
    std::vector<unsigned char> back(n);
    if (n && report_cuda(cudaMemcpy(back.data(), a.dev, n, cudaMemcpyDeviceToHost))) return;
    if (a.role == "in") {
      if (n && memcmp(back.data(), a.host.data(), n) != 0) modified += (modified.empty() ? "" : ",") + a.name;
    } else if (!write_file(std::string(outdir) + "/" + a.name + ".bin", back.data(), n)) {
      reply("err cannot write output %s", a.name.c_str()); return;
    }
  }
  reply("ok %.6f %s", ms, modified.empty() ? "-" : modified.c_str());
}

static void cmd_time(int sa, int sb, int warmup, int reps, int flush) {
  if (!slots.count(sa) || (sb >= 0 && !slots.count(sb))) { reply("err no such slot"); return; }
  if (report_cuda(reset_buffers())) return;
  int order[2] = {sa, sb};
  int nslots = sb >= 0 ? 2 : 1;
  for (int w = 0; w < warmup; w++)
    for (int k = 0; k < nslots; k++) { caller(slots[order[k]], argv_ptrs.data()); after_call(); }
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (report_cuda(e)) return;
  std::vector<float> ta, tb;
  cudaEvent_t s, t;
  cudaEventCreate(&s); cudaEventCreate(&t);
  for (int r = 0; r < reps; r++) {
    // Alternate which variant goes first so slow drift (clocks, temperature) hits both equally.
    for (int k = 0; k < nslots; k++) {
      int which = (r % 2 == 0) ? k : nslots - 1 - k;
      int slot = order[which];
      if (flush && flush_buf) cudaMemsetAsync(flush_buf, r & 0xff, flush_bytes, 0);
      cudaEventRecord(s, 0);
      caller(slots[slot], argv_ptrs.data());
      after_call();
      // The sync sits inside the timed region: work the candidate left on other streams counts.
      e = cudaDeviceSynchronize();
      if (e == cudaSuccess) e = cudaGetLastError();
      if (report_cuda(e)) return;
      cudaEventRecord(t, 0);
      cudaEventSynchronize(t);
      float ms = 0;
      cudaEventElapsedTime(&ms, s, t);
      (which == 0 ? ta : tb).push_back(ms);
    }
  }
  cudaEventDestroy(s); cudaEventDestroy(t);
  std::string a, b;
  char buf[64];
  for (float x : ta) { snprintf(buf, sizeof buf, "%s%.6f", a.empty() ? "" : ",", x); a += buf; }
  for (float x : tb) { snprintf(buf, sizeof buf, "%s%.6f", b.empty() ? "" : ",", x); b += buf; }
  reply("ok %s %s", a.c_str(), b.empty() ? "-" : b.c_str());
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
    } else if (!strcmp(op, "args")) {
      char path[4096];
      if (sscanf(line, "%*s %4095s", path) != 1) { reply("err bad args"); continue; }
      std::string err = load_args(path);
      if (err.empty()) reply("ok"); else reply("err %s", err.c_str());
    } else if (!strcmp(op, "check")) {
      int slot; char outdir[4096];
      if (sscanf(line, "%*s %d %4095s", &slot, outdir) != 2) { reply("err bad check"); continue; }
      cmd_check(slot, outdir);
    } else if (!strcmp(op, "time")) {
      int sa, warm, reps, flush; char sb[32];
      if (sscanf(line, "%*s %d %31s %d %d %d", &sa, sb, &warm, &reps, &flush) != 5) { reply("err bad time"); continue; }
      cmd_time(sa, strcmp(sb, "-") ? atoi(sb) : -1, warm, reps, flush);
    } else if (!strcmp(op, "free")) {
      free_args();
      reply("ok");
    } else if (!strcmp(op, "quit")) {
      break;
    } else {
      reply("err unknown command %s", op);
    }
  }
  fflush(stdout);
  _exit(0);  // skip static destructors: candidate libraries may have registered hostile ones
}
