/*
 * vendor_check.c - the kernels of an `attngen vendor` folder against the
 * naive reference.
 *
 * tests/vendor_test.sh builds it from the vendored folder (whose attngen.h
 * lists the kernels in ATTNGEN_FOREACH_KERNEL) and runtime/attn_reference.c
 * of the repository, which is never vendored.  For every kernel, every ISA
 * variant this CPU runs and the dispatching entry point, a set of shapes
 * (decode and prefill rows, Lq < Lk and Lq > Lk, several tiles, ragged
 * seqlens_k with NaN rows past them, strided tensors with NaN-filled gaps,
 * the kernel's mask tensor when it takes one) must agree with
 * attn_reference.  Q, K, V and O are in the kernel's storage types (the
 * N(0,1) inputs narrowed with the vendored runtime's conversions, the
 * reference run on the stored values widened back).  The tolerance is
 * docs/testing.md's on N(0,1) inputs at the default scale, ATTN_REF_TOL_O of
 * attn_reference.h: |x - ref| <= 1e-5 + 1e-5 |ref| for an f32 O and for
 * LSE, 2^-8 or 2^-10 |ref| instead for a bf16 or f16 O, 1e-2 + 1e-2 |ref| for
 * the O of a kernel with bf16 products (matmul = "bf16"); a row that sees no
 * key must give O = 0 and LSE = -inf on both sides.  Elements of O outside
 * the tensor (the gaps) must keep their sentinel, 1 and 2 threads must give
 * the same bits of O as stored, and bad arguments must give a status.
 * Prints one line per kernel and each failure with the kernel, variant,
 * shape, element and both values; exits 1 on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "attngen.h"

#define MAX_REPORTS 5

#define ENTRY(name) &attn_##name##_kernel,
static const attn_kernel *const kernels[] = { ATTNGEN_FOREACH_KERNEL(ENTRY) };
#undef ENTRY

typedef struct {
    int64_t batch, seq_q, seq_k;
    int strided;   /* gaps between rows, heads and batch entries */
    int full_mask; /* a [B][Hq][Lq][Lk] mask instead of a broadcast [Lq][Lk] one */
    int empty_seq; /* with padding: the last sequence has no valid key */
} shape;

/* A problem: the tensors of one shape for one kernel, and its arguments:
   q, k, v the inputs as f32 (the stored values, widened), qs, ks, vs and o
   as the kernel stores them. */
typedef struct {
    attn_args a;
    attn_dtype dt_q, dt_kv, dt_o;
    float *q, *k, *v, *lse;
    void *qs, *ks, *vs, *o;
    float *o_ref, *lse_ref;
    unsigned char *o_inside; /* 1 where an O element belongs to the tensor */
    int32_t *seqlens;
    void *mask;
    size_t n_q, n_k, n_v, n_o, n_lse, n_mask;
} problem;

static uint64_t rng = 88172645463325252ull;

static double next_unit(void) /* uniform in (0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static float next_normal(void) /* N(0, 1), Box-Muller */
{
    const double u = next_unit(), v = next_unit();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Element count of a tensor with these extents and strides (dim 3 contiguous). */
static size_t span(int64_t e0, int64_t e1, int64_t e2, int64_t e3, const int64_t *stride)
{
    if (e0 == 0 || e1 == 0 || e2 == 0 || e3 == 0)
        return 1;
    return (size_t)((e0 - 1) * stride[0] + (e1 - 1) * stride[1] + (e2 - 1) * stride[2] + e3);
}

static void set_strides(int64_t *st, int64_t seq, int64_t heads, int64_t dim, int gaps)
{
    st[2] = dim + (gaps ? 3 : 0);
    st[1] = heads * st[2] + (gaps ? 5 : 0);
    st[0] = seq * st[1] + (gaps ? 7 : 0);
}

static float *alloc_floats(size_t n, float fill)
{
    float *p = (float *)malloc(n * sizeof(float));
    size_t i;
    if (p == NULL) {
        fprintf(stderr, "vendor_check: out of memory\n");
        exit(2);
    }
    for (i = 0; i < n; i++)
        p[i] = fill;
    return p;
}

/* ---- storage types: the vendored runtime's conversions ---- */

static void *alloc_stored(size_t n, attn_dtype t)
{
    void *p = malloc(n * attn_dtype_size(t) + 1);
    if (p == NULL) {
        fprintf(stderr, "vendor_check: out of memory\n");
        exit(2);
    }
    return p;
}

static float stored_value(attn_dtype t, const void *p, size_t i)
{
    float x;
    attn_dtype_to_f32_array(t, (const unsigned char *)p + i * attn_dtype_size(t), &x, 1);
    return x;
}

/* every element of a stored tensor set to NaN */
static void fill_stored_nan(attn_dtype t, void *p, size_t n)
{
    const float nan = NAN;
    size_t i;
    for (i = 0; i < n; i++)
        attn_f32_to_dtype_array(t, &nan, (unsigned char *)p + i * attn_dtype_size(t), 1);
}

/* f32 inputs stored as t, and the stored values put back into the f32 copy */
static void *store_input(attn_dtype t, float *values, size_t n)
{
    void *stored = alloc_stored(n, t);
    attn_f32_to_dtype_array(t, values, stored, n);
    attn_dtype_to_f32_array(t, stored, values, n);
    return stored;
}

/* Fills the elements of a [e0][e1][e2][e3] tensor inside its strides with N(0,1). */
static void fill_normal(float *t, int64_t e0, int64_t e1, int64_t e2, int64_t e3, const int64_t *st)
{
    int64_t a, b, c, d;
    for (a = 0; a < e0; a++)
        for (b = 0; b < e1; b++)
            for (c = 0; c < e2; c++)
                for (d = 0; d < e3; d++)
                    t[a * st[0] + b * st[1] + c * st[2] + d] = next_normal();
}

static void problem_init(problem *p, const attn_spec *s, const shape *sh)
{
    const int64_t B = sh->batch, lq = sh->seq_q, lk = sh->seq_k;
    int64_t b, i, h, d;

    memset(p, 0, sizeof *p);
    p->dt_q = s->dtype_q;
    p->dt_kv = s->dtype_kv;
    p->dt_o = s->dtype_o;
    p->a.batch = B;
    p->a.seq_q = lq;
    p->a.seq_k = lk;
    set_strides(p->a.q_stride, lq, s->heads_q, s->head_dim, sh->strided);
    set_strides(p->a.k_stride, lk, s->heads_kv, s->head_dim, sh->strided);
    set_strides(p->a.v_stride, lk, s->heads_kv, s->head_dim_v, sh->strided);
    set_strides(p->a.o_stride, lq, s->heads_q, s->head_dim_v, sh->strided);
    p->n_q = span(B, lq, s->heads_q, s->head_dim, p->a.q_stride);
    p->n_k = span(B, lk, s->heads_kv, s->head_dim, p->a.k_stride);
    p->n_v = span(B, lk, s->heads_kv, s->head_dim_v, p->a.v_stride);
    p->n_o = span(B, lq, s->heads_q, s->head_dim_v, p->a.o_stride);
    p->n_lse = (size_t)(B * s->heads_q * lq) + 1;

    /* gaps and rows past seqlens_k hold NaN: reading one poisons the output */
    p->q = alloc_floats(p->n_q, NAN);
    p->k = alloc_floats(p->n_k, NAN);
    p->v = alloc_floats(p->n_v, NAN);
    p->o = alloc_stored(p->n_o, p->dt_o);
    fill_stored_nan(p->dt_o, p->o, p->n_o);
    p->lse = alloc_floats(p->n_lse, NAN);
    p->o_ref = alloc_floats(p->n_o, NAN);
    p->lse_ref = alloc_floats(p->n_lse, NAN);
    fill_normal(p->q, B, lq, s->heads_q, s->head_dim, p->a.q_stride);
    p->o_inside = (unsigned char *)calloc(p->n_o, 1);
    p->seqlens = (int32_t *)calloc((size_t)B + 1, sizeof(int32_t));
    if (p->o_inside == NULL || p->seqlens == NULL) {
        fprintf(stderr, "vendor_check: out of memory\n");
        exit(2);
    }
    for (b = 0; b < B; b++) {
        /* ragged: Lk, then shorter and shorter */
        int64_t valid = s->padding ? lk - (b * lk) / (B + 1) : lk;
        if (s->padding && sh->empty_seq && b == B - 1)
            valid = 0;
        p->seqlens[b] = (int32_t)valid;
        fill_normal(p->k + b * p->a.k_stride[0], 1, valid, s->heads_kv, s->head_dim, p->a.k_stride);
        fill_normal(p->v + b * p->a.v_stride[0], 1, valid, s->heads_kv, s->head_dim_v, p->a.v_stride);
    }
    for (b = 0; b < B; b++)
        for (i = 0; i < lq; i++)
            for (h = 0; h < s->heads_q; h++)
                for (d = 0; d < s->head_dim_v; d++)
                    p->o_inside[b * p->a.o_stride[0] + i * p->a.o_stride[1] + h * p->a.o_stride[2] + d] = 1;

    p->qs = store_input(p->dt_q, p->q, p->n_q);
    p->ks = store_input(p->dt_kv, p->k, p->n_k);
    p->vs = store_input(p->dt_kv, p->v, p->n_v);
    p->a.q = p->qs;
    p->a.k = p->ks;
    p->a.v = p->vs;
    p->a.o = p->o;
    p->a.lse = p->lse;
    p->a.seqlens_k = s->padding ? p->seqlens : NULL;
    if (s->mask != ATTN_MASK_NONE) {
        const int64_t heads = sh->full_mask ? s->heads_q : 1, batches = sh->full_mask ? B : 1;
        size_t j;
        p->a.mask_stride[3] = 1;
        p->a.mask_stride[2] = lk;
        p->a.mask_stride[1] = sh->full_mask ? lq * lk : 0;
        p->a.mask_stride[0] = sh->full_mask ? heads * lq * lk : 0;
        p->n_mask = (size_t)(batches * heads * lq * lk) + 1;
        if (s->mask == ATTN_MASK_BOOL) {
            unsigned char *m = (unsigned char *)malloc(p->n_mask);
            if (m == NULL) exit(2);
            for (j = 0; j < p->n_mask; j++)
                m[j] = next_unit() < 0.75; /* keeps about 3 keys in 4 */
            p->mask = m;
        } else {
            float *m = alloc_floats(p->n_mask, 0.0f);
            for (j = 0; j < p->n_mask; j++)
                m[j] = next_normal();
            p->mask = m;
        }
        p->a.mask = p->mask;
    }
}

static void problem_free(problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->qs);
    free(p->ks);
    free(p->vs);
    free(p->o);
    free(p->lse);
    free(p->o_ref);
    free(p->lse_ref);
    free(p->o_inside);
    free(p->seqlens);
    free(p->mask);
}

/* got against the reference, within tol */
static int close_enough(float got, double want, double tol)
{
    if (isinf(want) || isnan(want))
        return (double)got == want; /* -inf (no visible key) on both sides */
    return fabs((double)got - want) <= tol; /* false for NaN */
}

static void shape_string(const shape *sh, char *buf, size_t n)
{
    snprintf(buf, n, "B=%d Lq=%d Lk=%d%s%s%s", (int)sh->batch, (int)sh->seq_q, (int)sh->seq_k,
             sh->strided ? " strided" : "", sh->full_mask ? " full-mask" : "",
             sh->empty_seq ? " empty-seq" : "");
}

/* Runs fwd on the problem and compares with the reference; returns failures. */
static int compare(const attn_kernel *kern, const char *variant, attn_fwd_fn fwd, problem *p,
                   const shape *sh, int threads)
{
    char where[160];
    size_t idx;
    int failures = 0;
    attn_status st;

    shape_string(sh, where, sizeof where);
    fill_stored_nan(p->dt_o, p->o, p->n_o);
    for (idx = 0; idx < p->n_lse; idx++)
        p->lse[idx] = NAN;
    p->a.o = p->o;
    p->a.lse = p->lse;
    p->a.threads = threads;
    st = fwd(&p->a);
    if (st != ATTN_OK) {
        printf("FAIL %s/%s %s: %s\n", kern->spec.name, variant, where, attn_status_string(st));
        return 1;
    }
    for (idx = 0; idx < p->n_o; idx++) {
        const float o = stored_value(p->dt_o, p->o, idx);
        const int bad = p->o_inside[idx] ? !close_enough(o, p->o_ref[idx], ATTN_REF_TOL_O(&kern->spec, p->o_ref[idx])) : !isnan(o);
        if (bad && ++failures <= MAX_REPORTS)
            printf("FAIL %s/%s %s threads=%d: O[%lu]%s = %.9g (%s), reference %.9g\n", kern->spec.name,
                   variant, where, threads, (unsigned long)idx, p->o_inside[idx] ? "" : " (a gap)",
                   o, attn_dtype_name(p->dt_o), p->o_ref[idx]);
    }
    for (idx = 0; idx + 1 < p->n_lse; idx++)
        if (!close_enough(p->lse[idx], p->lse_ref[idx], ATTN_REF_TOL(ATTN_DTYPE_F32, p->lse_ref[idx])) && ++failures <= MAX_REPORTS)
            printf("FAIL %s/%s %s threads=%d: LSE[%lu] = %.9g, reference %.9g\n", kern->spec.name,
                   variant, where, threads, (unsigned long)idx, p->lse[idx], p->lse_ref[idx]);
    if (!isnan(p->lse[p->n_lse - 1]) && ++failures <= MAX_REPORTS)
        printf("FAIL %s/%s %s: LSE written past its end\n", kern->spec.name, variant, where);
    return failures;
}

/* 1 and 2 threads give the same bits of O as stored (docs/c-api.md). */
static int same_bits(const attn_kernel *kern, const char *variant, attn_fwd_fn fwd, problem *p,
                     const shape *sh)
{
    void *o1 = alloc_stored(p->n_o, p->dt_o);
    float *l1 = alloc_floats(p->n_lse, NAN);
    attn_status s1, s2;
    int differ;
    char where[160];

    shape_string(sh, where, sizeof where);
    p->a.o = o1;
    p->a.lse = l1;
    p->a.threads = 1;
    s1 = fwd(&p->a);
    p->a.o = p->o;
    p->a.lse = p->lse;
    p->a.threads = 2;
    s2 = fwd(&p->a);
    differ = s1 != ATTN_OK || s2 != ATTN_OK ||
             memcmp(o1, p->o, p->n_o * attn_dtype_size(p->dt_o)) != 0 ||
             memcmp(l1, p->lse, p->n_lse * sizeof(float)) != 0;
    if (differ)
        printf("FAIL %s/%s %s: 1 and 2 threads differ (statuses %d, %d)\n", kern->spec.name, variant,
               where, (int)s1, (int)s2);
    free(o1);
    free(l1);
    return differ;
}

/* Bad arguments give a status, not a crash. */
static int bad_args(const attn_kernel *kern, problem *p)
{
    attn_args a = p->a;
    int failures = 0;
    a.q = NULL;
    if (kern->fwd(&a) != ATTN_ERR_NULL_ARG) {
        printf("FAIL %s: q = NULL does not give ATTN_ERR_NULL_ARG\n", kern->spec.name);
        failures++;
    }
    a = p->a;
    a.threads = -1;
    if (kern->fwd(&a) != ATTN_ERR_THREADS) {
        printf("FAIL %s: threads = -1 does not give ATTN_ERR_THREADS\n", kern->spec.name);
        failures++;
    }
    a = p->a;
    a.seq_k = -1;
    if (kern->fwd(&a) != ATTN_ERR_SHAPE) {
        printf("FAIL %s: seq_k = -1 does not give ATTN_ERR_SHAPE\n", kern->spec.name);
        failures++;
    }
    return failures;
}

static int check_kernel(const attn_kernel *kern)
{
    const attn_spec *s = &kern->spec;
    const shape shapes[] = {
        { 1, 1, 1, 0, 0, 0 },
        { 2, 1, 77, 0, 0, 0 },   /* decode */
        { 3, 5, 37, 0, 1, 0 },
        { 2, 17, 17, 0, 0, 0 },
        { 2, 40, 23, 0, 0, 0 },  /* more rows than keys */
        { 2, 33, 50, 1, 1, 1 },  /* strided */
        { 2, 3, 300, 1, 0, 1 },  /* decode, strided */
        { 2, (int64_t)s->tile_q + 3, 2 * (int64_t)s->tile_kv + 5, 0, 0, 0 }, /* several tiles */
    };
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    char names[128] = "";
    int failures = 0, variants = 0, i, c;

    for (c = 0; c < n_shapes; c++) {
        problem p;
        attn_args ra;
        attn_status st;
        problem_init(&p, s, &shapes[c]);
        ra = p.a; /* the reference: on the stored inputs, widened */
        ra.q = p.q;
        ra.k = p.k;
        ra.v = p.v;
        ra.o = p.o_ref;
        ra.lse = p.lse_ref;
        st = attn_reference(s, &ra);
        if (st != ATTN_OK) {
            printf("FAIL %s: the reference says %s\n", s->name, attn_status_string(st));
            failures++;
        } else {
            for (i = 0; i < kern->n_variants; i++) {
                const attn_variant *v = &kern->variants[i];
                if (!attn_isa_supported(v->isa))
                    continue;
                failures += compare(kern, attn_isa_name(v->isa), v->fwd, &p, &shapes[c], 1);
                if (c == n_shapes - 1)
                    failures += same_bits(kern, attn_isa_name(v->isa), v->fwd, &p, &shapes[c]);
            }
            failures += compare(kern, "entry", kern->fwd, &p, &shapes[c], 0);
        }
        if (c == 0)
            failures += bad_args(kern, &p);
        problem_free(&p);
    }
    for (i = 0; i < kern->n_variants; i++) {
        if (!attn_isa_supported(kern->variants[i].isa))
            continue;
        if (variants++ > 0)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, attn_isa_name(kern->variants[i].isa), sizeof names - strlen(names) - 1);
    }
    if (variants == 0) {
        printf("FAIL %s: no variant runs on this CPU\n", s->name);
        failures++;
    }
    printf("%s: %s and the entry point, %d shapes: %d failures\n", s->name, names, n_shapes,
           failures);
    return failures;
}

int main(void)
{
    const int n = (int)(sizeof kernels / sizeof kernels[0]);
    int i, failures = 0;
    for (i = 0; i < n; i++)
        failures += check_kernel(kernels[i]);
    printf("vendor_check: %d kernels, %d failures\n", n, failures);
    return failures == 0 ? 0 : 1;
}
