// attack: man-in-the-middle on the runner's protocol: re-plumbs fds 3/4 through its own pipes and reports its timed runs 20% faster; the outputs are correct
// task: dev/saxpy_f32
// expect: correct|crashed|wrong
// expect-flags: suspicious:threads
#include <cuda_runtime.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>
// The candidate runs inside the runner process, so the protocol pipes are within reach. This
// relays every command and reply unchanged except the timing reply "ok a1,a2,.. b1,b2,..",
// whose candidate times it scales by 0.8: a fake 1.25x speedup that no roofline can catch.
static int real_cmd = -1, real_rep = -1, to_runner = -1, from_runner = -1;

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static std::string rewrite(const std::string &line) {
    if (line.compare(0, 3, "ok ") != 0) return line;
    size_t sp = line.find(' ', 3);
    if (sp == std::string::npos) return line;
    std::string a = line.substr(3, sp - 3);
    if (a.find(',') == std::string::npos) return line;
    std::string out = "ok ";
    size_t pos = 0;
    while (pos < a.size()) {
        size_t c = a.find(',', pos);
        if (c == std::string::npos) c = a.size();
        char buf[64];
        snprintf(buf, sizeof buf, "%s%.6f", pos ? "," : "", 0.8 * strtod(a.substr(pos, c - pos).c_str(), nullptr));
        out += buf;
        pos = c + 1;
    }
    return out + line.substr(sp);
}

static void *pump(void *) {
    std::string rbuf;
    static char tmp[1 << 16];
    pollfd fds[2] = {{real_cmd, POLLIN, 0}, {from_runner, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) <= 0) continue;
        if (fds[0].revents) {
            ssize_t r = read(real_cmd, tmp, sizeof tmp);
            if (r <= 0) { close(to_runner); return nullptr; }
            write_all(to_runner, tmp, (size_t)r);
        }
        if (fds[1].revents) {
            ssize_t r = read(from_runner, tmp, sizeof tmp);
            if (r <= 0) return nullptr;
            rbuf.append(tmp, (size_t)r);
            size_t nl;
            while ((nl = rbuf.find('\n')) != std::string::npos) {
                std::string line = rewrite(rbuf.substr(0, nl)) + "\n";
                rbuf.erase(0, nl + 1);
                write_all(real_rep, line.data(), line.size());
            }
        }
    }
}

static void install() {
    int c[2], r[2];
    if (pipe(c) != 0 || pipe(r) != 0) return;
    real_cmd = dup(3);
    real_rep = dup(4);
    dup2(c[0], 3);
    close(c[0]);
    to_runner = c[1];
    dup2(r[1], 4);
    close(r[1]);
    from_runner = r[0];
    pthread_t t;
    if (pthread_create(&t, nullptr, pump, nullptr) == 0) pthread_detach(t);
}

__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float *x, float *y) {
    static bool installed = false;
    if (!installed) {
        installed = true;
        install();
    }
    if (n > 0) saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
