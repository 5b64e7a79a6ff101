"""Static suspicion scan: each flag fires on real hostile snippets, never on comments/strings."""
from __future__ import annotations

import time

import pytest

from cudaperf.devtasks import dev_tasks
from cudaperf.scan import scan_source, strip_source

CASES = {
    "process": 'extern "C" void f() { system("rm -rf /"); }',
    "file_io": "void f() { FILE *h = fopen(\"/etc/passwd\", \"r\"); }",
    "network": "void f() { int s = socket(2, 1, 0); connect(s, 0, 0); }",
    "timing_api": "void f() { cudaEvent_t e; cudaEventCreate(&e); }",
    "device_reset": "void f() { cudaDeviceReset(); }",
    "side_stream": "void f() { cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }",
    "load_time": "__attribute__((constructor)) static void warm() {}",
    "inline_asm": 'void f() { asm volatile("rdtsc" : : : "rax", "rdx"); }',
    "dlopen": 'void f() { void *h = dlopen("libcuda.so", 2); }',
    "sleep": "void f() { usleep(1000); }",
    "static_cache": "static float *cached_result = nullptr;\nvoid f(float *y) { if (cached_result) return; }",
    "printf": '__global__ void k() { printf("%d", threadIdx.x); }',
    "exit": "void f() { exit(0); }",
    "env": 'void f() { char *t = getenv("HF_TOKEN"); }',
    "obfuscation": "#define CAT(a, b) a##b\nvoid f() { CAT(sys, tem)(\"ls\"); }",
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_flag_fires(kind):
    assert f"suspicious:{kind}" in scan_source(CASES[kind])


def test_dev_variants_are_clean():
    for t in dev_tasks():
        for v in t.variants:
            assert scan_source(v.source) == [], (t.task_id, v.name, scan_source(v.source))


def test_comments_and_strings_do_not_flag():
    src = '''
// system("x"); fopen usleep cudaDeviceReset
/* printf("hi"); socket(); dlopen(); static float *p; */
const char *msg = "fork() and exec() and cudaEventCreate()";
__global__ void k(float *y) { char c = '"'; y[0] = 1.0f; } // "unterminated
static __device__ __forceinline__ float sq(float x) { return x * x; }
static const int N = 4;
'''
    assert scan_source(src) == []


def test_ptx_inline_asm_is_allowed_but_classified():
    ptx = '__device__ float ld(const float *p) { float v; asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v; }'
    assert scan_source(ptx) == []
    timer = '__device__ unsigned long long t() { unsigned long long v; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v)); return v; }'
    assert "suspicious:timing_api" in scan_source(timer) and "suspicious:inline_asm" not in scan_source(timer)
    x86 = 'void f() { __asm__ __volatile__("movq $60, %%rax\\n syscall" ::: "rax"); }'
    assert "suspicious:inline_asm" in scan_source(x86)


def test_line_continuation_and_headers():
    assert "suspicious:process" in scan_source("void f() { sys\\\ntem(\"ls\"); }")
    assert "suspicious:network" in scan_source("#include <sys/socket.h>\n")
    assert "suspicious:dlopen" in scan_source("#include <dlfcn.h>\n")
    assert scan_source("#include <cuda_runtime.h>\n#include <cstdio>\n") == []


def test_static_local_cache_and_strip():
    src = 'extern "C" void f(float *y) { static bool done = false; if (done) return; done = true; }'
    assert "suspicious:static_cache" in scan_source(src)
    code, asm = strip_source('int a; /* x\ny */ const char *s = R"(printf("x"))"; asm("mov.u32 %0, 1;" : "=r"(a));')
    assert "printf" not in code and code.count("\n") == 1 and asm == ["mov.u32 %0, 1;"]


def test_fast_on_large_source():
    src = "\n".join(f"__global__ void k{i}(float *y) {{ y[{i}] = {i}.0f; }} // note {i}" for i in range(3000))
    t0 = time.monotonic()
    assert scan_source(src) == []
    assert time.monotonic() - t0 < 2.0


def test_device_scratch_is_not_a_host_cache():
    """Static __device__ arrays (reduction scratch) are flagged apart from host statics, which
    the harness treats as memoisation and withholds speed reward for."""
    assert scan_source("static __device__ float part[256];") == ["suspicious:device_state"]
    assert scan_source("__device__ static int part[4];") == ["suspicious:device_state"]
    assert scan_source("static float *last_out = 0;") == ["suspicious:static_cache"]
    assert scan_source("void f() { static int calls = 0; calls++; }") == ["suspicious:static_cache"]
