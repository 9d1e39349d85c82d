/*
 * test_quant.c - llama.cpp's quantized blocks in the runtime
 * (attn_quantize_q8_0, attn_quantize_q4_0 and their inverses).
 *
 * Two kinds of check.  Vectors worked out by hand from the definitions
 * (ggml's quantize_row_q8_0_ref and quantize_row_q4_0_ref), written out
 * byte by byte.  And a brute-force model that shares no arithmetic with the
 * runtime: f32 operations are done in double and rounded once to float
 * (exact for one +, *, / of floats), f16 rounding searches every finite f16
 * pattern for the nearest value, and a code is the integer nearest to
 * x * (1 / d) found by trying each one.  The model runs over random blocks
 * and over blocks made for the edges: ties at exact halves, zeros and -0,
 * f32 subnormals, scales that round to f16 zero or overflow f16, infinities
 * and NaN at every position.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn_runtime.h"

enum { QK = ATTN_QK };

/* ---- the model ------------------------------------------------------------ */

static float f32(double x) { return (float)x; }

/* The value of an f16 pattern, from its fields. */
static double f16_value(unsigned h)
{
    const int e = (int)((h >> 10) & 31u), m = (int)(h & 1023u);
    const double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000u) ? -v : v;
}

/* f16 of x: NaN quiet with its sign and top payload, the nearest finite
   pattern by search (ties to the even one), +-inf from 65520 on. */
static uint16_t model_f16(float x)
{
    uint32_t u;
    unsigned best = 0, h, sign;
    double a, err = INFINITY;
    memcpy(&u, &x, sizeof u);
    sign = (u >> 16) & 0x8000u;
    if (isnan(x))
        return (uint16_t)(sign | 0x7e00u | ((u & 0x7fffffu) >> 13));
    a = fabs((double)x);
    if (a >= 65520.0)
        return (uint16_t)(sign | 0x7c00u);
    for (h = 0; h < 0x7c00u; h++) {
        const double e = fabs(f16_value(h) - a);
        if (e < err || (e == err && (h & 1u) == 0)) {
            err = e;
            best = h;
        }
    }
    return (uint16_t)(sign | best);
}

/* The code x86-64 stores for v: 0 for NaN, infinities and |v| >= 2^31,
   else the low byte of the integer nearest to v (a tie going away from
   zero), found among the integers around v.  Only a block whose maximum
   skipped a NaN has codes past 127. */
static int nearest_code(float v)
{
    double k, best = 0.0, err = INFINITY;
    if (!isfinite(v) || fabs((double)v) >= 2147483648.0)
        return 0;
    for (k = floor((double)v) - 1.0; k <= floor((double)v) + 2.0; k += 1.0) {
        const double e = fabs(k - (double)v);
        if (e < err || (e == err && fabs(k) > fabs(best))) {
            err = e;
            best = k;
        }
    }
    return (int8_t)(uint8_t)((uint64_t)(int64_t)best & 0xffu);
}

static void model_q8_0(const float *x, attn_block_q8_0 *y)
{
    float amax = 0.0f, d, id;
    int j;
    for (j = 0; j < QK; j++) {
        const float a = fabsf(x[j]);
        if (!(amax > a)) /* a comparison with NaN is false: NaN takes over, the next value replaces it */
            amax = a;
    }
    d = f32((double)amax / 127.0);
    id = d != 0.0f ? f32(1.0 / (double)d) : 0.0f;
    y->d = model_f16(d);
    for (j = 0; j < QK; j++)
        y->q[j] = (int8_t)nearest_code(f32((double)x[j] * (double)id));
}

/* min(15, trunc(x * id + 8.5)) in f32: the largest code k <= w (w >= 0
   for every finite block, whose |x * id| is at most 8 and a rounding). */
static int q4_code(float x, float id)
{
    const float w = f32((double)f32((double)x * (double)id) + 8.5);
    int k;
    if (!isfinite(w))
        return 0;
    for (k = 15; k > 0; k--)
        if ((double)k <= (double)w)
            return k;
    return 0;
}

static void model_q4_0(const float *x, attn_block_q4_0 *y)
{
    float amax = 0.0f, m = 0.0f, d, id;
    int j;
    for (j = 0; j < QK; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            m = x[j];
        }
    d = f32((double)m / -8.0);
    id = d != 0.0f ? f32(1.0 / (double)d) : 0.0f;
    y->d = model_f16(d);
    for (j = 0; j < QK / 2; j++)
        y->q[j] = (uint8_t)(q4_code(x[j], id) | (q4_code(x[j + QK / 2], id) << 4));
}

/* ---- vectors worked out by hand ------------------------------------------- */

Test(quant, q8_0_by_hand)
{
    /* amax 127: d = 1 (f16 0x3c00), 1 / d = 1, codes round halves away from zero */
    float x[QK] = { 127.0f, -127.0f, 0.5f, -0.5f, 2.5f, -2.5f, 1.49f, 63.5f, -63.5f, 0.0f, -0.0f, 126.6f };
    static const int8_t want[12] = { 127, -127, 1, -1, 3, -3, 1, 64, -64, 0, 0, 127 };
    attn_block_q8_0 y;
    float back[QK];
    int j;
    cr_assert_eq(sizeof(attn_block_q8_0), 34);
    cr_assert_eq(attn_quantize_q8_0(x, &y, QK), ATTN_OK);
    cr_assert_eq(y.d, 0x3c00);
    for (j = 0; j < 12; j++)
        cr_assert_eq(y.q[j], want[j], "value %d: code %d, want %d", j, y.q[j], want[j]);
    for (j = 12; j < QK; j++)
        cr_assert_eq(y.q[j], 0);
    cr_assert_eq(attn_dequantize_q8_0(&y, back, QK), ATTN_OK);
    cr_assert_eq(back[7], 64.0f);
    cr_assert_eq(back[1], -127.0f);
}

Test(quant, q8_0_scale_rounds_to_f16)
{
    /* 0..31: amax 31, d = 31 / 127 = 0.24409449 in f32, which f16 holds as
       0.125 * (1 + 976 / 1024) = 0.24414063 (pattern 0x33d0); 1 / d =
       4.0967741, so 1 -> 4, 2 -> 8 (8.19), 3 -> 12 (12.29), 31 -> 127 */
    float x[QK];
    attn_block_q8_0 y;
    int j;
    for (j = 0; j < QK; j++)
        x[j] = (float)j;
    attn_quantize_q8_0(x, &y, QK);
    cr_assert_eq(y.d, 0x33d0, "d = 0x%04x", y.d);
    cr_assert_eq(y.q[1], 4);
    cr_assert_eq(y.q[2], 8);
    cr_assert_eq(y.q[3], 12);
    cr_assert_eq(y.q[31], 127);
}

Test(quant, q8_0_zeros_nan_inf)
{
    float x[QK] = { 0 }, back[QK];
    attn_block_q8_0 y;
    int j;
    for (j = 0; j < QK; j++)
        x[j] = -0.0f;
    attn_quantize_q8_0(x, &y, QK);
    cr_assert_eq(y.d, 0x0000, "-0 everywhere: fabsf makes amax +0");
    x[0] = NAN; /* first: the next value replaces it in the maximum */
    x[5] = 127.0f;
    attn_quantize_q8_0(x, &y, QK);
    cr_assert_eq(y.d, 0x3c00);
    cr_assert_eq(y.q[0], 0);
    cr_assert_eq(y.q[5], 127);
    x[QK - 1] = NAN; /* last: amax and d are NaN, every code 0 */
    attn_quantize_q8_0(x, &y, QK);
    cr_assert_eq(y.d & 0x7e00, 0x7e00, "d = 0x%04x", y.d);
    for (j = 0; j < QK; j++)
        cr_assert_eq(y.q[j], 0);
    attn_dequantize_q8_0(&y, back, QK);
    cr_assert(isnan(back[5]));
    memset(x, 0, sizeof x);
    x[3] = INFINITY; /* d = inf, 1 / d = 0: every code 0 */
    x[4] = 5.0f;
    attn_quantize_q8_0(x, &y, QK);
    cr_assert_eq(y.d, 0x7c00);
    for (j = 0; j < QK; j++)
        cr_assert_eq(y.q[j], 0);
}

Test(quant, q4_0_by_hand)
{
    /* m = -8 (first of largest |x|): d = 1, 1 / d = 1, code trunc(x + 8.5) */
    float x[QK] = { -8.0f, 7.0f, 7.4f, -7.5f, 0.5f, -0.5f, 0.0f, 8.0f };
    static const int want[8] = { 0, 15, 15, 1, 9, 8, 8, 15 }; /* 8 clipped: 16.5 -> 15 */
    attn_block_q4_0 y;
    float back[QK];
    int j;
    cr_assert_eq(sizeof(attn_block_q4_0), 18);
    x[16] = 3.0f; /* the high nibble of byte 0: code 11 */
    cr_assert_eq(attn_quantize_q4_0(x, &y, QK), ATTN_OK);
    cr_assert_eq(y.d, 0x3c00);
    cr_assert_eq(y.q[0], 0 | (11 << 4));
    for (j = 1; j < 8; j++)
        cr_assert_eq(y.q[j] & 15, want[j], "value %d: code %d, want %d", j, y.q[j] & 15, want[j]);
    attn_dequantize_q4_0(&y, back, QK);
    cr_assert_eq(back[0], -8.0f);
    cr_assert_eq(back[7], 7.0f);
    cr_assert_eq(back[16], 3.0f);
    cr_assert_eq(back[17], 0.0f); /* zeros: code 8 */
}

Test(quant, q4_0_positive_max_and_ties)
{
    /* m = +8: d = -1 (0xbc00), 1 / d = -1; -8 maps to 16.5 -> 15, value -7 */
    float x[QK] = { 8.0f, -8.0f }, back[QK];
    attn_block_q4_0 y;
    attn_quantize_q4_0(x, &y, QK);
    cr_assert_eq(y.d, 0xbc00);
    attn_dequantize_q4_0(&y, back, QK);
    cr_assert_eq(back[0], 8.0f);
    cr_assert_eq(back[1], -7.0f);
    /* -4 and 4: the first wins, d = 0.5 */
    memset(x, 0, sizeof x);
    x[2] = -4.0f;
    x[9] = 4.0f;
    attn_quantize_q4_0(x, &y, QK);
    cr_assert_eq(y.d, 0x3800);
    /* zeros: d = 0 / -8 = -0, codes 8 */
    memset(x, 0, sizeof x);
    attn_quantize_q4_0(x, &y, QK);
    cr_assert_eq(y.d, 0x8000);
    cr_assert_eq(y.q[0], 0x88);
}

Test(quant, shapes)
{
    float x[2 * QK] = { 0 };
    attn_block_q8_0 y8[2];
    attn_block_q4_0 y4[2];
    cr_assert_eq(attn_quantize_q8_0(x, y8, QK + 1), ATTN_ERR_SHAPE);
    cr_assert_eq(attn_quantize_q4_0(x, y4, -QK), ATTN_ERR_SHAPE);
    cr_assert_eq(attn_dequantize_q8_0(y8, x, 31), ATTN_ERR_SHAPE);
    cr_assert_eq(attn_dequantize_q4_0(y4, x, 33), ATTN_ERR_SHAPE);
    cr_assert_eq(attn_quantize_q8_0(x, y8, 0), ATTN_OK);
    cr_assert_eq(attn_quantize_q4_0(x, y4, 2 * QK), ATTN_OK);
}

/* ---- the model over random and edge blocks --------------------------------- */

static uint32_t rng = 12345u;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(next() >> 8) / 16777216.0f; }

/* Block number k of the sweep: kind k % 8 picks what it stresses. */
static void make_block(int k, float *x)
{
    const float scale = ldexpf(1.0f, (int)(next() % 60) - 30);
    int j;
    for (j = 0; j < QK; j++)
        x[j] = uniform(-1.0f, 1.0f) * scale;
    switch (k % 8) {
    case 1: /* ties: multiples of a half of d = 1 */
        for (j = 0; j < QK; j++)
            x[j] = (float)((int)(next() % 255) - 127) * 0.5f;
        x[next() % QK] = 127.0f;
        break;
    case 2: /* q4_0 ties: multiples of a half of d = 1 with m = -8 */
        for (j = 0; j < QK; j++)
            x[j] = (float)((int)(next() % 33) - 16) * 0.5f;
        x[next() % QK] = -8.0f;
        break;
    case 3: /* zeros, -0 and f32 subnormals */
        for (j = 0; j < QK; j++)
            x[j] = (next() & 1) ? ((next() & 1) ? -0.0f : 0.0f) : uniform(-1.0f, 1.0f) * FLT_MIN * 0.5f;
        break;
    case 4: /* scales near f16's smallest subnormal (2^-25 .. 2^-22) */
        for (j = 0; j < QK; j++)
            x[j] = uniform(-1.0f, 1.0f) * ldexpf(1.0f, -22 + (int)(next() % 10) - 5) * 127.0f;
        break;
    case 5: /* scales past f16's largest value */
        for (j = 0; j < QK; j++)
            x[j] = uniform(-1.0f, 1.0f) * 65504.0f * 130.0f;
        break;
    case 6: /* a NaN or an infinity at any position */
        x[next() % QK] = (next() & 1) ? NAN : ((next() & 1) ? INFINITY : -INFINITY);
        if (next() & 1)
            x[next() % QK] = -NAN;
        break;
    case 7: /* equal magnitudes of both signs: the first wins m */
        x[next() % QK] = scale;
        x[next() % QK] = -scale;
        break;
    default:
        break;
    }
}

static int same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

Test(quant, model_q8_0)
{
    float x[QK], back[QK], want_back[QK];
    attn_block_q8_0 got, want;
    int k, j;
    for (k = 0; k < 4000; k++) {
        make_block(k, x);
        attn_quantize_q8_0(x, &got, QK);
        model_q8_0(x, &want);
        cr_assert_eq(got.d, want.d, "block %d: d 0x%04x, model 0x%04x", k, got.d, want.d);
        cr_assert_arr_eq(got.q, want.q, sizeof got.q, "block %d: codes differ", k);
        attn_dequantize_q8_0(&got, back, QK);
        for (j = 0; j < QK; j++) {
            want_back[j] = f32((double)want.q[j] * f16_value(want.d));
            if ((want.d & 0x7c00u) == 0x7c00u)
                want_back[j] = (want.d & 0x3ffu) ? NAN : f32((double)want.q[j] * ((want.d & 0x8000u) ? -INFINITY : INFINITY));
            cr_assert(same_float(back[j], want_back[j]), "block %d value %d: %g, want %g", k, j, back[j], want_back[j]);
        }
    }
}

Test(quant, model_q4_0)
{
    float x[QK], back[QK];
    attn_block_q4_0 got, want;
    int k, j;
    for (k = 0; k < 4000; k++) {
        make_block(k, x);
        attn_quantize_q4_0(x, &got, QK);
        model_q4_0(x, &want);
        cr_assert_eq(got.d, want.d, "block %d: d 0x%04x, model 0x%04x", k, got.d, want.d);
        cr_assert_arr_eq(got.q, want.q, sizeof got.q, "block %d: codes differ", k);
        attn_dequantize_q4_0(&got, back, QK);
        for (j = 0; j < QK; j++) {
            const int c = j < QK / 2 ? want.q[j] & 15 : want.q[j - QK / 2] >> 4;
            const float d = (want.d & 0x7c00u) == 0x7c00u
                ? ((want.d & 0x3ffu) ? NAN : ((want.d & 0x8000u) ? -INFINITY : INFINITY))
                : (float)f16_value(want.d);
            cr_assert(same_float(back[j], (float)(c - 8) * d), "block %d value %d", k, j);
        }
    }
}

/* The error of a round trip: at most half a step plus the scale's f16
   rounding (2^-11 relative) over 127 or 8 steps. */
Test(quant, round_trip_error)
{
    float x[QK], back[QK];
    attn_block_q8_0 y8;
    attn_block_q4_0 y4;
    int k, j;
    for (k = 0; k < 500; k++) {
        float amax = 0.0f;
        for (j = 0; j < QK; j++) {
            x[j] = uniform(-3.0f, 3.0f);
            amax = fmaxf(amax, fabsf(x[j]));
        }
        attn_quantize_q8_0(x, &y8, QK);
        attn_dequantize_q8_0(&y8, back, QK);
        for (j = 0; j < QK; j++)
            cr_assert_leq(fabsf(back[j] - x[j]), amax / 127.0f * (0.5f + 127.0f / 2048.0f) * 1.0001f);
        attn_quantize_q4_0(x, &y4, QK);
        attn_dequantize_q4_0(&y4, back, QK);
        for (j = 0; j < QK; j++) /* the value clipped at -m is one step off */
            cr_assert_leq(fabsf(back[j] - x[j]), amax / 8.0f * (1.0f + 8.0f / 2048.0f) * 1.0001f);
    }
}
