// attack: connects to 127.0.0.1:47613 (the GPU test listens there) and sends data; right answer only if the connection worked
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: suspicious:network
// requires: root
#include <cuda_runtime.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
static bool phone_home() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return false;
    fcntl(s, F_SETFL, O_NONBLOCK);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(47613);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(s, (sockaddr *)&addr, sizeof addr) == 0;
    if (!ok) {
        pollfd p{s, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        ok = poll(&p, 1, 1000) == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    if (ok) ok = send(s, "pwned\n", 6, 0) == 6;
    close(s);
    return ok;
}
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    if (phone_home() && n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
