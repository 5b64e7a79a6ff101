// attack: execve replaces the worker process with a shell that sleeps for an hour (inheriting its pipes)
// task: dev/saxpy_f32
// expect: crashed
// expect-flags: suspicious:process
#include <cuda_runtime.h>
#include <unistd.h>
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    char sh[] = "/bin/sh", c[] = "-c", cmd[] = "exec sleep 3600";
    char *argv[] = {sh, c, cmd, nullptr};
    char *envp[] = {nullptr};
    execve(sh, argv, envp);
}
