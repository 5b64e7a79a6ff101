"""Static suspicion flags for candidate CUDA source (pure, no compiler, microseconds).

`scan_source` returns sorted, de-duplicated ``"suspicious:<kind>"`` flags. It first joins
backslash-continued lines, then removes comments, string and character literals (keeping the
templates of inline ``asm`` statements, which it classifies separately), so a word inside a
comment or a message string never raises a flag. It is a tripwire, not a proof: macro pasting
(flagged itself as ``suspicious:obfuscation``) or code generated at run time can evade it; the
sandbox and the harness' dynamic checks are what actually contain a candidate.
"""
from __future__ import annotations

import re

FLAGS = ("process", "file_io", "network", "timing_api", "device_reset", "side_stream", "load_time",
         "inline_asm", "dlopen", "sleep", "static_cache", "printf", "exit", "env", "threads",
         "signal", "obfuscation", "fd_tamper", "privilege", "device_state")


def _w(*names: str) -> str:
    return r"\b(?:" + "|".join(names) + r")\b"


def _call(*names: str) -> str:
    return r"\b(?:" + "|".join(names) + r")\s*\("


_PATTERNS: dict[str, re.Pattern] = {k: re.compile(v) for k, v in {
    "process": _call("fork", "vfork", "execl", "execlp", "execle", "execv", "execvp", "execvpe", "execve",
                     "fexecve", "system", "popen", "kill", "killpg", "posix_spawn", "posix_spawnp", "clone",
                     "syscall", "ptrace"),
    "file_io": _call("fopen", "freopen", "open", "openat", "creat", "fdopen", "mmap", "unlink", "remove",
                     "rename", "truncate", "ftruncate", "mkdir", "opendir", "chmod")
               + "|" + _w("ifstream", "ofstream", "fstream", "filebuf"),
    "network": _call("socket", "connect", "bind", "listen", "accept", "gethostbyname", "getaddrinfo",
                     "sendto", "recvfrom", "inet_addr", "inet_pton"),
    "timing_api": r"\bcu(?:da)?Event\w*|\bcu(?:da)?Profiler\w*|"
                  + _call("clock_settime", "settimeofday", "adjtime", "clock_gettime", "gettimeofday", "clock",
                          "clock64", "time", "rdtsc", "__rdtsc")
                  + r"|\bstd\s*::\s*chrono\b|\bcupti\w*",
    "device_reset": _w("cudaDeviceReset", "cudaSetDevice", "cudaSetDeviceFlags", "cudaThreadExit",
                       "cuCtxCreate\\w*", "cuCtxDestroy\\w*", "cuCtxSetCurrent", "cuDevicePrimaryCtxReset\\w*",
                       "cudaDeviceSetLimit"),
    "side_stream": r"\bcu(?:da)?StreamCreate\w*|" + _w("cudaStreamPerThread", "cudaStreamNonBlocking",
                                                       "cudaLaunchHostFunc", "cudaStreamAddCallback",
                                                       "cudaGraphLaunch"),
    "load_time": r"__attribute__\s*\(\(\s*(?:__)?(?:constructor|destructor)|\.init_array|\.ctors",
    "dlopen": _w("dlopen", "dlsym", "dlmopen", "dlvsym", "RTLD_\\w+", "LoadLibrary\\w*"),
    "sleep": _call("sleep", "usleep", "nanosleep", "__nanosleep", "clock_nanosleep", "sleep_for", "sleep_until",
                   "Sleep", "pause", "sched_yield"),
    "printf": _call("printf", "fprintf", "puts", "putchar", "fputs", "fwrite", "perror", "write")
              + r"|\bstd\s*::\s*(?:cout|cerr|clog|printf)\b",
    "exit": _call("exit", "_exit", "_Exit", "abort", "quick_exit", "terminate", "__trap", "raise")
            + r"|\bstd\s*::\s*(?:exit|abort|terminate)\b",
    "env": _call("getenv", "secure_getenv", "setenv", "putenv", "unsetenv") + r"|\benviron\b",
    "threads": _call("pthread_create") + r"|\bstd\s*::\s*(?:thread|async|jthread)\b",
    "signal": _call("signal", "sigaction", "alarm", "setitimer", "setrlimit", "prctl"),
    # The runner speaks to the harness on fds 3 and 4: touching descriptors directly is the
    # first step of forging its replies.
    "fd_tamper": _call("dup", "dup2", "dup3", "close", "close_range", "fcntl", "pwrite", "pwrite64",
                       "writev", "pwritev", "sendmsg", "read", "pread", "readv", "ioctl", "select",
                       "poll", "epoll_create", "epoll_wait") + r"|/proc/self|/dev/fd",
    "privilege": _call("setuid", "setgid", "seteuid", "setegid", "setresuid", "setresgid", "setreuid",
                       "setregid", "setgroups", "capset", "unshare", "setns", "mount", "umount", "umount2",
                       "chroot", "pivot_root"),
}.items()}

_HEADER_FLAGS = {
    "sys/socket.h": "network", "netinet/": "network", "arpa/inet.h": "network", "netdb.h": "network",
    "dlfcn.h": "dlopen", "spawn.h": "process", "sys/wait.h": "process", "signal.h": "signal",
    "sys/resource.h": "signal", "sys/ptrace.h": "process", "cupti": "timing_api", "cuda_profiler_api.h": "timing_api",
    "thread": "threads", "pthread.h": "threads", "fstream": "file_io", "sys/mman.h": "file_io",
}

_RE_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__|goto|inline)?\s*"
                     r"(?:volatile|__volatile__)?\s*\(")
_RE_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"]", re.M)
# PTX: dotted opcodes (ld.global.nc.f32, shfl.sync.bfly.b32, mov.u32), %0 operands, PTX regs
_RE_PTX = re.compile(r"\b[a-z][a-z0-9_]*\.[a-z0-9_.]+|%%?[0-9]|\{|\}|%%?(?:tid|ntid|laneid|warpid|smid|nsmid)\b")
_RE_X86 = re.compile(r"\b(?:syscall|sysenter|rdtscp?|cpuid|int\s+\$?0x80|int3|hlt|wrmsr|rdmsr|vmcall)\b|"
                     r"%%?[re]?(?:ax|bx|cx|dx|si|di|sp|bp)\b|%%?r(?:8|9|1[0-5])\b")
_RE_STATIC = re.compile(r"\bstatic\b")


def strip_source(src: str) -> tuple[str, list[str]]:
    """Remove comments and literals (keeping line structure); return code and asm templates.

    Every string literal becomes ``""`` and every character literal ``' '``; the string
    literals inside each ``asm(...)`` statement are returned concatenated, one text per statement.
    """
    src = src.replace("\\\r\n", "").replace("\\\n", "")
    out: list[str] = []
    literals: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            seg = src[i:n if j < 0 else j + 2]
            out.append("\n" * seg.count("\n") or " ")
            i = n if j < 0 else j + 2
            continue
        if c == "R" and src.startswith('R"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', src[i:i + 20])
            if m:
                end = src.find(")" + m.group(1) + '"', i + m.end())
                literals.append(src[i + m.end():n if end < 0 else end])
                out.append(f'"\x01{len(literals) - 1}\x02"')
                i = n if end < 0 else end + len(m.group(1)) + 2
                continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            if c == '"':
                literals.append(src[i + 1:j])
                out.append(f'"\x01{len(literals) - 1}\x02"')
            else:
                out.append("' '")
            i = j + 1
            continue
        out.append(c)
        i += 1
    code = "".join(out)
    asm_texts: list[str] = []
    for m in _RE_ASM.finditer(code):
        depth, j = 1, m.end()
        while j < len(code) and depth:  # the template ends at the first top-level ':' or ')'
            depth += code[j] == "("
            depth -= code[j] == ")"
            if depth == 1 and code[j] == ":":
                break
            j += 1
        asm_texts.append("".join(literals[int(k)] for k in re.findall("\x01(\\d+)\x02", code[m.end():j])))
    return re.sub("\x01\\d+\x02", "", code), asm_texts


def _is_static_variable(code: str, pos: int) -> bool:
    """Whether the ``static`` at `pos` declares a mutable variable (not a function/constant)."""
    m = re.compile(r"[;{}(=\[,]").search(code, pos)
    if not m:
        return False
    decl = code[pos:m.start()]
    stop = m.group()
    if stop in "({}":  # function (or a struct body): not a cached value
        return False
    words = set(re.findall(r"\w+", decl))
    if words & {"constexpr", "__global__", "inline", "__forceinline__", "__inline__", "static_assert"}:
        return False
    if "const" in words and "*" not in decl:
        return False
    return True


def scan_source(source: str) -> list[str]:
    """Sorted ``suspicious:*`` flags for a candidate's CUDA source (see module docstring)."""
    flags: set[str] = set()
    for inc in _RE_INCLUDE.findall(source.replace("\\\n", "")):
        for key, kind in _HEADER_FLAGS.items():
            if (inc == key) if "/" not in key and "." not in key and key != "cupti" else key in inc:
                flags.add(kind)
    code, asm_texts = strip_source(source)
    code = _RE_INCLUDE.sub("", code)
    for kind, pat in _PATTERNS.items():
        if pat.search(code):
            flags.add(kind)
    for text in asm_texts:
        if _RE_X86.search(text) or not _RE_PTX.search(text):
            flags.add("inline_asm")  # host (x86) assembly, or nothing recognisable as PTX
        if re.search(r"%(?:globaltimer\w*|clock(?:64)?)\b", text):
            flags.add("timing_api")
        if re.search(r"\bnanosleep\b", text):
            flags.add("sleep")
        if re.search(r"\b(?:trap|exit|brkpt)\b", text):
            flags.add("exit")
    if "##" in code:
        flags.add("obfuscation")
    for m in _RE_STATIC.finditer(code):
        if _is_static_variable(code, m.end()):
            # Static device arrays are the usual home of scratch space (partial sums of a
            # reduction); host statics are what memoises results across calls.
            before = re.split(r"[;{}\n]", code[max(0, m.start() - 80):m.start()])[-1]
            after = re.split(r"[;{}(=\[,]", code[m.end():m.end() + 200])[0]
            device = re.search(r"\b(?:__device__|__constant__|__shared__|__managed__)\b", before + " " + after)
            flags.add("device_state" if device else "static_cache")
    return sorted(f"suspicious:{f}" for f in flags)
