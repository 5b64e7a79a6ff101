// Host emulation of the CUDA runtime calls that cudaperf's runner makes -- for CPU tests only.
//
// tests/test_hostemu.py compiles cudaperf/runner/runner.cpp with g++ against this header, so the
// harness' whole GPU path (runner protocol, GPU lock, checks, timed regions, rechecks, variant
// groups) runs on a machine without a GPU: "device" memory is host memory, a "kernel" is a
// candidate written as plain C (the task's entry on host pointers), events read a host clock.
// Nothing here is used to produce a measurement.
#pragma once
#include <stddef.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <time.h>

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorMemoryAllocation = 2,
  cudaErrorECCUncorrectable = 214,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchTimeout = 702,
  cudaErrorContextIsDestroyed = 709,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
} cudaError_t;

enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

struct cudaDeviceProp {
  char name[256];
  int major, minor, l2CacheSize;
};

struct cudaperf_emu_event { double ms; };
struct cudaperf_emu_stream;
typedef cudaperf_emu_event *cudaEvent_t;
typedef cudaperf_emu_stream *cudaStream_t;

static inline double cudaperf_emu_now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// "Device memory" in use: what cudaMalloc handed out and cudaFree did not take back, plus what
// an emulated candidate declares it leaked (extern long long cudaperf_emu_leaked).
extern "C" { long long cudaperf_emu_leaked = 0; }
static long long cudaperf_emu_in_use = 0;
static inline cudaError_t cudaFree(void *p) {
  if (p) cudaperf_emu_in_use -= (long long)malloc_usable_size(p);
  free(p);
  return cudaSuccess;
}
static inline cudaError_t cudaMalloc(void **p, size_t n) {
  *p = malloc(n ? n : 1);
  if (*p) cudaperf_emu_in_use += (long long)malloc_usable_size(*p);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaMemGetInfo(size_t *fr, size_t *total) {
  const long long cap = 16LL << 30;
  *total = (size_t)cap;
  *fr = (size_t)(cap - cudaperf_emu_in_use - cudaperf_emu_leaked);
  return cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind) {
  memcpy(dst, src, n);
  return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) {
  memset(p, v, n);
  return cudaSuccess;
}
// A candidate emulates a sticky device error (an illegal address, say) by setting this: the
// runner exports it (linked with -rdynamic) and every later sync reports it, as a GPU would.
extern "C" __attribute__((visibility("default"))) int cudaperf_emu_error;
int cudaperf_emu_error = 0;
static inline cudaError_t cudaDeviceSynchronize() { return (cudaError_t)cudaperf_emu_error; }
static inline cudaError_t cudaGetLastError() { return (cudaError_t)cudaperf_emu_error; }
static inline const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    default: return "cudaErrorEmulated";
  }
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new cudaperf_emu_event{0.0}; return cudaSuccess; }
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) { e->ms = cudaperf_emu_now_ms(); return cudaSuccess; }
static inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(b->ms - a->ms);
  return cudaSuccess;
}
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  memset(p, 0, sizeof *p);
  strcpy(p->name, "Host Emulator");
  return cudaSuccess;
}
