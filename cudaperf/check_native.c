/* One-pass float output check for cudaperf.check.compare (trusted code, loaded into the harness).

   Same element rule as the numpy path in check.py, evaluated in double:
     scale  = max(max finite |ref|, tiny)                 (first pass)
     both finite:   bad = |o - r| > atol*scale + rtol*|r|;  sums, max abs/rel errors
     otherwise:     bad unless both are the same non-finite value (NaN with NaN, inf with same inf)
   and the poison count of the output's bit pattern. Why C: the numpy path makes ~10 passes over
   every output with float64 temporaries while holding the interpreter lock between calls; with a
   dozen harness threads checking outputs of hundreds of MB this was a third of verification time.
   ctypes releases the interpreter lock for the whole call.
   Built with -ffp-contract=off so no fused multiply-add changes a comparison's rounding. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int64_t n_bad, first_bad, n_nan, unwritten;
    double max_abs, max_rel, ss_d, ss_r, scale;
    int64_t nonfinite_bad;
} cp_result;

#define DEFINE_CHECK(NAME, OT, RT, UT, POISON)                                                   \
static void NAME(const OT *out, const RT *ref, int64_t n, double atol, double rtol, double tiny, \
                 cp_result *res) {                                                               \
    double scale = 0.0;                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                            \
        double a = fabs((double)ref[i]);                                                         \
        scale = (a <= DBL_MAX && a > scale) ? a : scale; /* finite only: NaN fails <= */         \
    }                                                                                            \
    if (scale < tiny) scale = tiny;                                                              \
    const double abs_tol = atol * scale, floor_rel = 1e-6 * scale;                               \
    int64_t n_bad = 0, first = -1, n_nan = 0, unwritten = 0, nonfinite_bad = 0, finite = 1;      \
    double max_abs = 0.0, max_rel = 0.0, ss_d = 0.0, ss_r = 0.0;                                 \
    /* Fast pass, no branches on data: right whenever every element of both is finite. */        \
    for (int64_t i = 0; i < n; i++) {                                                            \
        UT bits;                                                                                 \
        memcpy(&bits, &out[i], sizeof bits);                                                     \
        unwritten += bits == (UT)(POISON);                                                       \
        double o = (double)out[i], r = (double)ref[i];                                           \
        double d = fabs(o - r), ar = fabs(r);                                                    \
        finite &= (fabs(o) <= DBL_MAX) & (ar <= DBL_MAX);                                        \
        n_bad += d > abs_tol + rtol * ar;                                                        \
        ss_r += r * r;                                                                           \
        ss_d += d * d;                                                                           \
        max_abs = d > max_abs ? d : max_abs;                                                     \
        double rel = d / (ar > floor_rel ? ar : floor_rel);                                      \
        max_rel = rel > max_rel ? rel : max_rel;                                                 \
    }                                                                                            \
    if (!finite) { /* NaN/inf somewhere: the exact per-element rule */                           \
        n_bad = 0; max_abs = max_rel = ss_d = ss_r = 0.0;                                        \
        for (int64_t i = 0; i < n; i++) {                                                        \
            double o = (double)out[i], r = (double)ref[i];                                       \
            int fr = isfinite(r), fo = isfinite(o), bad;                                         \
            n_nan += isnan(o) != 0;                                                              \
            if (fr && fo) {                                                                      \
                double d = fabs(o - r), ar = fabs(r);                                            \
                bad = d > abs_tol + rtol * ar;                                                   \
                ss_r += r * r;                                                                   \
                ss_d += d * d;                                                                   \
                if (d > max_abs) max_abs = d;                                                    \
                double rel = d / (ar > floor_rel ? ar : floor_rel);                              \
                if (rel > max_rel) max_rel = rel;                                                \
            } else {                                                                             \
                bad = fr ? 1 : !((isnan(r) && isnan(o)) || r == o);                              \
                nonfinite_bad |= bad;                                                            \
            }                                                                                    \
            n_bad += bad;                                                                        \
        }                                                                                        \
    }                                                                                            \
    if (n_bad) { /* the first bad element, by the same rule (rare: only wrong outputs) */        \
        for (int64_t i = 0; i < n && first < 0; i++) {                                           \
            double o = (double)out[i], r = (double)ref[i];                                       \
            int fr = isfinite(r), fo = isfinite(o);                                              \
            int bad = (fr && fo) ? fabs(o - r) > abs_tol + rtol * fabs(r)                        \
                                 : (fr ? 1 : !((isnan(r) && isnan(o)) || r == o));               \
            if (bad) first = i;                                                                  \
        }                                                                                        \
    }                                                                                            \
    res->n_bad = n_bad; res->first_bad = first; res->n_nan = n_nan; res->unwritten = unwritten;  \
    res->max_abs = max_abs; res->max_rel = max_rel; res->ss_d = ss_d; res->ss_r = ss_r;          \
    res->scale = scale; res->nonfinite_bad = nonfinite_bad;                                      \
}

DEFINE_CHECK(check_ff, float, float, uint32_t, 0x7FC0DEADu)
DEFINE_CHECK(check_fd, float, double, uint32_t, 0x7FC0DEADu)
DEFINE_CHECK(check_df, double, float, uint64_t, 0x7FF8DEAD7FC0DEADull)
DEFINE_CHECK(check_dd, double, double, uint64_t, 0x7FF8DEAD7FC0DEADull)

/* out_size / ref_size: element sizes in bytes (4 or 8). Returns 0, or -1 for an unknown pair. */
int cudaperf_check_float(const void *out, int out_size, const void *ref, int ref_size, int64_t n,
                         double atol, double rtol, double tiny, cp_result *res) {
    if (out_size == 4 && ref_size == 4) check_ff(out, ref, n, atol, rtol, tiny, res);
    else if (out_size == 4 && ref_size == 8) check_fd(out, ref, n, atol, rtol, tiny, res);
    else if (out_size == 8 && ref_size == 4) check_df(out, ref, n, atol, rtol, tiny, res);
    else if (out_size == 8 && ref_size == 8) check_dd(out, ref, n, atol, rtol, tiny, res);
    else return -1;
    return 0;
}
