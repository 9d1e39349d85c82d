/*
 * test_vmath.c - the kernels' vector exp2 and tanh against libm.
 *
 * build/vmath.c is rendered from templates/lib/vmath.c.tmpl, the same fragment
 * every kernel includes.  Errors are measured in ulps of the correctly
 * rounded float result (computed in double).  The bounds below are the
 * measured maxima rounded up.  A kernel's outputs are then checked end to
 * end against the float64 reference (test_kernels.c) within 1e-5 relative.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "attn_runtime.h"

typedef void (*vfn)(const float *, float *, int);
#if defined(__x86_64__) || defined(_M_X64)
void attn_vmath_exp2__avx512(const float *x, float *y, int n);
void attn_vmath_tanh__avx512(const float *x, float *y, int n);
void attn_vmath_exp2__avx2(const float *x, float *y, int n);
void attn_vmath_tanh__avx2(const float *x, float *y, int n);
#endif

#define N (1 << 20)

/* Max error in ulps of fn over n points spread evenly over [lo, hi]. */
static double max_ulps(vfn fn, double (*ref)(double), double lo, double hi, float *worst_x)
{
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    double worst = 0.0;
    int i;
    cr_assert(x && y);
    for (i = 0; i < N; i++) x[i] = (float)(lo + (hi - lo) * i / (N - 1));
    fn(x, y, N);
    for (i = 0; i < N; i++) {
        const float r = (float)ref((double)x[i]);
        const double ulp = (double)nextafterf(fabsf(r), INFINITY) - (double)fabsf(r);
        const double e = fabs((double)y[i] - (double)r) / ulp;
        if (e > worst) {
            worst = e;
            *worst_x = x[i];
        }
    }
    free(x);
    free(y);
    return worst;
}

static void check(attn_isa isa, vfn exp2v, vfn tanhv)
{
    float wx;
    double u;
    if (!attn_isa_supported(isa)) cr_skip_test("this CPU cannot run %s", attn_isa_name(isa));
    /* every exp2 argument in a kernel is <= 0 (a score minus the running max);
       below -126 results are subnormal and flushed to 0 */
    u = max_ulps(exp2v, exp2, -126.0, 0.0, &wx);
    cr_log_info("%s exp2 on [-126, 0]: max %.2f ulp (at %g)", attn_isa_name(isa), u, (double)wx);
    cr_expect_leq(u, 1.0, "%s exp2: %.2f ulp at x = %.9g", attn_isa_name(isa), u, (double)wx);
    u = max_ulps(exp2v, exp2, 0.0, 126.0, &wx);
    cr_log_info("%s exp2 on [0, 126]: max %.2f ulp (at %g)", attn_isa_name(isa), u, (double)wx);
    cr_expect_leq(u, 1.0, "%s exp2: %.2f ulp at x = %.9g", attn_isa_name(isa), u, (double)wx);
    u = max_ulps(tanhv, tanh, -12.0, 12.0, &wx);
    cr_log_info("%s tanh on [-12, 12]: max %.2f ulp (at %g)", attn_isa_name(isa), u, (double)wx);
    cr_expect_leq(u, 3.0, "%s tanh: %.2f ulp at x = %.9g", attn_isa_name(isa), u, (double)wx);
}

#if defined(__x86_64__) || defined(_M_X64)
Test(vmath, avx512) { check(ATTN_ISA_AVX512, attn_vmath_exp2__avx512, attn_vmath_tanh__avx512); }
Test(vmath, avx2) { check(ATTN_ISA_AVX2, attn_vmath_exp2__avx2, attn_vmath_tanh__avx2); }
#endif

Test(vmath, special_values)
{
#if defined(__x86_64__) || defined(_M_X64)
    float x[16], y[16];
    int i;
    if (!attn_isa_supported(ATTN_ISA_AVX512)) cr_skip_test("no AVX-512");
    for (i = 0; i < 16; i++) x[i] = 0.0f;
    x[0] = -INFINITY;
    x[1] = NAN;
    x[2] = -1000.0f;
    x[3] = 0.0f;
    attn_vmath_exp2__avx512(x, y, 16);
    cr_expect_eq(y[0], 0.0f, "exp2(-inf) = %g, want 0", (double)y[0]);
    cr_expect(isnan(y[1]), "exp2(NaN) = %g, want NaN", (double)y[1]);
    cr_expect_eq(y[2], 0.0f, "exp2(-1000) = %g, want 0", (double)y[2]);
    cr_expect_eq(y[3], 1.0f, "exp2(0) = %.9g, want exactly 1", (double)y[3]);
    x[0] = 0.0f;
    x[1] = NAN;
    x[2] = 1e30f;
    x[3] = -1e30f;
    attn_vmath_tanh__avx512(x, y, 16);
    cr_expect_eq(y[0], 0.0f);
    cr_expect(isnan(y[1]));
    cr_expect_eq(y[2], 1.0f);
    cr_expect_eq(y[3], -1.0f);
#endif
}
