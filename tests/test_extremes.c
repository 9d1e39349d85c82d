/*
 * test_extremes.c - every generated kernel at the edges of the float range
 * and of the shapes, on every ISA this CPU runs.
 *
 * The kernels come from build/kernel_list.h (one KERNEL(name) per config,
 * as in test_kernels.c).  Each test runs every kernel on three shapes: one
 * query row against 150 keys (the streaming decode path where the kernel
 * has it), Lq = 7 (the decode path) and Lq = 37 (the tiled path), and
 * compares with the float64 reference (attn_reference.h) or, where no
 * float32 kernel can match it elementwise, with the rules of
 * docs/config.md:
 *   - logits near the float range: Q and K scaled by 1e3 and 1e4;
 *   - logits that grow along the keys, so that the running max moves again
 *     and again (the streaming path and the prefill softmax move it lazily),
 *     also with Lq = 37 against 300 keys, several key tiles;
 *   - +inf and -inf in K, NaN in Q, K and V, +inf in V;
 *   - denormal inputs, with flush-to-zero and denormals-are-zero off (the
 *     C default) and on;
 *   - rows with no visible key: seqlens_k = 0, an all-false bool mask row,
 *     an all -inf bias row, causal rows past the keys;
 *   - Lq = 1 and Lk = 1, head dims 1 and 512 (t_d1, t_d512, t_dv512).
 * The sdpa kernels, except Lq = 1 and Lk = 1 (every kernel); the linear
 * family's edges are in test_linear.c.
 * Inputs and outputs sit against guard pages, so an over-read faults.
 *
 * Storage types: Q, K, V and O are stored in the kernel's types.  Each
 * test sets the f32 values it wants; they are narrowed to the storage type
 * (round to nearest even) and the reference runs on the stored values,
 * widened: what the storage holds is the input (an f16 overflow would be
 * an infinity; the scaled logits stay below 65504).  NaN and infinities
 * keep their meaning in every type.  The "denormal" cases use subnormals
 * of each tensor's own storage type: ~1e-39 in f32 and bf16 (which share
 * f32's exponent range), ~1e-5 in f16 (below 2^-14; f16 cannot hold 1e-39,
 * which would be 0).  O, widened, is compared within the tolerance of its
 * storage type (ATTN_REF_TOL, attn_reference.h) plus the case's own bound.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#define MXCSR_FTZ 0x8000u
#define MXCSR_DAZ 0x0040u
#endif

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"
#include "verify_variants.h" /* (and the kernels' declarations) */

static const attn_kernel *const kernels[] = {
#define KERNEL(name) &attn_##name##_kernel,
#include "kernel_list.h"
#undef KERNEL
};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

/* Whether the edge cases below run a kernel: all but the presets of many wide
   heads (DeepSeek-V3's 128 heads of 576 or 192 values), whose reference would
   take most of this file's time.  The edges are per row and per head, so the
   test configs of the same head dims and options (t_mla: D 576 shared rows)
   cover them; the presets run their own matrix in test_kernels.c. */
static int runs_edges(const attn_kernel *k)
{
    return (int64_t)k->spec.heads_q * (k->spec.head_dim + k->spec.head_dim_v) <= 16384;
}

/* the float32 unit roundoff */
#define U32 (1.0 / 16777216.0)
/* the tolerance of docs/testing.md, by storage type: ATTN_REF_TOL */

/* (Lq, Lk): the streaming decode path (one query row: up to 4 rows a kv
   head), the decode path (Lq <= 16) and the tiled path */
static const int64_t shapes[][2] = { { 1, 150 }, { 7, 19 }, { 37, 45 } };
#define N_SHAPES 3
/* the tiled path over several key tiles (tiles of up to 128 keys): the
   running max moves from tile to tile, past its lag or within it */
static const int64_t tiles_shape[][2] = { { 37, 300 } };
#define BATCH 2

/* ---- one problem: inputs, kernel outputs, reference outputs ------------- */

typedef struct {
    const attn_spec *s;
    int64_t nb, lq, lk;
    size_t nq, nk, nv, no;
    attn_guard_buf g[17];
    /* q, k, v: the f32 values a test wants, then (store_inputs) the stored
       values widened; o: the kernel's O widened */
    float *q, *k, *v, *o, *lse, *ro, *rlse, *bias;
    void *qs, *ks, *vs, *os; /* Q, K, V and O as stored */
    unsigned char *keep;
    int32_t *seqlens;
    attn_args a, ra; /* the kernel's (qs.., os, lse) and the reference's (q.., ro, rlse) */
} problem;

static uint64_t rng_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static float rng_unit(uint64_t *state)
{
    return (float)((double)(rng_next(state) >> 11) / 4503599627370496.0 - 1.0);
}

static void *guarded(attn_guard_buf *g, size_t count, size_t size)
{
    cr_assert_eq(attn_guard_alloc(g, count * size), 0, "cannot map %zu bytes", count * size);
    return g->ptr;
}

/* Contiguous BSHD inputs of N(0,1)-like scale (uniform in [-1, 1)), a
   dense [B][Hq][Lq][Lk] mask (80% kept, or a bias in [-1, 1)) and
   seqlens_k = {Lk, Lk - Lk/3}. */
static void problem_init(problem *p, const attn_spec *s, int64_t lq, int64_t lk, uint64_t seed)
{
    const int64_t B = BATCH, Hq = s->heads_q, Hkv = s->heads_kv, D = s->head_dim, Dv = s->head_dim_v;
    const size_t nq = (size_t)(B * lq * Hq * D), nk = (size_t)(B * lk * Hkv * D);
    const size_t nv = (size_t)(B * lk * Hkv * Dv), no = (size_t)(B * lq * Hq * Dv);
    const size_t nl = (size_t)(B * Hq * lq), nm = (size_t)(B * Hq * lq * lk);
    size_t i;

    memset(p, 0, sizeof *p);
    p->s = s;
    p->nb = B;
    p->lq = lq;
    p->lk = lk;
    p->nq = nq;
    p->nk = nk;
    p->nv = nv;
    p->no = no;
    p->q = (float *)guarded(&p->g[0], nq, sizeof(float));
    p->k = (float *)guarded(&p->g[1], nk, sizeof(float));
    p->v = (float *)guarded(&p->g[2], nv, sizeof(float));
    p->o = (float *)guarded(&p->g[3], no, sizeof(float));
    p->qs = guarded(&p->g[9], nq, attn_dtype_size(s->dtype_q));
    p->ks = guarded(&p->g[10], nk, attn_dtype_size(s->dtype_kv));
    p->vs = guarded(&p->g[11], nv, attn_dtype_size(s->dtype_kv));
    p->os = guarded(&p->g[12], no, attn_dtype_size(s->dtype_o));
    p->lse = (float *)guarded(&p->g[4], nl, sizeof(float));
    p->ro = (float *)guarded(&p->g[5], no, sizeof(float));
    p->rlse = (float *)guarded(&p->g[6], nl, sizeof(float));
    p->seqlens = (int32_t *)guarded(&p->g[7], B, sizeof(int32_t));
    for (i = 0; i < nq; i++) p->q[i] = rng_unit(&seed);
    for (i = 0; i < nk; i++) p->k[i] = rng_unit(&seed);
    for (i = 0; i < nv; i++) p->v[i] = rng_unit(&seed);
    p->seqlens[0] = (int32_t)lk;
    p->seqlens[1] = (int32_t)(lk - lk / 3);

    p->a.batch = B;
    p->a.seq_q = lq;
    p->a.seq_k = lk;
    attn_args_set_contiguous(&p->a, s);
    p->a.q = p->qs;
    p->a.k = p->ks;
    p->a.v = p->vs;
    p->a.o = p->os;
    p->a.lse = p->lse;
    p->a.threads = 1;
    if (s->padding)
        p->a.seqlens_k = p->seqlens;
    if (s->page > 0) { /* paged: the same K and V, through a block table of their rows */
        const size_t entries = (size_t)(B * ((lk + s->page - 1) / s->page)) + 1;
        int32_t *table = (int32_t *)guarded(&p->g[15], entries, sizeof(int32_t));
        cr_assert_eq(attn_args_set_contiguous_pages(&p->a, s, table), ATTN_OK, "%s: the block table", s->name);
    }
    if (s->mask == ATTN_MASK_BOOL) {
        p->keep = (unsigned char *)guarded(&p->g[8], nm, 1);
        for (i = 0; i < nm; i++) p->keep[i] = (rng_next(&seed) % 10) < 8;
        p->a.mask = p->keep;
    } else if (s->mask == ATTN_MASK_BIAS) {
        p->bias = (float *)guarded(&p->g[8], nm, sizeof(float));
        for (i = 0; i < nm; i++) p->bias[i] = rng_unit(&seed);
        p->a.mask = p->bias;
    }
    if (attn_rel_rows(s) > 0) { /* the relative position table (rel_bias) */
        const size_t nr = (size_t)attn_rel_rows(s) * (size_t)Hq;
        float *rel = (float *)guarded(&p->g[13], nr, sizeof(float));
        for (i = 0; i < nr; i++) rel[i] = rng_unit(&seed);
        p->a.rel_table = rel;
    }
    if (s->sinks) { /* a sink logit per query head (sinks = true) */
        float *sinks = (float *)guarded(&p->g[14], (size_t)Hq, sizeof(float));
        for (i = 0; i < (size_t)Hq; i++) sinks[i] = rng_unit(&seed);
        p->a.sinks = sinks;
    }
    if (s->rope_style != ATTN_ROPE_NONE && s->rope_table) { /* cos, sin [max(Lq, Lk)][dim / 2]: any angles */
        const int64_t rows = lq > lk ? lq : lk, half = s->rope_dim / 2;
        float *t = (float *)guarded(&p->g[15], (size_t)(2 * rows * half), sizeof(float));
        for (i = 0; i < (size_t)(rows * half); i++) {
            const double a = rng_unit(&seed) * 3.0;
            t[i] = (float)cos(a);
            t[(size_t)(rows * half) + i] = (float)sin(a);
        }
        p->a.rope_cos = t;
        p->a.rope_sin = t + rows * half;
        p->a.rope_rows = rows;
    }
    if (s->qk_norm) { /* qk_norm's weights, q_norm_w then k_norm_w: factors (offset + w) in 0.5..1.5 */
        float *w = (float *)guarded(&p->g[16], (size_t)(2 * D), sizeof(float));
        for (i = 0; i < (size_t)(2 * D); i++) w[i] = (s->qk_norm_offset ? 0.0f : 1.0f) + 0.5f * rng_unit(&seed);
        p->a.q_norm_w = w;
        p->a.k_norm_w = w + D;
    }
    p->a.mask_stride[0] = Hq * lq * lk;
    p->a.mask_stride[1] = lq * lk;
    p->a.mask_stride[2] = lk;
    p->a.mask_stride[3] = 1;
    p->ra = p->a;
    p->ra.q = p->q;
    p->ra.k = p->k;
    p->ra.v = p->v;
    p->ra.o = p->ro;
    p->ra.lse = p->rlse;
    for (i = 0; i < 3; i++) { /* K/V in a block type: the kernel's strides count blocks, the reference's values */
        p->ra.k_stride[i] *= attn_dtype_values(s->dtype_kv);
        p->ra.v_stride[i] *= attn_dtype_values(s->dtype_kv);
    }
}

static void problem_free(problem *p)
{
    int i;
    for (i = 0; i < (int)(sizeof p->g / sizeof p->g[0]); i++) attn_guard_free(&p->g[i]);
}

/* The wanted f32 inputs narrowed into the stored tensors, and the stored
   values widened back into q, k, v: what the kernel reads and the
   reference computes on. */
static void store_inputs(problem *p)
{
    const attn_spec *s = p->s;
    attn_verify_store(s->dtype_q, p->q, p->qs, p->nq);
    attn_verify_store(s->dtype_kv, p->k, p->ks, p->nk);
    attn_verify_store(s->dtype_kv, p->v, p->vs, p->nv);
}

/* The tolerance of the stored O at reference value ref. */
static double o_tol(const problem *p, double ref)
{
    return ATTN_REF_TOL_O(p->s, ref);
}

/* LSE's bound (f32; 2e-5 relative where Q is rotated). */
static double lse_tol(const attn_spec *s, double ref)
{
    return ATTN_REF_TOL_ABS + ATTN_REF_TOL_REL_SPEC(s, ATTN_DTYPE_F32) * fabs(ref);
}

/* A bound on |q_d| as the scores use it: with rope, element d of a rotated
   pair is at most the pair's norm. */
static double q_bound(const attn_spec *s, const float *q, int64_t d)
{
    const int64_t half = s->rope_dim / 2;
    int64_t a, b;
    if (s->rope_style == ATTN_ROPE_NONE || d >= s->rope_dim)
        return fabs((double)q[d]);
    if (s->rope_style == ATTN_ROPE_GPTJ) {
        a = d - d % 2;
        b = a + 1;
    } else {
        a = d % half;
        b = a + half;
    }
    return sqrt((double)q[a] * q[a] + (double)q[b] * q[b]);
}

static float *q_at(const problem *p, int64_t b, int64_t i, int64_t h)
{
    return p->q + ((b * p->lq + i) * p->s->heads_q + h) * p->s->head_dim;
}
static float *k_at(const problem *p, int64_t b, int64_t j, int64_t hk)
{
    return p->k + ((b * p->lk + j) * p->s->heads_kv + hk) * p->s->head_dim;
}
/* V row j: with shared_kv the first Dv values of K row j (both the kernel
   and the reference read it there; p->v is then not read) */
static float *v_at(const problem *p, int64_t b, int64_t j, int64_t hk)
{
    if (p->s->shared_kv)
        return k_at(p, b, j, hk);
    return p->v + ((b * p->lk + j) * p->s->heads_kv + hk) * p->s->head_dim_v;
}
static int64_t o_index(const problem *p, int64_t b, int64_t i, int64_t h)
{
    return ((b * p->lq + i) * p->s->heads_q + h) * p->s->head_dim_v;
}
static int64_t lse_index(const problem *p, int64_t b, int64_t i, int64_t h)
{
    return (b * p->s->heads_q + h) * p->lq + i;
}
static int64_t valid_keys(const problem *p, int64_t b)
{
    return p->s->padding ? p->seqlens[b] : p->lk;
}

/* The reference on the stored inputs (store_inputs first). */
static void run_reference(problem *p)
{
    const attn_status st = attn_reference(p->s, &p->ra);
    cr_assert_eq(st, ATTN_OK, "%s: the reference failed: %s", p->s->name, attn_status_string(st));
}

/* The variant on the stored inputs (its outputs poisoned first, so an
   element it does not write is caught); O widened into p->o. */
static void run_kernel(problem *p, const attn_variant *v)
{
    const size_t nl = (size_t)(p->nb * p->s->heads_q * p->lq);
    size_t i;
    attn_status st;
    for (i = 0; i < p->no; i++) p->o[i] = 12345.0f;
    attn_verify_narrow(p->s->dtype_o, p->o, p->os, p->no);
    for (i = 0; i < nl; i++) p->lse[i] = 12345.0f;
    st = attn_check_args(p->s, &p->a);
    if (st == ATTN_OK) st = v->fwd(&p->a);
    cr_assert_eq(st, ATTN_OK, "%s/%s: %s", p->s->name, attn_isa_name(v->isa), attn_status_string(st));
    attn_verify_widen(p->s->dtype_o, p->os, p->o, p->no);
}

/* ---- comparisons --------------------------------------------------------- */

typedef struct {
    int fails;
    char first[320];
} tally;

#ifdef __GNUC__
__attribute__((format(printf, 2, 3)))
#endif
static void miss(tally *t, const char *fmt, ...)
{
    if (t->fails++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first, sizeof t->first, fmt, ap);
        va_end(ap);
    }
}

/* x agrees with ref: both NaN, the same infinity, or finite and within tol */
static int agrees(double x, double ref, double tol)
{
    if (isnan(ref)) return isnan(x);
    if (isinf(ref)) return x == ref;
    return isfinite(x) && fabs(x - ref) <= tol;
}

/* The reference's rules, elementwise (NaN and infinities included): a row
   with no visible key is O = 0 exactly and LSE = -inf. */
static void compare_with_reference(const problem *p, tally *t)
{
    const attn_spec *s = p->s;
    int64_t b, i, h, d;
    for (b = 0; b < p->nb; b++)
        for (h = 0; h < s->heads_q; h++)
            for (i = 0; i < p->lq; i++) {
                const double lse = p->lse[lse_index(p, b, i, h)], rlse = p->rlse[lse_index(p, b, i, h)];
                const float *o = p->o + o_index(p, b, i, h), *ro = p->ro + o_index(p, b, i, h);
                if (!agrees(lse, rlse, lse_tol(p->s, rlse)))
                    miss(t, "LSE[b=%lld h=%lld i=%lld] = %g, reference %g", (long long)b, (long long)h,
                         (long long)i, lse, rlse);
                for (d = 0; d < s->head_dim_v; d++) {
                    const int empty = isinf(rlse) && rlse < 0;
                    if (empty ? o[d] != 0.0f : !agrees(o[d], ro[d], o_tol(p, ro[d])))
                        miss(t, "O[b=%lld i=%lld h=%lld d=%lld] = %g, reference %g%s", (long long)b, (long long)i,
                             (long long)h, (long long)d, (double)o[d], (double)ro[d], empty ? " (no visible key)" : "");
                }
            }
}

/*
 * Logits near the float range.  A float32 dot product of D terms is off by
 * at most gamma_D * sum_d |q_d k_d| with gamma_D ~ D * 2^-24 (any order of
 * summation, FMA or not); scaling by scale * log2(e) and subtracting the
 * running max add a few roundings of the score's size.  So every score of
 * a row is off by at most
 *     delta = (D + 8) * 2^-24 * 1.5 * scale * max_j sum_d |q_d k_jd|
 * (plus a few roundings of the softcap when there is one).  LSE is
 * 1-Lipschitz in the scores: |LSE - ref| <= delta (+ the tolerance of
 * docs/testing.md).  Each softmax weight moves by a factor within e^(+-2 delta),
 * so |O - ref| <= (e^(2 delta) - 1) * max_j |V_j| (+ tolerance): at 1e3 and
 * 1e4, delta is ~10..1000 and that bound says nothing, but O must still be
 * finite and a convex combination of the V rows: within [min_j V_j, max_j
 * V_j] for each dim, over the row's valid keys (a superset of its visible
 * ones) and, with sinks, 0.  A row with no visible key is O = 0, LSE = -inf
 * (the sink with sinks).
 */
static void compare_large(const problem *p, tally *t)
{
    const attn_spec *s = p->s;
    const int group = s->heads_q / s->heads_kv;
    int64_t b, i, h, j, d;
    for (b = 0; b < p->nb; b++)
        for (h = 0; h < s->heads_q; h++)
            for (i = 0; i < p->lq; i++) {
                const int64_t hk = h / group, lkb = valid_keys(p, b);
                const double lse = p->lse[lse_index(p, b, i, h)], rlse = p->rlse[lse_index(p, b, i, h)];
                const float *q = q_at(p, b, i, h);
                const float *o = p->o + o_index(p, b, i, h), *ro = p->ro + o_index(p, b, i, h);
                double dots = 0.0, delta, growth;
                for (j = 0; j < lkb; j++) {
                    const float *k = k_at(p, b, j, hk);
                    double sum = 0.0;
                    for (d = 0; d < s->head_dim; d++) sum += q_bound(s, q, d) * fabs((double)k[d]);
                    if (sum > dots) dots = sum;
                }
                delta = (s->head_dim + 8) * U32 * 1.5 * (double)s->scale * dots + 8 * U32 * (double)s->softcap;
                growth = 2 * delta < 80 ? expm1(2 * delta) : INFINITY;
                if (isinf(rlse) && rlse < 0) {
                    if (!(isinf(lse) && lse < 0))
                        miss(t, "LSE[b=%lld h=%lld i=%lld] = %g, want -inf (no visible key)", (long long)b,
                             (long long)h, (long long)i, lse);
                    for (d = 0; d < s->head_dim_v; d++)
                        if (o[d] != 0.0f)
                            miss(t, "O[b=%lld i=%lld h=%lld d=%lld] = %g, want 0 (no visible key)", (long long)b,
                                 (long long)i, (long long)h, (long long)d, (double)o[d]);
                    continue;
                }
                cr_assert(isfinite(rlse), "%s: the reference's LSE is %g", s->name, rlse);
                if (!isfinite(lse) || fabs(lse - rlse) > lse_tol(s, rlse) + delta)
                    miss(t, "LSE[b=%lld h=%lld i=%lld] = %.9g, reference %.9g, allowed error %g", (long long)b,
                         (long long)h, (long long)i, lse, rlse, lse_tol(s, rlse) + delta);
                for (d = 0; d < s->head_dim_v; d++) {
                    /* with sinks, a sink is one more term with a zero value row */
                    double lo = s->sinks ? 0.0 : INFINITY, hi = s->sinks ? 0.0 : -INFINITY, vmax = 0.0, err32, slack;
                    for (j = 0; j < lkb; j++) {
                        const double x = v_at(p, b, j, hk)[d];
                        if (x < lo) lo = x;
                        if (x > hi) hi = x;
                        if (fabs(x) > vmax) vmax = fabs(x);
                    }
                    /* the f32 result may be off by err32; its rounding to
                       O's type adds up to the type's tolerance of it */
                    err32 = growth * vmax;
                    slack = ATTN_REF_TOL_REL_O(s) * vmax;
                    if (!isfinite(o[d]) || o[d] < lo - slack || o[d] > hi + slack)
                        miss(t, "O[b=%lld i=%lld h=%lld d=%lld] = %g, outside the values' range [%g, %g]",
                             (long long)b, (long long)i, (long long)h, (long long)d, (double)o[d], lo, hi);
                    else if (fabs(o[d] - ro[d]) > o_tol(p, fabs(ro[d]) + err32) + err32)
                        miss(t, "O[b=%lld i=%lld h=%lld d=%lld] = %g, reference %g, allowed error %g", (long long)b,
                             (long long)i, (long long)h, (long long)d, (double)o[d], (double)ro[d],
                             o_tol(p, fabs(ro[d]) + err32) + err32);
                }
            }
}

/*
 * O from denormal values (|V| ~ 1e-39): each product p * v and each sum of
 * them is rounded to a multiple of 2^-149 at worst, so O is off by at most
 * a few times Lk * 2^-149 (~1e-43) besides the usual relative error;
 * flushing denormals to zero would be off by |O| itself (~1e-40).  V
 * stored as f16 is subnormal in f16 only (|V| ~ 1e-5, normal f32 values):
 * the arithmetic is then the usual relative f32 one, and the problem is
 * the N(0,1) one scaled by the factor s of V, so its tolerance is the
 * usual one scaled, 1e-5 s + 1e-5 |ref| (the 1e-5 s term is below 2^-149
 * for s = 1e-39).  An O stored as bf16 or f16 adds half its type's ulp:
 * the relative bound of ATTN_REF_TOL_REL for normal values, half the
 * smallest subnormal (2^-134, 2^-25) below them.  With matmul = "bf16" the
 * products may flush denormal operands to zero (AVX512-BF16's vdpbf16ps
 * reads them as 0, as oneDNN's bf16 paths do; docs/config.md), so there O
 * may also be exactly 0.
 */
static double half_quantum(attn_dtype dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? ldexp(1.0, -134) : dtype == ATTN_DTYPE_F16 ? ldexp(1.0, -25) : 0.0;
}

static void compare_denormal_o(const problem *p, tally *t, double v_scale)
{
    const attn_spec *s = p->s;
    const double tol = (4.0 * (double)p->lk + 16.0) * ldexp(1.0, -149) + ATTN_REF_TOL_ABS * v_scale +
                       half_quantum(s->dtype_o);
    int64_t b, i, h, d;
    int nonzero = 0;
    for (b = 0; b < p->nb; b++)
        for (h = 0; h < s->heads_q; h++)
            for (i = 0; i < p->lq; i++) {
                const float *o = p->o + o_index(p, b, i, h), *ro = p->ro + o_index(p, b, i, h);
                for (d = 0; d < s->head_dim_v; d++) {
                    nonzero += ro[d] != 0.0f;
                    const int flushed = s->matmul == ATTN_DTYPE_BF16 && o[d] == 0.0f;
                    if (!flushed && !agrees(o[d], ro[d], tol + ATTN_REF_TOL_REL_O(s) * fabs(ro[d])))
                        miss(t, "O[b=%lld i=%lld h=%lld d=%lld] = %g, reference %g (denormal)", (long long)b,
                             (long long)i, (long long)h, (long long)d, (double)o[d], (double)ro[d]);
                }
            }
    cr_assert_gt(nonzero, 0, "%s: the reference's O is all zero: the case tests nothing", s->name);
}

/* ---- running every kernel on every ISA ---------------------------------- */

/* A comparison of p's kernel output with its reference, into t. */
typedef void (*compare_fn)(const problem *p, tally *t);

/* Stores the inputs and runs the reference once, then each of the nv
   variants vs, comparing each run into t[i]. */
static void run_each(problem *p, const attn_variant *const *vs, int nv, tally *t, compare_fn cmp)
{
    int i;
    store_inputs(p);
    run_reference(p);
    for (i = 0; i < nv; i++) {
        run_kernel(p, vs[i]);
        cmp(p, &t[i]);
    }
}

/* A case on the kernel's nv variants vs, one tally each. */
typedef void (*case_fn)(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk,
                        tally *t);

/* Runs fn for each kernel the filter accepts (NULL: all) and each of the
   n_list (Lq, Lk) in list, on every variant this CPU runs (one reference
   a case for them all); expects no miss.  Returns the number of runs. */
static int for_each_shape(int (*accept)(const attn_spec *), case_fn fn, const char *what, const int64_t (*list)[2],
                          int n_list)
{
    int n, i, sh, ran = 0;
    for (n = 0; n < N_KERNELS; n++) {
        const attn_kernel *k = kernels[n];
        const attn_variant *vs[MAX_VARIANTS];
        int nv;
        if (!runs_edges(k)) continue;
        /* the bounds here are the softmax's; linear kernels' edges (NaN,
           rows that see nothing) are in test_linear.c */
        if (k->spec.family != ATTN_FAMILY_SDPA) continue;
        if (accept != NULL && !accept(&k->spec)) continue;
        nv = runnable_variants(k, vs);
        for (sh = 0; sh < n_list; sh++) {
            tally t[MAX_VARIANTS];
            memset(t, 0, sizeof t);
            fn(k, vs, nv, list[sh][0], list[sh][1], t);
            for (i = 0; i < nv; i++) {
                cr_expect_eq(t[i].fails, 0, "%s/%s %s, Lq=%lld Lk=%lld: %d elements off; first: %s", k->spec.name,
                             attn_isa_name(vs[i]->isa), what, (long long)list[sh][0], (long long)list[sh][1],
                             t[i].fails, t[i].first);
                ran++;
            }
        }
    }
    cr_assert_gt(ran, 0, "%s: nothing ran", what);
    return ran;
}

static int for_each(int (*accept)(const attn_spec *), case_fn fn, const char *what)
{
    return for_each_shape(accept, fn, what, shapes, N_SHAPES);
}

/* ---- logits near the float range ----------------------------------------- */

static void scaled_logits(const attn_kernel *k, const attn_variant *const *vs, int nv,
                          int64_t lq, int64_t lk, tally *t, float f)
{
    problem p;
    size_t i;
    problem_init(&p, &k->spec, lq, lk, 101);
    /* |Q|, |K| < 1e4: finite in every storage type (f16 up to 65504) */
    for (i = 0; i < p.nq; i++) p.q[i] *= f;
    for (i = 0; i < p.nk; i++) p.k[i] *= f;
    run_each(&p, vs, nv, t, compare_large);
    problem_free(&p);
}

static void logits_1e3(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    scaled_logits(k, vs, nv, lq, lk, t, 1e3f);
}

static void logits_1e4(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    scaled_logits(k, vs, nv, lq, lk, t, 1e4f);
}

Test(extremes, logits_scaled_by_1e3) { for_each(NULL, logits_1e3, "Q and K x 1e3"); }
Test(extremes, logits_scaled_by_1e4) { for_each(NULL, logits_1e4, "Q and K x 1e4"); }

/* K row j times 1 + g j: the largest score of a row grows along the keys. */
static void grown_logits(const attn_kernel *k, const attn_variant *const *vs, int nv,
                         int64_t lq, int64_t lk, tally *t, float g)
{
    problem p;
    int64_t b, j, hk, d;
    problem_init(&p, &k->spec, lq, lk, 103);
    for (b = 0; b < p.nb; b++)
        for (j = 0; j < lk; j++)
            for (hk = 0; hk < k->spec.heads_kv; hk++)
                for (d = 0; d < k->spec.head_dim; d++) k_at(&p, b, j, hk)[d] *= 1.0f + g * (float)j;
    run_each(&p, vs, nv, t, compare_large);
    problem_free(&p);
}

/* g = 1/2: the max grows by a few units from key to key, past any fixed
   lead or lag of the running max. */
static void growing_logits(const attn_kernel *k, const attn_variant *const *vs, int nv,
                           int64_t lq, int64_t lk, tally *t)
{
    grown_logits(k, vs, nv, lq, lk, t, 0.5f);
}

/* g = 1/32: the max grows by a few units from tile to tile, within the
   prefill softmax's lag (8, base 2), so its reference stays below the max. */
static void creeping_logits(const attn_kernel *k, const attn_variant *const *vs, int nv,
                            int64_t lq, int64_t lk, tally *t)
{
    grown_logits(k, vs, nv, lq, lk, t, 1.0f / 32.0f);
}

Test(extremes, growing_logits)
{
    for_each(NULL, growing_logits, "K row j x (1 + j / 2)");
    for_each_shape(runs_long_cases, growing_logits, "K row j x (1 + j / 2)", tiles_shape, 1);
}
Test(extremes, creeping_logits)
{
    for_each_shape(runs_long_cases, creeping_logits, "K row j x (1 + j / 32)", tiles_shape, 1);
}

/* ---- infinities and NaN --------------------------------------------------- */

/* +inf and -inf in single elements of K: scores of +-inf (depending on the
   sign of q), which the reference turns into NaN (+inf) or a zero weight
   (-inf); a whole row of -inf scores is a row with no visible key. */
static void inf_in_k(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    const attn_spec *s = &k->spec;
    /* with shared_kv the first Dv values of a K row are its V: the
       infinities go past them (the rotary part), so V stays finite */
    const int d0 = s->shared_kv && s->head_dim > s->head_dim_v ? s->head_dim_v : 0;
    problem p;
    int64_t i, j, h;
    problem_init(&p, s, lq, lk, 202);
    k_at(&p, 0, 1, 0)[d0] = INFINITY;
    k_at(&p, 0, lk - 2, s->heads_kv - 1)[s->head_dim - 1] = -INFINITY;
    /* batch 1, kv head 0: every key's element d0 -inf and every query's
       element d0 positive: all its scores are -inf */
    for (j = 0; j < lk; j++) k_at(&p, 1, j, 0)[d0] = -INFINITY;
    for (i = 0; i < lq; i++)
        for (h = 0; h < s->heads_q / s->heads_kv; h++) q_at(&p, 1, i, h)[d0] = 0.5f;
    run_each(&p, vs, nv, t, compare_with_reference);
    problem_free(&p);
}

/* NaN in one element of Q and of K: NaN in exactly the outputs the
   reference gives NaN (rows that see the key; a NaN key that a row does
   not see must not reach it). */
static void nan_in_q_k(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    const attn_spec *s = &k->spec;
    /* with shared_kv, past the K row's V values (a NaN in V is
       nan_and_inf_in_v's case) */
    const int d0 = s->shared_kv && s->head_dim > s->head_dim_v ? s->head_dim_v : 0;
    problem p;
    problem_init(&p, s, lq, lk, 303);
    q_at(&p, 0, lq - 1, 0)[0] = NAN;
    q_at(&p, 1, lq / 2, s->heads_q - 1)[s->head_dim - 1] = NAN;
    k_at(&p, 0, lk / 2, 0)[s->head_dim - 1] = NAN;
    k_at(&p, 1, 1, s->heads_kv - 1)[d0] = NAN;
    run_each(&p, vs, nv, t, compare_with_reference);
    problem_free(&p);
}

/* Configs where every row sees every valid key: a NaN or an infinity in V
   reaches every row (docs/config.md, "Decisions beyond these rules": a masked key inside a partly
   visible tile may turn a row to NaN through a zero weight, so configs with
   masks are left to nan_in_q_k). */
static int sees_every_key(const attn_spec *s)
{
    return !s->causal && s->window_left < 0 && s->window_right < 0 && s->chunk == 0 && s->mask == ATTN_MASK_NONE;
}

static void nan_inf_in_v(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    const attn_spec *s = &k->spec;
    problem p;
    problem_init(&p, s, lq, lk, 404);
    v_at(&p, 0, 0, 0)[s->head_dim_v - 1] = NAN;
    v_at(&p, 1, 1, s->heads_kv - 1)[0] = INFINITY;
    v_at(&p, 0, lk - 1, s->heads_kv - 1)[0] = -INFINITY;
    run_each(&p, vs, nv, t, compare_with_reference);
    problem_free(&p);
}

Test(extremes, inf_in_k) { for_each(NULL, inf_in_k, "+-inf in K"); }
Test(extremes, nan_in_q_and_k) { for_each(NULL, nan_in_q_k, "NaN in Q and K"); }
Test(extremes, nan_and_inf_in_v) { for_each(sees_every_key, nan_inf_in_v, "NaN and +-inf in V"); }

/* ---- denormals ------------------------------------------------------------ */

/* FTZ and DAZ on (on = 1) or off for the calling thread, where the CPU has
   them (x86's MXCSR; elsewhere there is nothing to set); returns the state
   that restore_flush puts back. */
static unsigned set_flush(int on)
{
#ifdef HAVE_MXCSR
    const unsigned old = _mm_getcsr();
    _mm_setcsr(on ? (old | MXCSR_FTZ | MXCSR_DAZ) : (old & ~(MXCSR_FTZ | MXCSR_DAZ)));
    return old;
#else
    (void)on;
    return 0;
#endif
}

static void restore_flush(unsigned saved)
{
#ifdef HAVE_MXCSR
    _mm_setcsr(saved);
#else
    (void)saved;
#endif
}

/* A scale that makes uniform [-1, 1) values subnormal in the storage type
   (f32 and bf16 below 2^-126, f16 below 2^-14), and whether a stored value
   x is subnormal (or zero) there. */
static float denormal_scale(attn_dtype dtype)
{
    /* llama.cpp's blocks hold no f32 subnormal (a value is a code times an
       f16 scale, at least 2^-24): theirs is a block whose scale is an f16
       subnormal, max |x| / 127 (q8_0) or / 8 (q4_0) below 2^-14 */
    if (attn_dtype_values(dtype) > 1) return 1e-4f;
    return dtype == ATTN_DTYPE_F16 ? 1e-5f : 1e-39f;
}

static int stored_subnormal(attn_dtype dtype, float x)
{
    if (attn_dtype_values(dtype) > 1) return fabsf(x) < 127.0f * ldexpf(1.0f, -14); /* a code times such a scale */
    return fabsf(x) < (dtype == ATTN_DTYPE_F16 ? ldexpf(1.0f, -14) : FLT_MIN);
}

/* Q and K denormal (scores underflow to 0: a uniform softmax), V normal.
   With flush is 1 the kernel runs with FTZ and DAZ on (it then sees
   zeros, and must still give the uniform average); the reference always
   runs with them off. */
static void denormal_qk_run(const attn_kernel *k, const attn_variant *const *vs, int nv,
                            int64_t lq, int64_t lk, tally *t, int flush)
{
    const attn_spec *s = &k->spec;
    problem p;
    unsigned saved;
    size_t i;
    problem_init(&p, s, lq, lk, 505);
    for (i = 0; i < p.nq; i++) p.q[i] *= denormal_scale(s->dtype_q);
    for (i = 0; i < p.nk; i++) p.k[i] *= denormal_scale(s->dtype_kv);
    store_inputs(&p);
    cr_assert(stored_subnormal(s->dtype_q, p.q[0]) && stored_subnormal(s->dtype_kv, p.k[0]));
    saved = set_flush(0);
    run_reference(&p);
    for (i = 0; i < (size_t)nv; i++) {
        set_flush(flush);
        run_kernel(&p, vs[i]);
        restore_flush(saved);
        compare_with_reference(&p, &t[i]);
    }
    problem_free(&p);
}

static void denormal_qk(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    denormal_qk_run(k, vs, nv, lq, lk, t, 0);
}

static void denormal_qk_flushed(const attn_kernel *k, const attn_variant *const *vs, int nv,
                                int64_t lq, int64_t lk, tally *t)
{
    denormal_qk_run(k, vs, nv, lq, lk, t, 1);
}

/* compare_denormal_o at the scale denormal_v gives V */
static void compare_denormal_v(const problem *p, tally *t)
{
    compare_denormal_o(p, t, denormal_scale(p->s->dtype_kv));
}

/* V denormal, Q and K normal: O is denormal (with f16 V: as small as f16
   subnormals, which are normal f32 values) and, with FTZ and DAZ off, must
   match the reference down to the denormals' own rounding. */
static void denormal_v(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    const attn_spec *s = &k->spec;
    problem p;
    unsigned saved;
    size_t i;
    problem_init(&p, s, lq, lk, 606);
    for (i = 0; i < p.nv; i++) p.v[i] *= denormal_scale(s->dtype_kv);
    saved = set_flush(0);
    run_each(&p, vs, nv, t, compare_denormal_v);
    restore_flush(saved);
    problem_free(&p);
}

Test(extremes, denormal_q_and_k) { for_each(NULL, denormal_qk, "denormal Q and K"); }
Test(extremes, denormal_q_and_k_with_ftz_daz) { for_each(NULL, denormal_qk_flushed, "denormal Q and K, FTZ+DAZ on"); }
/* Kernels whose V is not the first values of the K rows: with shared_kv,
   V cannot be made denormal apart from K (denormal K, and so V, is
   denormal_q_and_k's case) */
static int v_apart_from_k(const attn_spec *s) { return !s->shared_kv; }

Test(extremes, denormal_v) { for_each(v_apart_from_k, denormal_v, "denormal V"); }

/* ---- rows with no visible key --------------------------------------------- */

static int can_hide_rows(const attn_spec *s)
{
    /* causal top-left rows are never past the keys (p_i = i sees key 0) */
    if (s->rope_style != ATTN_ROPE_NONE && s->rope_table && !s->top_left)
        /* bottom-right rows past the keys (Lq > Lk_b) sit at negative positions, which a RoPE
           table has no row for: the call is refused (ATTN_ERR_ROPE, which the kernel tests'
           matrix checks), so only a mask row can hide a row of such a kernel */
        return s->mask != ATTN_MASK_NONE && !s->padding;
    return s->padding || s->mask != ATTN_MASK_NONE || (s->causal && !s->top_left);
}

/* seqlens_k[0] = 0 (padding), an all-false mask row or an all -inf bias
   row (i = 1, or 0 when Lq = 1; every b and h), and, with causal, Lq > Lk_b
   (the first rows are past the keys): O = 0 and LSE = -inf there, the
   reference elsewhere. */
static void empty_rows(const attn_kernel *k, const attn_variant *const *vs, int nv, int64_t lq, int64_t lk, tally *t)
{
    const attn_spec *s = &k->spec;
    problem p;
    const int64_t row = lq > 1 ? 1 : 0;
    int64_t b, h, j, empty = 0, r;
    /* with causal only, the keys are fewer than the queries */
    if (!s->padding && s->mask == ATTN_MASK_NONE) lk = lq / 2;
    problem_init(&p, s, lq, lk, 707);
    p.seqlens[0] = 0;
    for (b = 0; b < p.nb; b++)
        for (h = 0; h < s->heads_q; h++)
            for (j = 0; j < lk; j++) {
                const int64_t m = b * p.a.mask_stride[0] + h * p.a.mask_stride[1] + row * p.a.mask_stride[2] + j;
                if (s->mask == ATTN_MASK_BOOL) p.keep[m] = 0;
                if (s->mask == ATTN_MASK_BIAS) p.bias[m] = -INFINITY;
            }
    run_each(&p, vs, nv, t, compare_with_reference);
    for (r = 0; r < p.nb * s->heads_q * lq; r++) /* LSE [B][Hq][Lq]: -inf, or the head's sink with sinks */
        empty += s->sinks ? p.rlse[r] == p.a.sinks[(r / lq) % s->heads_q] : isinf(p.rlse[r]) && p.rlse[r] < 0;
    cr_assert_gt(empty, 0, "%s: no empty row in the case", s->name);
    problem_free(&p);
}

Test(extremes, rows_with_no_visible_key) { for_each(can_hide_rows, empty_rows, "rows with no visible key"); }

/* ---- Lq = 1, Lk = 1, head dims 1 and 512 --------------------------------- */

/* attn_verify_case_variants (guard pages, strided layouts with NaN gaps,
   ragged seqlens with NaN past them) on the shapes lens, every variant this
   CPU runs against one reference a case. */
static void verify_shapes(const attn_kernel *k, const int64_t (*lens)[2], int n, int threads)
{
    const attn_variant *vs[MAX_VARIANTS];
    const int nv = runnable_variants(k, vs);
    int c;
    for (c = 0; c < 2 * n; c++) {
        attn_case cs;
        memset(&cs, 0, sizeof cs);
        cs.batch = 1 + c % 2;
        cs.seq_q = lens[c / 2][0];
        cs.seq_k = lens[c / 2][1];
        cs.strided = c % 2;
        cs.ragged = k->spec.padding && c % 2;
        cs.threads = threads;
        cs.seed = (uint64_t)(31 * c + 7);
        expect_case_on_variants(k, vs, nv, &cs); /* the reference once for them all */
    }
}

Test(extremes, one_query_or_one_key)
{
    static const int64_t lens[][2] = { { 1, 1 }, { 1, 2 }, { 2, 1 }, { 1, 37 }, { 37, 1 }, { 1, 300 }, { 300, 1 } };
    int n;
    for (n = 0; n < N_KERNELS; n++)
        if (runs_edges(kernels[n]) && runs_long_cases(&kernels[n]->spec)) verify_shapes(kernels[n], lens, 7, 1 + n % 2);
}

static void head_dim_edges(const attn_kernel *k, int expect_dim)
{
    static const int64_t lens[][2] = { { 1, 1 }, { 1, 300 }, { 64, 129 }, { 129, 64 }, { 17, 17 } };
    cr_assert(k->spec.head_dim == expect_dim || k->spec.head_dim_v == expect_dim, "%s: head dims %d and %d",
              k->spec.name, k->spec.head_dim, k->spec.head_dim_v);
    verify_shapes(k, lens, 5, 1);
    verify_shapes(k, lens, 5, 2);
}

Test(extremes, head_dim_1) { head_dim_edges(&attn_t_d1_kernel, 1); }
Test(extremes, head_dim_512) { head_dim_edges(&attn_t_d512_kernel, 512); }
Test(extremes, head_dim_v_512) { head_dim_edges(&attn_t_dv512_kernel, 512); }
