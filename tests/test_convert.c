/*
 * test_convert.c - the storage-type conversions of the runtime
 * (attn_f32_to_bf16, attn_bf16_to_f32, attn_f32_to_f16, attn_f16_to_f32 and
 * their array forms), and the verification harness on kernels that store
 * bf16 and f16.
 *
 * The conversions are checked against a model written differently from the
 * implementation: the runtime works on bit patterns with integer carries;
 * the model works on values in double arithmetic.  A stored pattern's value
 * comes from its definition (sign, exponent, significand via ldexp), and
 * narrowing x takes the two representable neighbours of |x| (the multiples
 * of the format's quantum at x's binade, by frexp/ldexp/floor, all exact in
 * double) and picks the nearer, a tie going to the even significand;
 * anything that rounds to 2^(emax+1) is infinity.  Covered: every f16 and
 * every bf16 pattern widened and narrowed back, every halfway point between
 * neighbouring finite values (and the f32 values on either side of it),
 * NaN (quiet, sign kept), infinities, f16 overflow (65519.99, 65520, 1e5,
 * FLT_MAX), f16 subnormals, bf16 of f32 subnormals, and millions of random
 * f32 bit patterns.  And .npy files of float16 ('<f2') written and read
 * back as stored.
 *
 * The harness (suite convert_harness): attn_verify_case and
 * attn_verify_bitwise_threads on a stand-in kernel for each mix of storage
 * types, one that widens its stored inputs, runs the float64 reference and
 * rounds O to its storage type: the harness must accept it (one rounding of
 * O is within the stated tolerance) and must reject the same kernel when it
 * truncates a bf16 O instead of rounding it, rounds an f16 O to bf16's
 * precision first, or computes on other inputs than the stored ones.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "attn_npy.h"
#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"

/* ---- the model ------------------------------------------------------------ */

/* A binary floating-point format: p significant bits (the implicit one
   included), normal numbers from 2^emin up to below 2^(emax + 1). */
typedef struct {
    const char *name;
    int p, emin, emax;
    int exp_bits, man_bits; /* the stored fields */
} format;

static const format F16 = { "f16", 11, -14, 15, 5, 10 };
static const format BF16 = { "bf16", 8, -126, 127, 8, 7 };

/* The value of a stored pattern, by the definition of the format. */
static double model_value(const format *f, uint16_t h)
{
    const int sign = h >> (f->exp_bits + f->man_bits);
    const int e = (h >> f->man_bits) & ((1 << f->exp_bits) - 1);
    const int m = h & ((1 << f->man_bits) - 1);
    const int bias = (1 << (f->exp_bits - 1)) - 1;
    double v;
    if (e == (1 << f->exp_bits) - 1)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - f->man_bits);
    else
        v = ldexp((double)((1 << f->man_bits) + m), e - bias - f->man_bits);
    return sign ? -v : v;
}

static int model_is_nan(const format *f, uint16_t h)
{
    const int e = (h >> f->man_bits) & ((1 << f->exp_bits) - 1);
    return e == (1 << f->exp_bits) - 1 && (h & ((1 << f->man_bits) - 1)) != 0;
}

/* x (finite, as a double) rounded to the format: nearest, ties to even. */
static double model_round(const format *f, double x)
{
    const double a = fabs(x);
    double q, lo, hi, r;
    int e;
    if (a == 0.0)
        return x;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    /* the spacing of the format at a: 2^(e-1) / 2^(p-1), or the subnormal
       quantum 2^(emin - p + 1) below 2^emin */
    q = e - 1 < f->emin ? ldexp(1.0, f->emin - f->p + 1) : ldexp(1.0, e - f->p);
    lo = floor(a / q) * q;
    hi = lo + q;
    if (a - lo < hi - a)
        r = lo;
    else if (a - lo > hi - a)
        r = hi;
    else
        r = fmod(lo / q, 2.0) == 0.0 ? lo : hi;
    if (r >= ldexp(1.0, f->emax + 1))
        r = INFINITY;
    return x < 0 ? -r : r;
}

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint16_t narrow(const format *f, float x)
{
    return f == &F16 ? attn_f32_to_f16(x) : attn_f32_to_bf16(x);
}

static float widen(const format *f, uint16_t h)
{
    return f == &F16 ? attn_f16_to_f32(h) : attn_bf16_to_f32(h);
}

/* The quiet bit of a NaN's payload, and where the sign is. */
static uint16_t quiet_bit(const format *f)
{
    return (uint16_t)(1u << (f->man_bits - 1));
}

static int sign_of(const format *f, uint16_t h)
{
    return h >> (f->exp_bits + f->man_bits);
}

/* Checks narrowing x against the model; 0 when right, else a message in
   buf.  NaN: a quiet NaN, the sign and the top bits of the payload kept. */
static int check_narrow(const format *f, float x, char *buf, size_t len)
{
    const uint16_t got = narrow(f, x);
    const uint32_t u = bits_of(x);
    if (isnan(x)) {
        const uint16_t want_payload =
            (uint16_t)(((u & 0x007fffffu) >> (23 - f->man_bits)) | quiet_bit(f));
        if (!model_is_nan(f, got) || !(got & quiet_bit(f)) || sign_of(f, got) != (int)(u >> 31) ||
            (got & ((1u << f->man_bits) - 1)) != want_payload) {
            snprintf(buf, len, "%s(NaN 0x%08x) = 0x%04x, want a quiet NaN 0x%04x with the sign", f->name,
                     (unsigned)u, (unsigned)got,
                     (unsigned)(((u >> 31) << (f->exp_bits + f->man_bits)) |
                                (((1u << f->exp_bits) - 1) << f->man_bits) | want_payload));
            return 1;
        }
        return 0;
    }
    {
        const double want = model_round(f, (double)x);
        const double have = model_value(f, got);
        if (model_is_nan(f, got) || have != want || sign_of(f, got) != (int)(u >> 31)) {
            snprintf(buf, len, "%s(%.9g = 0x%08x) = 0x%04x (%.9g), want %.9g", f->name, (double)x, (unsigned)u,
                     (unsigned)got, have, want);
            return 1;
        }
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- every 16-bit pattern --------------------------------------------------- */

/* Widening is exact: the value of every pattern, the sign of zeros, and a
   NaN's payload moved to the top of the f32 payload. */
static void widen_every_pattern(const format *f)
{
    uint32_t h;
    int bad = 0;
    for (h = 0; h < 65536; h++) {
        const float got = widen(f, (uint16_t)h);
        const uint32_t gbits = bits_of(got);
        if (model_is_nan(f, (uint16_t)h)) {
            const uint32_t want = ((h >> (f->exp_bits + f->man_bits)) << 31) | 0x7f800000u |
                                  ((h & ((1u << f->man_bits) - 1)) << (23 - f->man_bits));
            if (gbits != want && bad++ < 5)
                cr_log_error("%s 0x%04x (NaN) widened to 0x%08x, want 0x%08x", f->name, (unsigned)h,
                             (unsigned)gbits, (unsigned)want);
        } else {
            const double want = model_value(f, (uint16_t)h);
            if (((double)got != want || (int)(gbits >> 31) != sign_of(f, (uint16_t)h)) && bad++ < 5)
                cr_log_error("%s 0x%04x widened to %.9g (0x%08x), want %.9g", f->name, (unsigned)h, (double)got,
                             (unsigned)gbits, want);
        }
    }
    cr_expect_eq(bad, 0, "%s: %d of 65536 patterns widen wrongly", f->name, bad);
}

/* narrow(widen(h)) == h for every pattern but NaN, which comes back quiet
   with its payload (an f16 or bf16 NaN's payload fits in f32's). */
static void round_trip_every_pattern(const format *f)
{
    uint32_t h;
    int bad = 0;
    for (h = 0; h < 65536; h++) {
        const uint16_t back = narrow(f, widen(f, (uint16_t)h));
        const uint16_t want = model_is_nan(f, (uint16_t)h) ? (uint16_t)(h | quiet_bit(f)) : (uint16_t)h;
        if (back != want && bad++ < 5)
            cr_log_error("%s 0x%04x -> f32 -> 0x%04x, want 0x%04x", f->name, (unsigned)h, (unsigned)back,
                         (unsigned)want);
    }
    cr_expect_eq(bad, 0, "%s: %d of 65536 patterns do not come back", f->name, bad);
}

Test(convert, f16_widens_every_pattern_exactly) { widen_every_pattern(&F16); }
Test(convert, bf16_widens_every_pattern_exactly) { widen_every_pattern(&BF16); }
Test(convert, f16_round_trips_every_pattern) { round_trip_every_pattern(&F16); }
Test(convert, bf16_round_trips_every_pattern) { round_trip_every_pattern(&BF16); }

/* ---- ties: every halfway point ---------------------------------------------- */

/* For each pair of neighbouring non-negative finite patterns h, h + 1 (and
   the largest finite one and infinity): their midpoint, exactly halfway,
   must go to the one with the even significand, and the f32 values just
   below and above it to h and h + 1; both signs.  The midpoint has one
   more significant bit than the format, so f32 holds it exactly. */
static void every_tie(const format *f)
{
    const uint16_t inf = (uint16_t)(((1u << f->exp_bits) - 1) << f->man_bits);
    char msg[256];
    uint32_t h;
    int bad = 0, s, checked = 0;
    for (h = 0; h < inf; h++) {
        const double lo = model_value(f, (uint16_t)h);
        /* past the largest finite value the next step is 2^(emax+1): inf */
        const double hi = h + 1 == inf ? ldexp(1.0, f->emax + 1) : model_value(f, (uint16_t)(h + 1));
        const double mid = (lo + hi) / 2;
        const float m = (float)mid;
        const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if ((double)m != mid) { /* would be a bug in this test */
            cr_log_error("%s: the midpoint %.17g of 0x%04x is not an f32", f->name, mid, (unsigned)h);
            bad++;
            continue;
        }
        for (s = 0; s < 2; s++) {
            const float sm = s ? -m : m;
            const uint16_t sign = (uint16_t)(s ? 1u << (f->exp_bits + f->man_bits) : 0u);
            const float below = nextafterf(sm, 0.0f), above = nextafterf(sm, s ? -INFINITY : INFINITY);
            if (narrow(f, sm) != (even | sign) && bad++ < 5)
                cr_log_error("%s(%.9g), halfway between 0x%04x and 0x%04x: 0x%04x, want 0x%04x", f->name,
                             (double)sm, (unsigned)(h | sign), (unsigned)((h + 1) | sign),
                             (unsigned)narrow(f, sm), (unsigned)(even | sign));
            if (narrow(f, below) != (h | sign) && bad++ < 5)
                cr_log_error("%s(%.9g), just inside halfway: 0x%04x, want 0x%04x", f->name, (double)below,
                             (unsigned)narrow(f, below), (unsigned)(h | sign));
            if (narrow(f, above) != ((h + 1) | sign) && bad++ < 5)
                cr_log_error("%s(%.9g), just past halfway: 0x%04x, want 0x%04x", f->name, (double)above,
                             (unsigned)narrow(f, above), (unsigned)((h + 1) | sign));
            /* and the model agrees with the expectation (the model is right) */
            if (check_narrow(f, sm, msg, sizeof msg) && bad++ < 5)
                cr_log_error("%s", msg);
            checked++;
        }
    }
    cr_expect_eq(bad, 0, "%s: %d errors over %d halfway points", f->name, bad, checked);
    cr_expect_eq(checked, 2 * (int)inf);
}

Test(convert, f16_ties_go_to_even) { every_tie(&F16); }
Test(convert, bf16_ties_go_to_even) { every_tie(&BF16); }

/* ---- special values ---------------------------------------------------------- */

static void expect_f16(float x, unsigned want)
{
    const uint16_t got = attn_f32_to_f16(x);
    char msg[256];
    cr_expect_eq(got, want, "f16(%.9g = 0x%08x) = 0x%04x, want 0x%04x", (double)x, (unsigned)bits_of(x),
                 (unsigned)got, want);
    cr_expect_eq(check_narrow(&F16, x, msg, sizeof msg), 0, "the model disagrees: %s", msg);
}

static void expect_bf16(float x, unsigned want)
{
    const uint16_t got = attn_f32_to_bf16(x);
    char msg[256];
    cr_expect_eq(got, want, "bf16(%.9g = 0x%08x) = 0x%04x, want 0x%04x", (double)x, (unsigned)bits_of(x),
                 (unsigned)got, want);
    cr_expect_eq(check_narrow(&BF16, x, msg, sizeof msg), 0, "the model disagrees: %s", msg);
}

Test(convert, infinities_and_zeros)
{
    expect_f16(INFINITY, 0x7c00);
    expect_f16(-INFINITY, 0xfc00);
    expect_f16(0.0f, 0x0000);
    expect_f16(-0.0f, 0x8000);
    expect_bf16(INFINITY, 0x7f80);
    expect_bf16(-INFINITY, 0xff80);
    expect_bf16(0.0f, 0x0000);
    expect_bf16(-0.0f, 0x8000);
    cr_expect(isinf(attn_f16_to_f32(0x7c00)) && attn_f16_to_f32(0x7c00) > 0);
    cr_expect(isinf(attn_f16_to_f32(0xfc00)) && attn_f16_to_f32(0xfc00) < 0);
    cr_expect(isinf(attn_bf16_to_f32(0xff80)) && attn_bf16_to_f32(0xff80) < 0);
    cr_expect_eq(bits_of(attn_f16_to_f32(0x8000)), 0x80000000u);
    cr_expect_eq(bits_of(attn_bf16_to_f32(0x8000)), 0x80000000u);
}

Test(convert, nan_stays_nan_and_becomes_quiet)
{
    /* quiet and signalling NaNs of both signs, payloads high and low */
    static const uint32_t nans[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                                     0x7fbfffffu, 0xffffffffu, 0x7f802000u, 0x7fc0deadu, 0x7f800100u };
    size_t i;
    char msg[256];
    for (i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        const float x = float_of(nans[i]);
        const uint16_t h = attn_f32_to_f16(x), b = attn_f32_to_bf16(x);
        cr_expect(isnan(x));
        cr_expect_eq(check_narrow(&F16, x, msg, sizeof msg), 0, "%s", msg);
        cr_expect_eq(check_narrow(&BF16, x, msg, sizeof msg), 0, "%s", msg);
        /* the rounding carry must not turn a NaN into an infinity or a
           number, nor flip its sign */
        cr_expect((h & 0x7c00) == 0x7c00 && (h & 0x0200) && (h >> 15) == nans[i] >> 31,
                  "f16(0x%08x) = 0x%04x", (unsigned)nans[i], (unsigned)h);
        cr_expect((b & 0x7f80) == 0x7f80 && (b & 0x0040) && (b >> 15) == nans[i] >> 31,
                  "bf16(0x%08x) = 0x%04x", (unsigned)nans[i], (unsigned)b);
        cr_expect(isnan(attn_f16_to_f32(h)) && isnan(attn_bf16_to_f32(b)));
    }
    /* a signalling f16 or bf16 NaN widens to the same payload (still
       signalling: widening is a bit move), and narrows back quiet */
    cr_expect_eq(bits_of(attn_f16_to_f32(0x7c01)), 0x7f802000u);
    cr_expect_eq(attn_f32_to_f16(attn_f16_to_f32(0x7c01)), 0x7e01);
    cr_expect_eq(bits_of(attn_bf16_to_f32(0xff81)), 0xff810000u);
    cr_expect_eq(attn_f32_to_bf16(attn_bf16_to_f32(0xff81)), 0xffc1);
}

Test(convert, f16_overflow_goes_to_infinity)
{
    expect_f16(65504.0f, 0x7bff);   /* the largest finite f16 */
    expect_f16(-65504.0f, 0xfbff);
    expect_f16(65519.99f, 0x7bff);  /* below 65504 + half an ulp (16): stays finite */
    expect_f16(nextafterf(65520.0f, 0.0f), 0x7bff);
    expect_f16(65520.0f, 0x7c00);   /* exactly halfway to 65536: ties to even, which is inf */
    expect_f16(-65520.0f, 0xfc00);
    expect_f16(65536.0f, 0x7c00);
    expect_f16(1e5f, 0x7c00);
    expect_f16(-1e5f, 0xfc00);
    expect_f16(FLT_MAX, 0x7c00);
    expect_f16(-FLT_MAX, 0xfc00);
    expect_f16(65488.0f, 0x7bfe);   /* halfway between 65472 and 65504: to the even 65472 */
    expect_f16(65512.0f, 0x7bff);
    cr_expect_eq(attn_f16_to_f32(0x7bff), 65504.0f);
}

Test(convert, f16_subnormals)
{
    const float q = ldexpf(1.0f, -24); /* the smallest f16 subnormal */
    expect_f16(q, 0x0001);
    expect_f16(-q, 0x8001);
    expect_f16(q / 2, 0x0000);                        /* halfway below it: ties to even, 0 */
    expect_f16(-q / 2, 0x8000);                       /* keeping the sign */
    expect_f16(nextafterf(q / 2, 1.0f), 0x0001);      /* just past halfway */
    expect_f16(nextafterf(q / 2, 0.0f), 0x0000);
    expect_f16(1.5f * q, 0x0002);                     /* halfway between 1 and 2: to 2 */
    expect_f16(2.5f * q, 0x0002);                     /* halfway between 2 and 3: to 2 */
    expect_f16(1023.0f * q, 0x03ff);                  /* the largest subnormal */
    expect_f16(1023.5f * q, 0x0400);                  /* halfway to 2^-14: to the even normal */
    expect_f16(ldexpf(1.0f, -14), 0x0400);            /* the smallest normal */
    expect_f16(FLT_MIN, 0x0000);                      /* far below */
    expect_f16(float_of(0x00000001u), 0x0000);        /* f32 subnormals */
    expect_f16(float_of(0x80000001u), 0x8000);
    expect_f16(3.0e-5f, attn_f32_to_f16(3.0e-5f));    /* model-checked */
    cr_expect_eq(attn_f16_to_f32(0x0001), q);
    cr_expect_eq(attn_f16_to_f32(0x03ff), 1023.0f * q);
    cr_expect_eq(attn_f16_to_f32(0x8200), -512.0f * q);
}

Test(convert, bf16_keeps_f32_subnormals)
{
    const float q = ldexpf(1.0f, -133); /* the smallest bf16 subnormal, an f32 subnormal */
    expect_bf16(q, 0x0001);
    expect_bf16(-q, 0x8001);
    expect_bf16(q / 2, 0x0000);                      /* halfway: ties to even, 0 */
    expect_bf16(nextafterf(q / 2, 1.0f), 0x0001);
    expect_bf16(1.5f * q, 0x0002);
    expect_bf16(float_of(0x00000001u), 0x0000);      /* 2^-149 */
    expect_bf16(float_of(0x00012345u), 0x0001);
    expect_bf16(float_of(0x00018000u), 0x0002);      /* halfway between 1 and 2: to 2 */
    expect_bf16(float_of(0x00028000u), 0x0002);      /* halfway between 2 and 3: to 2 */
    expect_bf16(float_of(0x007fffffu), 0x0080);      /* the largest f32 subnormal rounds up to FLT_MIN */
    expect_bf16(float_of(0x007f7fffu), 0x007f);
    expect_bf16(FLT_MIN, 0x0080);
    expect_bf16(1e-39f, attn_f32_to_bf16(1e-39f));  /* model-checked */
    cr_expect_eq(attn_bf16_to_f32(0x0001), q);
    cr_expect_eq(attn_bf16_to_f32(0x007f), 127.0f * q);
}

Test(convert, bf16_range)
{
    expect_bf16(1.0f, 0x3f80);
    expect_bf16(float_of(0x3f808000u), 0x3f80);  /* halfway between 1 and 1 + 2^-7: to even */
    expect_bf16(float_of(0x3f818000u), 0x3f82);  /* halfway between odd and even: up */
    expect_bf16(float_of(0x7f7f7fffu), 0x7f7f);  /* below the largest bf16 plus half an ulp */
    expect_bf16(float_of(0x7f7f8000u), 0x7f80);  /* exactly halfway to 2^128: to even, inf */
    expect_bf16(FLT_MAX, 0x7f80);
    expect_bf16(-FLT_MAX, 0xff80);
    expect_bf16(1e4f, attn_f32_to_bf16(1e4f));
    cr_expect_eq(attn_bf16_to_f32(0x7f7f), float_of(0x7f7f0000u));
    cr_expect_eq(attn_bf16_to_f32(0x461c), 9984.0f); /* bf16(1e4) */
    cr_expect_eq(attn_f32_to_bf16(1e4f), 0x461c);
}

/* ---- random f32 patterns ------------------------------------------------------ */

/* n random f32 bit patterns (all exponents), then n with the exponent in
   the range where f16 rounds, overflows and underflows (2^-27 .. 2^17),
   then n with f32 subnormal or tiny exponents for bf16; each narrowed to
   both formats and compared with the model. */
Test(convert, random_f32_patterns_match_the_model)
{
    const int n = 1 << 21;
    uint64_t state = 20240607u;
    char msg[256];
    int i, bad = 0, pass;
    for (pass = 0; pass < 3; pass++)
        for (i = 0; i < n; i++) {
            uint32_t u = (uint32_t)rng_next(&state);
            if (pass == 1) /* exponent 100 .. 144 */
                u = (u & 0x807fffffu) | ((100u + (uint32_t)(rng_next(&state) % 45)) << 23);
            else if (pass == 2) /* exponent 0 .. 7 */
                u = (u & 0x807fffffu) | ((uint32_t)(rng_next(&state) % 8) << 23);
            if (check_narrow(&F16, float_of(u), msg, sizeof msg) && bad++ < 5)
                cr_log_error("%s", msg);
            if (check_narrow(&BF16, float_of(u), msg, sizeof msg) && bad++ < 5)
                cr_log_error("%s", msg);
        }
    cr_expect_eq(bad, 0, "%d of %d random conversions differ from the model", bad, 6 * n);
}

/* ---- the array forms ---------------------------------------------------------- */

Test(convert, array_forms_match_the_scalar_ones)
{
    enum { N = 1001 };
    float src[N], back[N];
    uint16_t h[N + 1], b[N + 1];
    uint64_t state = 99;
    int i;
    for (i = 0; i < N; i++)
        src[i] = float_of((uint32_t)rng_next(&state));
    src[0] = NAN;
    src[1] = 65520.0f;
    src[2] = ldexpf(1.0f, -25);
    h[N] = b[N] = 0xabcd; /* a canary past the end */
    attn_f32_to_f16_array(src, h, N);
    attn_f32_to_bf16_array(src, b, N);
    for (i = 0; i < N; i++) {
        cr_expect_eq(h[i], attn_f32_to_f16(src[i]), "f16 array element %d", i);
        cr_expect_eq(b[i], attn_f32_to_bf16(src[i]), "bf16 array element %d", i);
    }
    cr_expect_eq(h[N], 0xabcd);
    cr_expect_eq(b[N], 0xabcd);
    attn_f16_to_f32_array(h, back, N);
    for (i = 0; i < N; i++)
        cr_expect_eq(bits_of(back[i]), bits_of(attn_f16_to_f32(h[i])), "f16 widening, element %d", i);
    attn_bf16_to_f32_array(b, back, N);
    for (i = 0; i < N; i++)
        cr_expect_eq(bits_of(back[i]), bits_of(attn_bf16_to_f32(b[i])), "bf16 widening, element %d", i);
    /* n = 0 touches nothing */
    attn_f32_to_f16_array(NULL, NULL, 0);
    attn_f32_to_bf16_array(NULL, NULL, 0);
    attn_f16_to_f32_array(NULL, NULL, 0);
    attn_bf16_to_f32_array(NULL, NULL, 0);
}

/* ---- .npy float16 ------------------------------------------------------------- */

/* attn_npy writes '<f2' and reads it back as the same uint16_t patterns;
   attn_npy_to_f32 leaves the conversion to the runtime's (and says so). */
Test(convert, npy_float16_round_trip)
{
    char dir[] = "/tmp/attn_convert_XXXXXX", path[64], err[256];
    const int64_t shape[2] = { 2, 3 };
    const uint16_t data[6] = { 0x3c00, 0xbc00, 0x7bff, 0x0001, 0x7c00, 0x7e00 };
    attn_npy a;
    float *f = NULL;
    cr_assert(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/h.npy", dir);
    cr_assert_eq(attn_npy_write(path, ATTN_NPY_F16, 2, shape, data, err, sizeof err), 0, "%s", err);
    cr_assert_eq(attn_npy_read(path, &a, err, sizeof err), 0, "%s", err);
    cr_expect_eq(a.dtype, ATTN_NPY_F16);
    cr_expect_eq(attn_npy_itemsize(a.dtype), 2);
    cr_expect_str_eq(attn_npy_dtype_name(a.dtype), "float16");
    cr_expect_eq(a.ndim, 2);
    cr_expect_eq(a.count, 6);
    cr_expect_eq(memcmp(a.data, data, sizeof data), 0);
    cr_expect_neq(attn_npy_to_f32(&a, &f, err, sizeof err), 0);
    cr_expect(strstr(err, "float16") != NULL, "%s", err);
    attn_npy_free(&a);
    remove(path);
    rmdir(dir);
}

/* Outputs staged together are published together: none replaces its path
   before every one is written, and a stage that fails removes the files
   staged before it and leaves the paths as they were. */
Test(convert, npy_staged_outputs_publish_together)
{
    char dir[] = "/tmp/attn_convert_XXXXXX", a_path[64], b_path[64], bad[96], err[256];
    const int64_t shape[1] = { 3 };
    const float x[3] = { 1.0f, 2.0f, 3.0f }, y[3] = { 4.0f, 5.0f, 6.0f };
    const char *failed = NULL;
    attn_npy_staged sf;
    attn_npy a;
    cr_assert(mkdtemp(dir) != NULL);
    snprintf(a_path, sizeof a_path, "%s/a.npy", dir);
    snprintf(b_path, sizeof b_path, "%s/b.npy", dir);
    snprintf(bad, sizeof bad, "%s/no such folder/c.npy", dir);
    memset(&sf, 0, sizeof sf);
    cr_assert_eq(attn_npy_stage(&sf, a_path, ATTN_NPY_F32, 1, shape, x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(attn_npy_stage(&sf, NULL, ATTN_NPY_F32, 1, shape, x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(attn_npy_stage(&sf, b_path, ATTN_NPY_F32, 1, shape, y, err, sizeof err), 0, "%s", err);
    cr_expect_eq(sf.n, 2);
    cr_expect_neq(access(a_path, F_OK), 0, "a.npy replaced before the set was published");
    cr_assert_eq(attn_npy_publish(&sf, &failed, err, sizeof err), 0, "%s", err);
    cr_expect_eq(sf.n, 0);
    cr_assert_eq(attn_npy_read(b_path, &a, err, sizeof err), 0, "%s", err);
    cr_expect_eq(a.count, 3);
    cr_expect_eq(memcmp(a.data, y, sizeof y), 0);
    attn_npy_free(&a);
    /* a failed stage: a.npy staged again is removed, a.npy itself kept */
    cr_assert_eq(attn_npy_stage(&sf, a_path, ATTN_NPY_F32, 1, shape, y, err, sizeof err), 0, "%s", err);
    cr_expect_neq(attn_npy_stage(&sf, bad, ATTN_NPY_F32, 1, shape, y, err, sizeof err), 0);
    cr_expect_eq(sf.n, 0);
    cr_assert_eq(attn_npy_read(a_path, &a, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(a.data, x, sizeof x), 0, "a.npy changed by a set that failed");
    attn_npy_free(&a);
    remove(a_path);
    remove(b_path);
    cr_expect_eq(rmdir(dir), 0, "a staged file was left behind");
}

/* ---- the verification harness on bf16 and f16 storage ------------------------ */

/*
 * A stand-in kernel of any storage mix: it widens its stored Q, K and V to
 * f32 (every element its strides span, gaps included), runs the float64
 * reference on them, and stores each element of O rounded to O's storage
 * type.  Its bugs on request: stand_in_truncates stores a bf16 O truncated
 * (up to a whole ulp off, twice the bound); stand_in_through_bf16 rounds an
 * f16 O to bf16 first (up to 2^-8 relative off, four times the bound);
 * stand_in_perturbs moves each Q element by a quarter of the relative
 * tolerance of Q's type (about half a bf16 ulp), as if it computed on the
 * f32 values before rounding rather than on the stored ones.
 */
static attn_spec stand_in_spec;
static int stand_in_truncates, stand_in_through_bf16, stand_in_perturbs;

/* elements spanned by [b][s][h][dim] with the last dim contiguous */
static size_t span_of(int64_t b, int64_t s, int64_t h, int64_t dim, const int64_t *stride)
{
    if (b == 0 || s == 0 || h == 0 || dim == 0)
        return 0;
    return (size_t)((b - 1) * stride[0] + (s - 1) * stride[1] + (h - 1) * stride[2] + dim);
}

static float *widened(attn_dtype dtype, const void *p, size_t n)
{
    float *w = (float *)malloc(n * sizeof(float) + 1);
    cr_assert(w != NULL);
    attn_verify_widen(dtype, p, w, n);
    return w;
}

static attn_status stand_in_fwd(const attn_args *a)
{
    const attn_spec *s = &stand_in_spec;
    const attn_status st = attn_check_args(s, a);
    size_t nq, nk, nv, no, i;
    float *q, *k, *v, *o;
    attn_args r;
    int64_t b, row, h, d;

    if (st != ATTN_OK)
        return st;
    nq = span_of(a->batch, a->seq_q, s->heads_q, s->head_dim, a->q_stride);
    nk = span_of(a->batch, a->seq_k, s->heads_kv, s->head_dim, a->k_stride);
    nv = span_of(a->batch, a->seq_k, s->heads_kv, s->head_dim_v, a->v_stride);
    no = span_of(a->batch, a->seq_q, s->heads_q, s->head_dim_v, a->o_stride);
    q = widened(s->dtype_q, a->q, nq);
    k = widened(s->dtype_kv, a->k, nk);
    v = widened(s->dtype_kv, a->v, nv);
    o = (float *)malloc(no * sizeof(float) + 1);
    cr_assert(o != NULL);
    if (stand_in_perturbs)
        for (i = 0; i < nq; i++)
            q[i] += (float)((i * 2654435761u) % 3 == 0 ? 1 : -1) * q[i] *
                    (float)ATTN_REF_TOL_REL(s->dtype_q) * 0.25f;
    r = *a;
    r.q = q;
    r.k = k;
    r.v = v;
    r.o = o;
    if (attn_reference(s, &r) != ATTN_OK)
        return ATTN_ERR_NOMEM;
    for (b = 0; b < a->batch; b++)
        for (row = 0; row < a->seq_q; row++)
            for (h = 0; h < s->heads_q; h++)
                for (d = 0; d < s->head_dim_v; d++) {
                    const int64_t at = b * a->o_stride[0] + row * a->o_stride[1] + h * a->o_stride[2] + d;
                    float x = o[at];
                    if (s->dtype_o == ATTN_DTYPE_F32) {
                        memcpy((float *)a->o + at, &x, sizeof x);
                    } else {
                        uint16_t stored;
                        if (stand_in_through_bf16)
                            x = attn_bf16_to_f32(attn_f32_to_bf16(x));
                        stored = s->dtype_o == ATTN_DTYPE_BF16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
                        if (stand_in_truncates && s->dtype_o == ATTN_DTYPE_BF16 && isfinite(x))
                            stored = (uint16_t)(bits_of(x) >> 16); /* toward zero: no rounding */
                        ((uint16_t *)a->o)[at] = stored;
                    }
                }
    free(q);
    free(k);
    free(v);
    free(o);
    return ATTN_OK;
}

static const attn_variant stand_in_variants[] = { { ATTN_ISA_SCALAR, stand_in_fwd, 0 } };
static attn_kernel stand_in_kernel;

extern const attn_kernel attn_t_everything_kernel, attn_t_bool_mask_kernel;

static void stand_in(const attn_kernel *like, attn_dtype q, attn_dtype kv, attn_dtype o)
{
    stand_in_spec = like->spec;
    stand_in_spec.dtype_q = q;
    stand_in_spec.dtype_kv = kv;
    stand_in_spec.dtype_o = o;
    stand_in_kernel.spec = stand_in_spec;
    stand_in_kernel.fwd = stand_in_fwd;
    stand_in_kernel.n_variants = 1;
    stand_in_kernel.variants = stand_in_variants;
}

/* Runs the quick matrix on the stand-in; returns the failing elements. */
static int run_stand_in(int expect_pass)
{
    attn_case cases[64];
    const int n = attn_verify_default_cases(&stand_in_spec, cases, 64, 1);
    int i, failures = 0;
    for (i = 0; i < n; i++) {
        attn_verify_result res;
        char shape[160];
        const attn_status st = attn_verify_case(&stand_in_kernel, &stand_in_variants[0], &cases[i], &res);
        attn_verify_case_string(&cases[i], shape, sizeof shape);
        cr_assert_eq(st, ATTN_OK, "%s: %s (%s)", shape, attn_status_string(st), res.first_failure);
        if (expect_pass)
            cr_expect_eq(res.failures, 0, "q=%s kv=%s o=%s %s: %d elements off; first: %s",
                         attn_dtype_name(stand_in_spec.dtype_q), attn_dtype_name(stand_in_spec.dtype_kv),
                         attn_dtype_name(stand_in_spec.dtype_o), shape, res.failures, res.first_failure);
        failures += res.failures;
    }
    cr_assert_gt(n, 10);
    return failures;
}

static void harness_accepts(attn_dtype q, attn_dtype kv, attn_dtype o)
{
    attn_case c;
    stand_in(&attn_t_everything_kernel, q, kv, o);
    run_stand_in(1);
    stand_in(&attn_t_bool_mask_kernel, q, kv, o);
    run_stand_in(1);
    memset(&c, 0, sizeof c);
    c.batch = 2;
    c.seq_q = 19;
    c.seq_k = 37;
    c.strided = 1;
    c.ragged = stand_in_spec.padding;
    c.seed = 5;
    cr_expect_eq(attn_verify_bitwise_threads(&stand_in_kernel, NULL, &c, 1, 2), 1);
}

Test(convert_harness, all_f32) { harness_accepts(ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F32); }
Test(convert_harness, all_bf16) { harness_accepts(ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_BF16); }
Test(convert_harness, all_f16) { harness_accepts(ATTN_DTYPE_F16, ATTN_DTYPE_F16, ATTN_DTYPE_F16); }
Test(convert_harness, f16_kv_cache) { harness_accepts(ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_F32); }
Test(convert_harness, bf16_kv_cache) { harness_accepts(ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F32); }
Test(convert_harness, bf16_inputs_f32_output) { harness_accepts(ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32); }
Test(convert_harness, f16_inputs_bf16_output) { harness_accepts(ATTN_DTYPE_F16, ATTN_DTYPE_F16, ATTN_DTYPE_BF16); }
Test(convert_harness, f32_inputs_f16_output) { harness_accepts(ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F16); }

/* O truncated instead of rounded is off by up to a whole ulp: outside the
   half-ulp bound on some elements. */
Test(convert_harness, catches_a_truncated_bf16_output)
{
    stand_in(&attn_t_everything_kernel, ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_BF16);
    stand_in_truncates = 1;
    cr_expect_gt(run_stand_in(0), 0, "a bf16 O truncated toward zero passed");
}

/* (An f16 O truncated would pass: a whole f16 ulp is at most 2^-10 |x|,
   the bound; eight bits instead of eleven do not.) */
Test(convert_harness, catches_an_f16_output_of_bf16_precision)
{
    stand_in(&attn_t_everything_kernel, ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F16);
    stand_in_through_bf16 = 1;
    cr_expect_gt(run_stand_in(0), 0, "an f16 O rounded to bf16 precision passed");
}

/* The reference must see the stored inputs: a kernel that computes on
   inputs about half a bf16 ulp away (as if one side used the f32 values
   before rounding) must fail with an f32 output. */
Test(convert_harness, catches_inputs_other_than_the_stored_ones)
{
    stand_in(&attn_t_everything_kernel, ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32);
    stand_in_perturbs = 1;
    cr_expect_gt(run_stand_in(0), 0, "a kernel reading other Q values than the stored ones passed");
}

/* The tolerance is the one stated in attn_reference.h. */
Test(convert_harness, tolerances)
{
    cr_expect_eq(ATTN_REF_TOL(ATTN_DTYPE_F32, 2.0), 1e-5 + 2e-5);
    cr_expect_eq(ATTN_REF_TOL(ATTN_DTYPE_BF16, 2.0), 1e-5 + ldexp(2.0, -8));
    cr_expect_eq(ATTN_REF_TOL(ATTN_DTYPE_F16, -2.0), 1e-5 + ldexp(2.0, -10));
}
