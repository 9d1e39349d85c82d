/*
 * attn_verify.c - runs a kernel on random inputs and compares it with the
 * naive reference (the verification rules of docs/testing.md).
 *
 * Every tensor sits right before a PROT_NONE page, so an over-read faults.
 * Strided layouts leave gaps filled with NaN (inputs) or a sentinel (O):
 * reading a gap poisons the output, writing one is reported.  Ragged
 * batches fill K/V rows at or past seqlens_k with NaN for the same reason.
 *
 * Storage types: Q, K, V and O are allocated in the types the kernel's
 * spec records.  The random f32 inputs are narrowed to that type (round to
 * nearest even) and the stored values widened back, exactly, for the
 * reference, which so computes on exactly what the kernel reads; the
 * kernel's O is widened and compared within the tolerance of its storage
 * type (ATTN_REF_TOL, attn_reference.h).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mmap, sysconf */
#endif
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS on glibc and musl */

#include "attn_verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attn_reference.h"

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif
#ifdef MAP_POPULATE
#define GUARD_POPULATE MAP_POPULATE
#else
#define GUARD_POPULATE 0
#endif

/* The tolerance, per element of O (by O's storage type) and LSE (f32), is
   ATTN_REF_TOL of attn_reference.h, stated there with its reasons. */

/* Bit patterns of O's storage type: O's gaps (must survive) and O's
   elements before the run (must be overwritten).  All are quiet NaNs with a
   recognizable payload. */
static uint32_t o_gap_bits(attn_dtype dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? 0x7fdeu : dtype == ATTN_DTYPE_F16 ? 0x7eadu : 0x7fc0deadu;
}

static uint32_t o_unset_bits(attn_dtype dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? 0x7fcbu : dtype == ATTN_DTYPE_F16 ? 0x7e0bu : 0x7fc00badu;
}

/* ---- storage types ------------------------------------------------------ */

void attn_verify_narrow(attn_dtype dtype, const float *src, void *dst, size_t n)
{
    attn_f32_to_dtype_array(dtype, src, dst, n);
}

void attn_verify_widen(attn_dtype dtype, const void *src, float *dst, size_t n)
{
    attn_dtype_to_f32_array(dtype, src, dst, n);
}

/* Element i of an array of storage type dtype: its bits, its value. */
static uint32_t load_bits(attn_dtype dtype, const void *base, size_t i)
{
    if (dtype == ATTN_DTYPE_F32) {
        uint32_t bits;
        memcpy(&bits, (const unsigned char *)base + i * sizeof bits, sizeof bits);
        return bits;
    }
    return ((const uint16_t *)base)[i];
}

static void store_bits(attn_dtype dtype, void *base, size_t i, uint32_t bits)
{
    if (dtype == ATTN_DTYPE_F32)
        memcpy((unsigned char *)base + i * sizeof bits, &bits, sizeof bits);
    else
        ((uint16_t *)base)[i] = (uint16_t)bits;
}

static float load_value(attn_dtype dtype, const void *base, size_t i)
{
    float x;
    switch (dtype) {
    case ATTN_DTYPE_BF16: return attn_bf16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_F16: return attn_f16_to_f32(((const uint16_t *)base)[i]);
    default:
        memcpy(&x, (const unsigned char *)base + i * sizeof x, sizeof x);
        return x;
    }
}

/* ---- guard pages -------------------------------------------------------- */

static size_t page_size(void)
{
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

int attn_guard_alloc(attn_guard_buf *g, size_t bytes)
{
    const size_t ps = page_size();
    size_t pages, len;
    unsigned char *map;

    memset(g, 0, sizeof *g);
    if (bytes > SIZE_MAX - ps)
        return -1;
    pages = (bytes + ps - 1) / ps;
    if (pages > SIZE_MAX / ps - 2)
        return -1;
    len = (pages + 2) * ps; /* [guard][data pages][guard] */
    /* the data pages mapped in one call where the system can (MAP_POPULATE,
       Linux): every page is written soon, and faulting them in one at a
       time was a fifth of the kernel tests' time on a VM */
    map = (unsigned char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | GUARD_POPULATE,
                                -1, 0);
    if (map == (unsigned char *)MAP_FAILED)
        return -1;
    if (mprotect(map, ps, PROT_NONE) != 0 || mprotect(map + ps + pages * ps, ps, PROT_NONE) != 0) {
        munmap(map, len);
        return -1;
    }
    g->map = map;
    g->map_len = len;
    g->bytes = bytes;
    g->ptr = map + ps + pages * ps - bytes; /* ends at the trailing guard */
    return 0;
}

void attn_guard_free(attn_guard_buf *g)
{
    if (g->map != NULL)
        munmap(g->map, g->map_len);
    memset(g, 0, sizeof *g);
}

/* ---- deterministic random inputs ---------------------------------------- */

typedef struct {
    uint64_t state;
    double spare; /* the second normal of the last pair drawn */
    int has_spare;
} rng;

static void rng_init(rng *r, uint64_t seed)
{
    r->state = seed;
    r->spare = 0.0;
    r->has_spare = 0;
}

static uint64_t rng_next(rng *r) /* splitmix64 */
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static double rng_uniform(rng *r)
{
    return ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* N(0, 1) by Marsaglia's polar method: a point uniform in the unit disc
   gives two independent normals for one log and no cosine (filling the
   inputs was a fifth of the kernel tests' time with Box-Muller's cosine
   half alone); the second is returned by the next call. */
static float rng_normal(rng *r)
{
    double u, v, s;
    if (r->has_spare) {
        r->has_spare = 0;
        return (float)r->spare;
    }
    do {
        u = 2.0 * rng_uniform(r) - 1.0;
        v = 2.0 * rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    s = sqrt(-2.0 * log(s) / s);
    r->spare = v * s;
    r->has_spare = 1;
    return (float)(u * s);
}

/* 0..n inclusive */
static int64_t rng_range(rng *r, int64_t n)
{
    return (int64_t)(rng_next(r) % (uint64_t)(n + 1));
}

/* seqlens_k of a padded case: Lk for every batch, or (ragged) a mix of 0, Lk
   and random lengths; one draw per batch either way, so the inputs drawn
   after are the same. */
static void fill_seqlens(int32_t *seqlens, int64_t B, int64_t Lk, int ragged, rng *r)
{
    int64_t b;
    for (b = 0; b < B; b++) {
        const uint64_t kind = rng_next(r) % 4;
        int64_t len = Lk;
        if (ragged)
            len = kind == 0 ? 0 : kind == 1 ? Lk : rng_range(r, Lk);
        seqlens[b] = (int32_t)len;
    }
}

/* ---- layouts ------------------------------------------------------------ */

/* A 4-D tensor's extents and element strides, and its element span. */
typedef struct {
    int64_t ext[4], str[4];
    size_t span; /* 1 + the largest offset; 0 when empty */
} layout4;

/* Computes l->span; -1 when it is absurdly large for a test. */
static int layout_span(layout4 *l)
{
    const double limit = 1e11; /* elements */
    double last = 0.0;
    int d;
    for (d = 0; d < 4; d++)
        if (l->ext[d] == 0) {
            l->span = 0;
            return 0;
        }
    for (d = 0; d < 4; d++)
        last += (double)(l->ext[d] - 1) * (double)l->str[d];
    if (last + 1.0 > limit)
        return -1;
    l->span = 0;
    for (d = 0; d < 4; d++)
        l->span += (size_t)(l->ext[d] - 1) * (size_t)l->str[d];
    l->span += 1;
    return 0;
}

/*
 * [B][L][H][dim] with the last dim contiguous.  style 0: contiguous BSHD;
 * 1: BSHD with padded head, row and batch strides; 2: heads outermost
 * (a BHSD buffer viewed as BSHD), padded.
 */
static void tensor_layout(layout4 *l, int64_t b, int64_t len, int64_t h, int64_t dim, int style)
{
    l->ext[0] = b;
    l->ext[1] = len;
    l->ext[2] = h;
    l->ext[3] = dim;
    l->str[3] = 1;
    if (style == 0) {
        l->str[2] = dim;
        l->str[1] = h * dim;
        l->str[0] = len * h * dim;
    } else if (style == 1) {
        l->str[2] = dim + 3;
        l->str[1] = h * l->str[2] + 5;
        l->str[0] = len * l->str[1] + 7;
    } else {
        l->str[1] = dim + 2;
        l->str[2] = len * l->str[1] + 3;
        l->str[0] = h * l->str[2] + 5;
    }
}

/*
 * The mask [B][Hq][Lq][Lk].  style 0: dense; 1: padded dense; 2: one
 * [Lq][Lk] matrix broadcast over b and h; 3: [B][1][Lq][Lk] broadcast over
 * h; 4: stored transposed ([B][Hq][Lk][Lq]: a key stride that is not 1).
 */
static void mask_layout(layout4 *l, int64_t b, int64_t hq, int64_t lq, int64_t lk, int style)
{
    l->ext[0] = b;
    l->ext[1] = hq;
    l->ext[2] = lq;
    l->ext[3] = lk;
    switch (style) {
    case 1:
        l->str[3] = 1;
        l->str[2] = lk + 3;
        l->str[1] = lq * l->str[2] + 5;
        l->str[0] = hq * l->str[1] + 7;
        break;
    case 2:
        l->str[3] = 1;
        l->str[2] = lk + 1;
        l->str[1] = 0;
        l->str[0] = 0;
        break;
    case 3:
        l->str[3] = 1;
        l->str[2] = lk;
        l->str[1] = 0;
        l->str[0] = lq * lk + 3;
        break;
    case 4:
        l->str[2] = 1;
        l->str[3] = lq + 1;
        l->str[1] = lk * l->str[3] + 2;
        l->str[0] = hq * l->str[1] + 4;
        break;
    default:
        l->str[3] = 1;
        l->str[2] = lk;
        l->str[1] = lq * lk;
        l->str[0] = hq * lq * lk;
        break;
    }
}

static int64_t offset4(const layout4 *l, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * l->str[0] + b * l->str[1] + c * l->str[2] + d * l->str[3];
}

/* ---- one case's buffers ------------------------------------------------- */

typedef struct {
    const attn_spec *spec;
    attn_case c;
    layout4 lq, lk, lv, lo, lm, lp;
    /* Q, K, V and O in their storage types, LSE (f32), mask, seqlens_k, and
       the weights P (f32; specs with weights) */
    attn_guard_buf q, k, v, o, lse, mask, seqlens, p;
    /* the stored Q, K and V widened to f32, with the same layouts (the
       guard buffers themselves for f32 storage): the reference's inputs */
    float *qw, *kw, *vw;
    unsigned char *o_described; /* per O span element: 1 = an element of O */
    unsigned char *p_described; /* per P span element: 1 = an element of P */
    size_t lse_count;
    /* linear specs with state: the kernel's S and z (in/out, against guard
       pages) and the state before the call (s0, z0), which the reference
       starts from too */
    attn_guard_buf state_s, state_z;
    float *s0, *z0;
    size_t s_count, z_count;
    attn_args args;
} case_bufs;

/* frees a widened copy unless it is the stored tensor itself */
static void free_wide(float **wide, const attn_guard_buf *stored)
{
    if (*wide != NULL && (void *)*wide != stored->ptr)
        free(*wide);
    *wide = NULL;
}

static void case_free(case_bufs *cb)
{
    free_wide(&cb->qw, &cb->q);
    free_wide(&cb->kw, &cb->k);
    free_wide(&cb->vw, &cb->v);
    attn_guard_free(&cb->q);
    attn_guard_free(&cb->k);
    attn_guard_free(&cb->v);
    attn_guard_free(&cb->o);
    attn_guard_free(&cb->lse);
    attn_guard_free(&cb->mask);
    attn_guard_free(&cb->seqlens);
    attn_guard_free(&cb->p);
    attn_guard_free(&cb->state_s);
    attn_guard_free(&cb->state_z);
    free(cb->s0);
    cb->s0 = NULL;
    free(cb->z0);
    cb->z0 = NULL;
    free(cb->o_described);
    cb->o_described = NULL;
    free(cb->p_described);
    cb->p_described = NULL;
}

static void fill_nan(float *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = NAN;
}

/* Fills every element of a [B][L][H][dim] tensor with N(0,1); rows at or
   past valid[b] (when valid is not NULL) stay NaN. */
static void fill_tensor(float *base, const layout4 *l, const int32_t *valid, rng *r)
{
    int64_t b, s, h, d;
    fill_nan(base, l->span);
    for (b = 0; b < l->ext[0]; b++)
        for (s = 0; s < l->ext[1]; s++)
            for (h = 0; h < l->ext[2]; h++)
                for (d = 0; d < l->ext[3]; d++) {
                    const float x = rng_normal(r);
                    if (valid == NULL || s < valid[b])
                        base[offset4(l, b, s, h, d)] = x;
                }
}

/* O: gaps get the sentinel, elements the "unset" NaN; LSE all NaN (for a
   linear spec, which must not write it, the gap sentinel); the state (linear
   specs with state) back to the state before the call. */
static void reset_outputs(case_bufs *cb)
{
    const attn_dtype dt = cb->spec->dtype_o;
    const uint32_t unset = o_unset_bits(dt), gap = o_gap_bits(dt);
    size_t i;
    for (i = 0; i < cb->lo.span; i++)
        store_bits(dt, cb->o.ptr, i, cb->o_described[i] ? unset : gap);
    if (cb->spec->family == ATTN_FAMILY_LINEAR)
        for (i = 0; i < cb->lse_count; i++)
            store_bits(ATTN_DTYPE_F32, cb->lse.ptr, i, o_gap_bits(ATTN_DTYPE_F32));
    else
        fill_nan((float *)cb->lse.ptr, cb->lse_count);
    if (cb->s_count > 0)
        memcpy(cb->state_s.ptr, cb->s0, cb->s_count * sizeof(float));
    if (cb->z_count > 0)
        memcpy(cb->state_z.ptr, cb->z0, cb->z_count * sizeof(float));
    for (i = 0; i < cb->lp.span; i++) /* P (f32): gaps the sentinel, elements "unset" */
        store_bits(ATTN_DTYPE_F32, cb->p.ptr, i,
                   cb->p_described[i] ? o_unset_bits(ATTN_DTYPE_F32) : o_gap_bits(ATTN_DTYPE_F32));
}

static int alloc_floats(attn_guard_buf *g, size_t n)
{
    return n > SIZE_MAX / sizeof(float) ? -1 : attn_guard_alloc(g, n * sizeof(float));
}

/* n elements of storage type dtype against a guard page, and *wide, n
   floats for the widened values (the same memory for f32).  0 or -1. */
static int alloc_stored(attn_guard_buf *g, float **wide, attn_dtype dtype, size_t n)
{
    const size_t esize = attn_dtype_size(dtype);
    *wide = NULL;
    if (esize == 0 || n > SIZE_MAX / sizeof(float) || attn_guard_alloc(g, n * esize) != 0)
        return -1;
    if (dtype == ATTN_DTYPE_F32) {
        *wide = (float *)g->ptr;
        return 0;
    }
    *wide = (float *)malloc(n * sizeof(float) + 1);
    return *wide != NULL ? 0 : -1;
}

void attn_verify_store(attn_dtype dtype, float *wide, void *stored, size_t n)
{
    attn_verify_narrow(dtype, wide, stored, n);
    attn_verify_widen(dtype, stored, wide, n);
}

/* The f32 values in wide (gaps included) stored into a guarded tensor. */
static void store_input(attn_dtype dtype, float *wide, attn_guard_buf *stored, size_t n)
{
    attn_verify_store(dtype, wide, stored->ptr, n);
}

/* n states (S [D][Dv], z [D]) of 1 to 16 earlier N(0,1) keys and values
   each, summed in double and rounded once.  0, or -1 when out of memory. */
static int fill_state(float *s, float *z, int64_t n, int64_t D, int64_t Dv, rng *r)
{
    double *k = (double *)malloc(((size_t)D + 1) * sizeof *k);
    double *v = (double *)malloc(((size_t)Dv + 1) * sizeof *v);
    double *acc = (double *)malloc(((size_t)D * (size_t)Dv + (size_t)D + 1) * sizeof *acc);
    int64_t t, m, j, d, e;

    if (k == NULL || v == NULL || acc == NULL) {
        free(k);
        free(v);
        free(acc);
        return -1;
    }
    for (t = 0; t < n; t++) {
        const int64_t keys = 1 + (int64_t)(rng_next(r) % 16);
        for (j = 0; j < D * Dv + D; j++)
            acc[j] = 0.0;
        for (m = 0; m < keys; m++) {
            for (d = 0; d < D; d++) {
                const double x = rng_normal(r);
                k[d] = x > 0.0 ? x + 1.0 : exp(x); /* elu(x) + 1 */
            }
            for (e = 0; e < Dv; e++)
                v[e] = rng_normal(r);
            for (d = 0; d < D; d++) {
                acc[D * Dv + d] += k[d];
                for (e = 0; e < Dv; e++)
                    acc[d * Dv + e] += k[d] * v[e];
            }
        }
        for (d = 0; d < D; d++) {
            z[t * D + d] = (float)acc[D * Dv + d];
            for (e = 0; e < Dv; e++)
                s[(t * D + d) * Dv + e] = (float)acc[d * Dv + e];
        }
    }
    free(k);
    free(v);
    free(acc);
    return 0;
}

/* Builds the inputs, layouts and args of a case; ATTN_OK or an error. */
static attn_status case_build(case_bufs *cb, const attn_spec *spec, const attn_case *c)
{
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k;
    const int64_t Hq = spec->heads_q, Hkv = spec->heads_kv;
    const int64_t D = spec->head_dim, Dv = spec->head_dim_v;
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    /* linear attention has no mask, weights or dropout: their fields are ignored */
    const attn_mask_kind mask = linear ? ATTN_MASK_NONE : spec->mask;
    const int weights = !linear && spec->weights;
    int32_t *seqlens = NULL;
    int style = 0, mstyle = 0;
    rng r;
    int64_t b, h, i, j;

    memset(cb, 0, sizeof *cb);
    cb->spec = spec;
    cb->c = *c;
    if (B < 0 || Lq < 0 || Lk < 0)
        return ATTN_ERR_SHAPE;
    rng_init(&r, c->seed);

    if (c->strided) {
        style = 1 + (int)(rng_next(&r) % 2);
        mstyle = 1 + (int)(rng_next(&r) % 4);
    }
    tensor_layout(&cb->lq, B, Lq, Hq, D, style);
    tensor_layout(&cb->lk, B, Lk, Hkv, D, style);
    tensor_layout(&cb->lv, B, Lk, Hkv, Dv, style);
    tensor_layout(&cb->lo, B, Lq, Hq, Dv, style);
    mask_layout(&cb->lm, B, Hq, Lq, Lk, mstyle);
    /* P: dense, or (strided cases) padded or key-major, from the seed alone
       so that the other inputs stay the same random stream */
    if (weights)
        mask_layout(&cb->lp, B, Hq, Lq, Lk, c->strided ? ((c->seed >> 4) & 1 ? 4 : 1) : 0);
    if (layout_span(&cb->lq) || layout_span(&cb->lk) || layout_span(&cb->lv) ||
        layout_span(&cb->lo) || layout_span(&cb->lm) || layout_span(&cb->lp))
        return ATTN_ERR_TOO_LARGE;
    cb->lse_count = (size_t)B * (size_t)Hq * (size_t)Lq;

    if (alloc_stored(&cb->q, &cb->qw, spec->dtype_q, cb->lq.span) ||
        alloc_stored(&cb->k, &cb->kw, spec->dtype_kv, cb->lk.span) ||
        alloc_stored(&cb->v, &cb->vw, spec->dtype_kv, cb->lv.span) ||
        attn_dtype_size(spec->dtype_o) == 0 || cb->lo.span > SIZE_MAX / sizeof(float) ||
        attn_guard_alloc(&cb->o, cb->lo.span * attn_dtype_size(spec->dtype_o)) ||
        alloc_floats(&cb->lse, cb->lse_count) ||
        attn_guard_alloc(&cb->seqlens, (size_t)B * sizeof(int32_t)) ||
        (weights && alloc_floats(&cb->p, cb->lp.span)))
        goto nomem;

    /* seqlens_k: with padding, ragged cases mix 0, Lk and random lengths */
    if (spec->padding) {
        seqlens = (int32_t *)cb->seqlens.ptr;
        fill_seqlens(seqlens, B, Lk, c->ragged, &r);
    }

    /* N(0,1) as f32, then as stored (the same random stream for every
       storage type) */
    fill_tensor(cb->qw, &cb->lq, NULL, &r);
    fill_tensor(cb->kw, &cb->lk, seqlens, &r);
    fill_tensor(cb->vw, &cb->lv, seqlens, &r);
    store_input(spec->dtype_q, cb->qw, &cb->q, cb->lq.span);
    store_input(spec->dtype_kv, cb->kw, &cb->k, cb->lk.span);
    store_input(spec->dtype_kv, cb->vw, &cb->v, cb->lv.span);

    /* the state before the call (linear specs with state): that of a few
       earlier N(0,1) keys and values, S = sum phi(k) v^T (any sign) and
       z = sum phi(k) (positive), as a real state is; drawn after the other
       inputs, so those stay the same random stream */
    if (linear && spec->state) {
        cb->s_count = (size_t)B * (size_t)Hkv * (size_t)D * (size_t)Dv;
        cb->z_count = (size_t)B * (size_t)Hkv * (size_t)D;
        if (alloc_floats(&cb->state_s, cb->s_count) || alloc_floats(&cb->state_z, cb->z_count))
            goto nomem;
        cb->s0 = (float *)malloc(cb->s_count * sizeof(float) + 1);
        cb->z0 = (float *)malloc(cb->z_count * sizeof(float) + 1);
        if (cb->s0 == NULL || cb->z0 == NULL || fill_state(cb->s0, cb->z0, B * Hkv, D, Dv, &r) != 0)
            goto nomem;
    }

    /* the mask: broadcast dims (stride 0) are filled once */
    if (mask != ATTN_MASK_NONE) {
        const int is_bool = mask == ATTN_MASK_BOOL;
        const int64_t nb = cb->lm.str[0] == 0 ? 1 : B, nh = cb->lm.str[1] == 0 ? 1 : Hq;
        const size_t esize = is_bool ? 1 : sizeof(float);
        if (cb->lm.span > SIZE_MAX / esize || attn_guard_alloc(&cb->mask, cb->lm.span * esize))
            goto nomem;
        if (is_bool) { /* gaps random: a read of one is likely to show */
            unsigned char *m = (unsigned char *)cb->mask.ptr;
            size_t e;
            for (e = 0; e < cb->lm.span; e++)
                m[e] = (unsigned char)(rng_next(&r) & 1);
        } else {
            fill_nan((float *)cb->mask.ptr, cb->lm.span);
        }
        for (b = 0; b < nb; b++)
            for (h = 0; h < nh; h++)
                for (i = 0; i < Lq; i++)
                    for (j = 0; j < Lk; j++) {
                        const int64_t off = offset4(&cb->lm, b, h, i, j);
                        if (is_bool)
                            ((unsigned char *)cb->mask.ptr)[off] = rng_uniform(&r) < 0.8;
                        else
                            ((float *)cb->mask.ptr)[off] = rng_normal(&r);
                    }
    }

    /* which O span elements are elements of O */
    cb->o_described = (unsigned char *)calloc(cb->lo.span + 1, 1);
    if (cb->o_described == NULL)
        goto nomem;
    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++)
            for (h = 0; h < Hq; h++)
                for (j = 0; j < Dv; j++)
                    cb->o_described[offset4(&cb->lo, b, i, h, j)] = 1;
    cb->p_described = (unsigned char *)calloc(cb->lp.span + 1, 1);
    if (cb->p_described == NULL)
        goto nomem;
    if (weights)
        for (b = 0; b < B; b++)
            for (h = 0; h < Hq; h++)
                for (i = 0; i < Lq; i++)
                    for (j = 0; j < Lk; j++)
                        cb->p_described[offset4(&cb->lp, b, h, i, j)] = 1;
    reset_outputs(cb);

    cb->args.batch = B;
    cb->args.seq_q = Lq;
    cb->args.seq_k = Lk;
    cb->args.q = cb->q.ptr;
    cb->args.k = cb->k.ptr;
    cb->args.v = cb->v.ptr;
    cb->args.o = cb->o.ptr;
    cb->args.lse = (float *)cb->lse.ptr;
    memcpy(cb->args.q_stride, cb->lq.str, sizeof cb->args.q_stride);
    memcpy(cb->args.k_stride, cb->lk.str, sizeof cb->args.k_stride);
    memcpy(cb->args.v_stride, cb->lv.str, sizeof cb->args.v_stride);
    memcpy(cb->args.o_stride, cb->lo.str, sizeof cb->args.o_stride);
    cb->args.seqlens_k = seqlens;
    if (mask != ATTN_MASK_NONE) {
        cb->args.mask = cb->mask.ptr;
        memcpy(cb->args.mask_stride, cb->lm.str, sizeof cb->args.mask_stride);
    }
    if (weights) {
        cb->args.weights = (float *)cb->p.ptr;
        memcpy(cb->args.weights_stride, cb->lp.str, sizeof cb->args.weights_stride);
    }
    if (cb->s_count > 0) {
        cb->args.state_s = (float *)cb->state_s.ptr;
        cb->args.state_z = (float *)cb->state_z.ptr;
    }
    cb->args.dropout_p = c->dropout_p;
    cb->args.dropout_seed = c->dropout_seed;
    cb->args.dropout_offset = c->dropout_offset;
    cb->args.threads = c->threads;
    return ATTN_OK;
nomem:
    case_free(cb);
    return ATTN_ERR_NOMEM;
}

static attn_status run_kernel(const attn_kernel *kernel, const attn_variant *variant,
                              const attn_args *args)
{
    return variant != NULL ? variant->fwd(args) : kernel->fwd(args);
}

/* ---- comparison --------------------------------------------------------- */

void attn_verify_case_string(const attn_case *c, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "B=%lld Lq=%lld Lk=%lld%s%s threads=%d seed=%llu",
             (long long)c->batch, (long long)c->seq_q, (long long)c->seq_k,
             c->strided ? " strided" : "", c->ragged ? " ragged" : "", c->threads,
             (unsigned long long)c->seed);
    if (c->with_u || c->no_weights) {
        const size_t n = strlen(buf);
        if (n < buflen)
            snprintf(buf + n, buflen - n, "%s%s", c->with_u ? " with-U" : "", c->no_weights ? " no-weights" : "");
    }
    if (c->dropout_p != 0.0f) {
        const size_t n = strlen(buf);
        if (n < buflen)
            snprintf(buf + n, buflen - n, " dropout_p=%g dropout_seed=%llu dropout_offset=%u", (double)c->dropout_p,
                     (unsigned long long)c->dropout_seed, (unsigned)c->dropout_offset);
    }
}

/* Whether x, an output, matches ref: NaN == NaN, equal infinities, else
   within tol.  *err and *ratio get the error and its fraction of tol. */
static int values_agree(double x, double ref, double tol, double *err, double *ratio)
{
    if (isnan(x) || isnan(ref) || isinf(x) || isinf(ref)) {
        const int same = (isnan(x) && isnan(ref)) || x == ref;
        *err = 0.0;
        *ratio = same ? 0.0 : INFINITY;
        return same;
    }
    *err = fabs(x - ref);
    *ratio = *err / tol;
    return *err <= tol;
}

/* Records one comparison; label is formatted only for the first failure. */
static void note(attn_verify_result *res, int ok, double err, double ratio, double *max_err,
                 const char *label, double got, double want, const attn_case *c)
{
    if (err > *max_err)
        *max_err = err;
    if (ratio > res->worst_ratio)
        res->worst_ratio = ratio;
    if (ok)
        return;
    if (res->failures == 0) {
        char shape[96];
        attn_verify_case_string(c, shape, sizeof shape);
        snprintf(res->first_failure, sizeof res->first_failure,
                 "%s: got %.9g, want %.9g (shape %s)", label, got, want, shape);
    }
    res->failures++;
}

/* ---- the additive and luong families ------------------------------------ */

/*
 * The same discipline for attn_classic_args: S [B][Lq][Ds], H [B][Lk][Dh],
 * U [B][Lk][Da] (additive cases with c->with_u), C [B][Lq][Dh] and A
 * [B][Lq][Lk] against guard pages, strided cases with NaN gaps (C's and
 * A's gaps a sentinel that must survive), H and U rows past seqlens_k NaN.
 * The parameters are contiguous, each in a guard buffer of its own.  Random
 * values: S and H N(0,1); the parameters uniform in +-1/sqrt(in_features),
 * PyTorch's nn.Linear initialization (v's in_features is Da), so the
 * tanh's arguments and the scores are O(1) as in a trained model.  The
 * reference reads the stored tensors (attn_reference_classic), with
 * dtype_o = f32 so its C is not rounded, and the bounds come from
 * attn_reference_classic_bounds (ATTN_REF_TOL_SCORE).
 */

typedef struct {
    const attn_spec *spec;
    attn_case c;
    attn_score score;
    int64_t da;            /* attn_dim for the tanh scores, else 0 */
    int64_t n_w;           /* elements of W (general, concat) */
    layout4 ls, lh, lu, lc, lm, la;
    attn_guard_buf s, h, u, c_out, a, mask, seqlens, w_s, w_h, w, v, bias;
    unsigned char *c_described, *a_described;
    int has_u, has_a;
    attn_classic_args args;
} classic_bufs;

static void classic_free(classic_bufs *cb)
{
    attn_guard_free(&cb->s);
    attn_guard_free(&cb->h);
    attn_guard_free(&cb->u);
    attn_guard_free(&cb->c_out);
    attn_guard_free(&cb->a);
    attn_guard_free(&cb->mask);
    attn_guard_free(&cb->seqlens);
    attn_guard_free(&cb->w_s);
    attn_guard_free(&cb->w_h);
    attn_guard_free(&cb->w);
    attn_guard_free(&cb->v);
    attn_guard_free(&cb->bias);
    free(cb->c_described);
    free(cb->a_described);
    cb->c_described = cb->a_described = NULL;
}

/* C: gaps the sentinel, elements "unset"; A (f32) likewise. */
static void classic_reset_outputs(classic_bufs *cb)
{
    const attn_dtype dt = cb->spec->dtype_o;
    size_t i;
    for (i = 0; i < cb->lc.span; i++)
        store_bits(dt, cb->c_out.ptr, i, cb->c_described[i] ? o_unset_bits(dt) : o_gap_bits(dt));
    for (i = 0; i < cb->la.span; i++)
        store_bits(ATTN_DTYPE_F32, cb->a.ptr, i,
                   cb->a_described[i] ? o_unset_bits(ATTN_DTYPE_F32) : o_gap_bits(ATTN_DTYPE_F32));
}

/* n parameters uniform in +-bound, stored in dtype into a new guard buffer;
   the stored values widened into wide when not NULL.  0 or -1. */
static int classic_param(attn_guard_buf *g, attn_dtype dtype, int64_t n, double bound, rng *r, float *wide)
{
    float *tmp = (float *)malloc((size_t)n * sizeof *tmp + 1);
    int64_t i;
    if (tmp == NULL || attn_guard_alloc(g, (size_t)n * attn_dtype_size(dtype)) != 0) {
        free(tmp);
        return -1;
    }
    for (i = 0; i < n; i++)
        tmp[i] = (float)((2.0 * rng_uniform(r) - 1.0) * bound);
    attn_verify_store(dtype, tmp, g->ptr, (size_t)n);
    if (wide != NULL)
        memcpy(wide, tmp, (size_t)n * sizeof *tmp);
    free(tmp);
    return 0;
}

/* A [B][L][1][dim] tensor: N(0,1) (rows at or past valid[b] NaN when valid
   is not NULL, gaps NaN) stored in dtype into a new guard buffer. */
static int classic_tensor(attn_guard_buf *g, attn_dtype dtype, const layout4 *l, const int32_t *valid, rng *r)
{
    float *tmp = (float *)malloc(l->span * sizeof *tmp + 1);
    if (tmp == NULL || attn_guard_alloc(g, l->span * attn_dtype_size(dtype)) != 0) {
        free(tmp);
        return -1;
    }
    fill_tensor(tmp, l, valid, r);
    attn_verify_store(dtype, tmp, g->ptr, l->span);
    free(tmp);
    return 0;
}

static attn_status classic_build(classic_bufs *cb, const attn_spec *spec, const attn_case *c)
{
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k;
    const int64_t Ds = spec->query_dim, Dh = spec->key_dim;
    const attn_dtype tkv = spec->dtype_kv;
    int32_t *seqlens = NULL;
    float *w_h_wide = NULL;
    int style = 0, mstyle = 0, tanh_score;
    rng r;
    int64_t b, i, j, a, d;

    memset(cb, 0, sizeof *cb);
    cb->spec = spec;
    cb->c = *c;
    cb->score = spec->family == ATTN_FAMILY_ADDITIVE ? ATTN_SCORE_ADDITIVE : spec->score;
    tanh_score = cb->score == ATTN_SCORE_ADDITIVE || cb->score == ATTN_SCORE_CONCAT;
    cb->da = tanh_score ? spec->attn_dim : 0;
    cb->n_w = cb->score == ATTN_SCORE_GENERAL ? Dh * Ds : cb->score == ATTN_SCORE_CONCAT ? cb->da * (Dh + Ds) : 0;
    cb->has_u = cb->score == ATTN_SCORE_ADDITIVE && c->with_u;
    cb->has_a = !c->no_weights;
    if (B < 0 || Lq < 0 || Lk < 0)
        return ATTN_ERR_SHAPE;
    rng_init(&r, c->seed);

    if (c->strided) {
        style = 1 + (int)(rng_next(&r) % 2);
        mstyle = 1 + (int)(rng_next(&r) % 4);
    }
    tensor_layout(&cb->ls, B, Lq, 1, Ds, style);
    tensor_layout(&cb->lh, B, Lk, 1, Dh, style);
    tensor_layout(&cb->lc, B, Lq, 1, Dh, style);
    if (cb->has_u)
        tensor_layout(&cb->lu, B, Lk, 1, cb->da, style);
    mask_layout(&cb->lm, B, 1, Lq, Lk, mstyle);
    /* A: dense, or (strided cases) padded or key-major */
    if (cb->has_a)
        mask_layout(&cb->la, B, 1, Lq, Lk, c->strided ? ((c->seed >> 4) & 1 ? 4 : 1) : 0);
    if (layout_span(&cb->ls) || layout_span(&cb->lh) || layout_span(&cb->lc) || layout_span(&cb->lu) ||
        layout_span(&cb->lm) || layout_span(&cb->la))
        return ATTN_ERR_TOO_LARGE;
    if (attn_dtype_size(spec->dtype_q) == 0 || attn_dtype_size(tkv) == 0 || attn_dtype_size(spec->dtype_o) == 0 ||
        attn_guard_alloc(&cb->c_out, cb->lc.span * attn_dtype_size(spec->dtype_o)) ||
        alloc_floats(&cb->a, cb->la.span) || attn_guard_alloc(&cb->seqlens, (size_t)B * sizeof(int32_t)))
        goto nomem;

    /* seqlens_k: with padding, ragged cases mix 0, Lk and random lengths */
    if (spec->padding) {
        seqlens = (int32_t *)cb->seqlens.ptr;
        fill_seqlens(seqlens, B, Lk, c->ragged, &r);
    }

    /* S and H N(0,1), then the parameters, in the same order for every
       case of a spec (a case with U draws W_h too, so it sees the same
       inputs as the case without) */
    if (classic_tensor(&cb->s, spec->dtype_q, &cb->ls, NULL, &r) || classic_tensor(&cb->h, tkv, &cb->lh, seqlens, &r))
        goto nomem;
    if (cb->score == ATTN_SCORE_ADDITIVE) {
        w_h_wide = (float *)malloc((size_t)(cb->da * Dh) * sizeof *w_h_wide + 1);
        if (w_h_wide == NULL || classic_param(&cb->w_s, tkv, cb->da * Ds, 1.0 / sqrt((double)Ds), &r, NULL) ||
            classic_param(&cb->w_h, tkv, cb->da * Dh, 1.0 / sqrt((double)Dh), &r, w_h_wide))
            goto nomem;
    } else if (cb->n_w > 0) {
        /* general: W [Dh][Ds], in_features Ds; concat: W [Da][Dh + Ds] */
        const double in = cb->score == ATTN_SCORE_GENERAL ? (double)Ds : (double)(Dh + Ds);
        if (classic_param(&cb->w, tkv, cb->n_w, 1.0 / sqrt(in), &r, NULL))
            goto nomem;
    }
    if (tanh_score) {
        /* v: in_features Da; b: that of the layer it belongs to */
        const double in_b = cb->score == ATTN_SCORE_ADDITIVE ? (double)Ds : (double)(Dh + Ds);
        if (classic_param(&cb->v, tkv, cb->da, 1.0 / sqrt((double)cb->da), &r, NULL) ||
            (spec->bias && classic_param(&cb->bias, tkv, cb->da, 1.0 / sqrt(in_b), &r, NULL)))
            goto nomem;
    }

    /* U = H W_h^T from the stored H and W_h, in double, then stored;
       rows past seqlens_k and the gaps NaN */
    if (cb->has_u) {
        float *tmp = (float *)malloc(cb->lu.span * sizeof *tmp + 1);
        float *hw = (float *)malloc((size_t)Dh * sizeof *hw + 1);
        if (tmp == NULL || hw == NULL || attn_guard_alloc(&cb->u, cb->lu.span * attn_dtype_size(tkv))) {
            free(tmp);
            free(hw);
            goto nomem;
        }
        fill_nan(tmp, cb->lu.span);
        for (b = 0; b < B; b++)
            for (j = 0; j < (seqlens != NULL ? seqlens[b] : Lk); j++) {
                for (d = 0; d < Dh; d++)
                    hw[d] = load_value(tkv, cb->h.ptr, (size_t)offset4(&cb->lh, b, j, 0, d));
                for (a = 0; a < cb->da; a++) {
                    double sum = 0.0;
                    for (d = 0; d < Dh; d++)
                        sum += (double)w_h_wide[a * Dh + d] * (double)hw[d];
                    tmp[offset4(&cb->lu, b, j, 0, a)] = (float)sum;
                }
            }
        attn_verify_narrow(tkv, tmp, cb->u.ptr, cb->lu.span);
        free(tmp);
        free(hw);
    }
    free(w_h_wide);
    w_h_wide = NULL;

    /* the mask: gaps random (a read of one is likely to show), broadcast
       batches (stride 0) filled once */
    if (spec->mask == ATTN_MASK_BOOL) {
        unsigned char *m;
        const int64_t nb = cb->lm.str[0] == 0 ? 1 : B;
        size_t e;
        if (attn_guard_alloc(&cb->mask, cb->lm.span))
            goto nomem;
        m = (unsigned char *)cb->mask.ptr;
        for (e = 0; e < cb->lm.span; e++)
            m[e] = (unsigned char)(rng_next(&r) & 1);
        for (b = 0; b < nb; b++)
            for (i = 0; i < Lq; i++)
                for (j = 0; j < Lk; j++)
                    m[offset4(&cb->lm, b, 0, i, j)] = rng_uniform(&r) < 0.8;
    }

    cb->c_described = (unsigned char *)calloc(cb->lc.span + 1, 1);
    cb->a_described = (unsigned char *)calloc(cb->la.span + 1, 1);
    if (cb->c_described == NULL || cb->a_described == NULL)
        goto nomem;
    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++) {
            for (d = 0; d < Dh; d++)
                cb->c_described[offset4(&cb->lc, b, i, 0, d)] = 1;
            for (j = 0; j < Lk && cb->has_a; j++)
                cb->a_described[offset4(&cb->la, b, 0, i, j)] = 1;
        }
    classic_reset_outputs(cb);

    cb->args.batch = B;
    cb->args.seq_q = Lq;
    cb->args.seq_k = Lk;
    cb->args.s = cb->s.ptr;
    cb->args.h = cb->h.ptr;
    cb->args.u = cb->has_u ? cb->u.ptr : NULL;
    cb->args.w_s = cb->w_s.ptr;
    /* with U the kernel must not read W_h: NULL, so that a read faults */
    cb->args.w_h = cb->has_u ? NULL : cb->w_h.ptr;
    cb->args.w = cb->w.ptr;
    cb->args.v_attn = cb->v.ptr;
    cb->args.b_attn = cb->bias.ptr;
    cb->args.c = cb->c_out.ptr;
    cb->args.weights = cb->has_a ? (float *)cb->a.ptr : NULL;
    cb->args.s_stride[0] = cb->ls.str[0];
    cb->args.s_stride[1] = cb->ls.str[1];
    cb->args.h_stride[0] = cb->lh.str[0];
    cb->args.h_stride[1] = cb->lh.str[1];
    cb->args.u_stride[0] = cb->lu.str[0];
    cb->args.u_stride[1] = cb->lu.str[1];
    cb->args.c_stride[0] = cb->lc.str[0];
    cb->args.c_stride[1] = cb->lc.str[1];
    cb->args.weights_stride[0] = cb->la.str[0];
    cb->args.weights_stride[1] = cb->la.str[2];
    cb->args.weights_stride[2] = cb->la.str[3];
    cb->args.seqlens_k = seqlens;
    if (spec->mask == ATTN_MASK_BOOL) {
        cb->args.mask = (const uint8_t *)cb->mask.ptr;
        cb->args.mask_stride[0] = cb->lm.str[0];
        cb->args.mask_stride[1] = cb->lm.str[2];
        cb->args.mask_stride[2] = cb->lm.str[3];
    }
    cb->args.threads = c->threads;
    return ATTN_OK;
nomem:
    free(w_h_wide);
    classic_free(cb);
    return ATTN_ERR_NOMEM;
}

static attn_status run_classic(const attn_kernel *kernel, const attn_variant *variant, const attn_classic_args *args)
{
    const attn_classic_fwd_fn fwd = variant != NULL ? variant->classic_fwd : kernel->classic_fwd;
    return fwd != NULL ? fwd(args) : ATTN_ERR_NULL_ARG;
}

static int is_classic(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_ADDITIVE || spec->family == ATTN_FAMILY_LUONG;
}

/* res (zeroed before) and status of a variant that did not get compared:
   one failure, the message "<before><st's name><after> (shape <shape>)" */
static void fail_variant(attn_verify_result *res, attn_status *status, attn_status st, const char *before,
                         const char *after, const char *shape)
{
    snprintf(res->first_failure, sizeof res->first_failure, "%s%s%s (shape %s)", before, attn_status_string(st),
             after, shape);
    res->failures = 1;
    *status = st;
}

/* C and A of one classic variant's run against the reference's (C within
   c_tol, A within ATTN_REF_TOL_P and w_rel; exactly 0 where hidden and in
   rows that see nothing), and their gaps, into res */
static void classic_compare(const attn_spec *spec, const attn_case *c, const classic_bufs *cb, const float *ref_c,
                            const float *ref_a, const double *c_tol, const double *w_rel, const char *shape,
                            attn_verify_result *res)
{
    const attn_dtype odt = spec->dtype_o;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k, Dh = spec->key_dim;
    char label[96] = "";
    int64_t b, i, j, d;
    int sees = 0;
    size_t e;

    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++)
            for (d = 0; d < Dh; d++) {
                const int64_t at = (b * Lq + i) * Dh + d;
                const double x = load_value(odt, cb->c_out.ptr, (size_t)offset4(&cb->lc, b, i, 0, d));
                const double r = ref_c[at];
                double err, ratio;
                int ok = values_agree(x, r, c_tol[at], &err, &ratio);
                if (d == 0) { /* does the row see a key? */
                    sees = 0;
                    for (j = 0; j < Lk && !sees; j++)
                        sees = attn_reference_classic_key_visible(spec, &cb->args, b, i, j);
                }
                if (!sees && x != 0.0) { /* a row that sees nothing: exactly 0 */
                    ok = 0;
                    ratio = INFINITY;
                }
                if (!ok && res->failures == 0)
                    snprintf(label, sizeof label, "C[b=%lld][i=%lld][d=%lld]%s%s", (long long)b, (long long)i,
                             (long long)d, odt == ATTN_DTYPE_F32 ? "" : " stored as ",
                             odt == ATTN_DTYPE_F32 ? "" : attn_dtype_name(odt));
                note(res, ok, err, ratio, &res->max_err_o, label, x, r, c);
            }
    if (cb->has_a)
        for (b = 0; b < B; b++)
            for (i = 0; i < Lq; i++)
                for (j = 0; j < Lk; j++) {
                    const double x = ((const float *)cb->a.ptr)[offset4(&cb->la, b, 0, i, j)];
                    const double r = ref_a[(b * Lq + i) * Lk + j];
                    double err, ratio;
                    int ok = values_agree(x, r, ATTN_REF_TOL_P(r) + w_rel[b * Lq + i] * fabs(r), &err, &ratio);
                    /* hidden: exactly 0 (a visible key's weight may underflow to 0 in the
                       reference and to a denormal in f32: within the tolerance) */
                    if (x != 0.0 && !attn_reference_classic_key_visible(spec, &cb->args, b, i, j)) {
                        ok = 0;
                        ratio = INFINITY;
                    }
                    if (!ok && res->failures == 0)
                        snprintf(label, sizeof label, "A[b=%lld][i=%lld][j=%lld]", (long long)b, (long long)i,
                                 (long long)j);
                    note(res, ok, err, ratio, &res->max_err_p, label, x, r, c);
                }
    /* C's and A's gaps must still hold the sentinel */
    for (e = 0; e < cb->lc.span; e++) {
        if (cb->c_described[e] || load_bits(odt, cb->c_out.ptr, e) == o_gap_bits(odt))
            continue;
        if (res->failures == 0)
            snprintf(res->first_failure, sizeof res->first_failure,
                     "C gap at element offset %zu was overwritten with %.9g (shape %s)", e,
                     (double)load_value(odt, cb->c_out.ptr, e), shape);
        res->failures++;
    }
    for (e = 0; e < cb->la.span; e++) {
        if (cb->a_described[e] || load_bits(ATTN_DTYPE_F32, cb->a.ptr, e) == o_gap_bits(ATTN_DTYPE_F32))
            continue;
        if (res->failures == 0)
            snprintf(res->first_failure, sizeof res->first_failure,
                     "A gap at element offset %zu was overwritten with %.9g (shape %s)", e,
                     (double)load_value(ATTN_DTYPE_F32, cb->a.ptr, e), shape);
        res->failures++;
    }
}

/* attn_verify_case_variants for an additive or luong kernel: the inputs
   and the reference once, then each variant from reset outputs */
static void classic_verify_variants(const attn_kernel *kernel, const attn_variant *const *variants, int n,
                                    const attn_case *c, attn_verify_result *res, attn_status *status)
{
    const attn_spec *spec = &kernel->spec;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k, Dh = spec->key_dim;
    classic_bufs cb;
    attn_classic_args ra;
    float *ref_c = NULL, *ref_a = NULL;
    double *c_tol = NULL, *w_rel = NULL;
    char shape[96];
    attn_status st;
    int v;

    attn_verify_case_string(c, shape, sizeof shape);
    st = classic_build(&cb, spec, c);
    if (st != ATTN_OK) {
        for (v = 0; v < n; v++)
            fail_variant(&res[v], &status[v], st, "cannot build the inputs: ", "", shape);
        return;
    }

    /* the reference: contiguous f32 C and A of its own, C not rounded */
    ref_c = (float *)malloc((size_t)(B * Lq * Dh) * sizeof *ref_c + 1);
    ref_a = (float *)malloc((size_t)(B * Lq * Lk) * sizeof *ref_a + 1);
    c_tol = (double *)malloc((size_t)(B * Lq * Dh) * sizeof *c_tol + 1);
    w_rel = (double *)malloc((size_t)(B * Lq) * sizeof *w_rel + 1);
    if (ref_c == NULL || ref_a == NULL || c_tol == NULL || w_rel == NULL) {
        st = ATTN_ERR_NOMEM;
    } else {
        ra = cb.args;
        ra.c = ref_c;
        ra.weights = ref_a;
        ra.c_stride[1] = Dh;
        ra.c_stride[0] = Lq * Dh;
        ra.weights_stride[2] = 1;
        ra.weights_stride[1] = Lk;
        ra.weights_stride[0] = Lq * Lk;
        st = attn_reference_classic_bounds(spec, &ra, c_tol, w_rel);
    }
    for (v = 0; v < n; v++) {
        if (st != ATTN_OK) {
            fail_variant(&res[v], &status[v], st, "the reference failed: ", "", shape);
            continue;
        }
        if (v > 0)
            classic_reset_outputs(&cb);
        status[v] = run_classic(kernel, variants[v], &cb.args);
        if (status[v] != ATTN_OK)
            fail_variant(&res[v], &status[v], status[v], "kernel returned \"", "\"", shape);
        else
            classic_compare(spec, c, &cb, ref_c, ref_a, c_tol, w_rel, shape, &res[v]);
    }
    free(ref_c);
    free(ref_a);
    free(c_tol);
    free(w_rel);
    classic_free(&cb);
}

static int classic_bitwise_threads(const attn_kernel *kernel, const attn_variant *variant, const attn_case *c,
                                   int threads_a, int threads_b)
{
    classic_bufs cb;
    unsigned char *c_a = NULL, *a_a = NULL;
    size_t c_bytes, a_bytes;
    int result = -1;

    if (classic_build(&cb, &kernel->spec, c) != ATTN_OK)
        return -1;
    c_bytes = cb.lc.span * attn_dtype_size(kernel->spec.dtype_o);
    a_bytes = cb.la.span * sizeof(float);
    c_a = (unsigned char *)malloc(c_bytes + 1);
    a_a = (unsigned char *)malloc(a_bytes + 1);
    if (c_a == NULL || a_a == NULL)
        goto done;
    cb.args.threads = threads_a;
    if (run_classic(kernel, variant, &cb.args) != ATTN_OK)
        goto done;
    memcpy(c_a, cb.c_out.ptr, c_bytes);
    if (a_bytes > 0)
        memcpy(a_a, cb.a.ptr, a_bytes);
    classic_reset_outputs(&cb);
    cb.args.threads = threads_b;
    if (run_classic(kernel, variant, &cb.args) != ATTN_OK)
        goto done;
    result = memcmp(c_a, cb.c_out.ptr, c_bytes) == 0 && (a_bytes == 0 || memcmp(a_a, cb.a.ptr, a_bytes) == 0);
done:
    free(c_a);
    free(a_a);
    classic_free(&cb);
    return result;
}

/* The reference's results for a case: O, LSE, the weights P and the
   state written back (with the sums of |terms| that bound it). */
typedef struct {
    float *o, *lse, *p, *s, *z;
    double *s_abs, *z_abs;
} sdpa_ref;

static void sdpa_ref_free(sdpa_ref *ref)
{
    free(ref->o);
    free(ref->lse);
    free(ref->p);
    free(ref->s);
    free(ref->z);
    free(ref->s_abs);
    free(ref->z_abs);
}

/* Runs the reference on the case's stored inputs, widened, into ref
   (zeroed before; sdpa_ref_free frees it whatever this returns). */
static attn_status sdpa_ref_run(const attn_spec *spec, const attn_case *c, const case_bufs *cb, sdpa_ref *ref)
{
    attn_args ref_args;
    /* the reference writes a contiguous O of its own */
    const size_t o_count = (size_t)c->batch * (size_t)c->seq_q * (size_t)spec->heads_q * (size_t)spec->head_dim_v;
    attn_status st;

    ref->o = (float *)malloc(o_count * sizeof *ref->o + 1);
    ref->lse = (float *)malloc(cb->lse_count * sizeof *ref->lse + 1);
    if (cb->args.weights != NULL) /* contiguous [B][Hq][Lq][Lk] */
        ref->p = (float *)malloc((size_t)c->batch * (size_t)spec->heads_q * (size_t)c->seq_q * (size_t)c->seq_k *
                                     sizeof *ref->p + 1);
    if (cb->s_count > 0) { /* the reference's state starts where the kernel's does */
        ref->s = (float *)malloc(cb->s_count * sizeof *ref->s + 1);
        ref->z = (float *)malloc(cb->z_count * sizeof *ref->z + 1);
        ref->s_abs = (double *)malloc(cb->s_count * sizeof *ref->s_abs + 1);
        ref->z_abs = (double *)malloc(cb->z_count * sizeof *ref->z_abs + 1);
        if (ref->s != NULL && ref->z != NULL) {
            memcpy(ref->s, cb->s0, cb->s_count * sizeof *ref->s);
            memcpy(ref->z, cb->z0, cb->z_count * sizeof *ref->z);
        }
    }
    if (ref->o == NULL || ref->lse == NULL || (cb->args.weights != NULL && ref->p == NULL) ||
        (cb->s_count > 0 && (ref->s == NULL || ref->z == NULL || ref->s_abs == NULL || ref->z_abs == NULL)))
        return ATTN_ERR_NOMEM;
    /* the stored inputs, widened, with the kernel's strides */
    ref_args = cb->args;
    ref_args.q = cb->qw;
    ref_args.k = cb->kw;
    ref_args.v = cb->vw;
    ref_args.o = ref->o;
    ref_args.lse = ref->lse;
    ref_args.weights = ref->p;
    ref_args.state_s = ref->s;
    ref_args.state_z = ref->z;
    attn_args_set_contiguous(&ref_args, spec);
    memcpy(ref_args.q_stride, cb->args.q_stride, sizeof ref_args.q_stride);
    memcpy(ref_args.k_stride, cb->args.k_stride, sizeof ref_args.k_stride);
    memcpy(ref_args.v_stride, cb->args.v_stride, sizeof ref_args.v_stride);
    memcpy(ref_args.mask_stride, cb->args.mask_stride, sizeof ref_args.mask_stride);
    st = attn_reference(spec, &ref_args);
    if (st == ATTN_OK && cb->s_count > 0 &&
        attn_reference_linear_state_bound(spec, &ref_args, cb->s0, cb->z0, ref->s_abs, ref->z_abs) != 0)
        st = ATTN_ERR_NOMEM; /* cannot happen: the reference accepted the args */
    return st;
}

/* O (and LSE, P, the state) of one variant's run against the reference's,
   and O's and P's gaps, into res */
static void sdpa_compare(const attn_spec *spec, const attn_case *c, const case_bufs *cb, const sdpa_ref *ref,
                         const char *shape, attn_verify_result *res)
{
    const attn_dtype odt = spec->dtype_o;
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    const float *lse;
    char label[96] = "";
    int64_t b, i, h, d;
    size_t e;

    lse = (const float *)cb->lse.ptr;
    for (b = 0; b < c->batch; b++)
        for (i = 0; i < c->seq_q; i++)
            for (h = 0; h < spec->heads_q; h++)
                for (d = 0; d < spec->head_dim_v; d++) {
                    const double x =
                        load_value(odt, cb->o.ptr, (size_t)offset4(&cb->lo, b, i, h, d));
                    const double r =
                        ref->o[((b * c->seq_q + i) * spec->heads_q + h) * spec->head_dim_v + d];
                    double err, ratio;
                    const int ok = values_agree(x, r, ATTN_REF_TOL_O(spec, r), &err, &ratio);
                    if (!ok && res->failures == 0)
                        snprintf(label, sizeof label,
                                 "O[b=%lld][i=%lld][h=%lld][d=%lld]%s%s", (long long)b,
                                 (long long)i, (long long)h, (long long)d,
                                 odt == ATTN_DTYPE_F32 ? "" : " stored as ",
                                 odt == ATTN_DTYPE_F32 ? "" : attn_dtype_name(odt));
                    note(res, ok, err, ratio, &res->max_err_o, label, x, r, c);
                }
    if (linear) { /* no LSE: the buffer must still hold the sentinel */
        for (e = 0; e < cb->lse_count; e++) {
            if (load_bits(ATTN_DTYPE_F32, cb->lse.ptr, e) == o_gap_bits(ATTN_DTYPE_F32))
                continue;
            if (res->failures == 0)
                snprintf(res->first_failure, sizeof res->first_failure,
                         "LSE[%zu] was written (%.9g) by a linear kernel, which writes no LSE (shape %s)", e,
                         (double)lse[e], shape);
            res->failures++;
        }
    }
    /* the state after the call, within ATTN_REF_TOL_STATE of sum|terms| */
    for (e = 0; e < cb->s_count + cb->z_count; e++) {
        const int is_z = e >= cb->s_count;
        const size_t at = is_z ? e - cb->s_count : e;
        const double x = is_z ? ((const float *)cb->state_z.ptr)[at] : ((const float *)cb->state_s.ptr)[at];
        const double r = is_z ? ref->z[at] : ref->s[at];
        const double bound = ATTN_REF_TOL_STATE(is_z ? ref->z_abs[at] : ref->s_abs[at]);
        double err, ratio;
        const int ok = values_agree(x, r, bound, &err, &ratio);
        if (!ok && res->failures == 0) {
            const size_t dv = (size_t)spec->head_dim_v, dd = (size_t)spec->head_dim;
            const size_t row = is_z ? at / dd : at / (dd * dv); /* b * Hkv + hk */
            if (is_z)
                snprintf(label, sizeof label, "state_z[b=%zu][hk=%zu][d=%zu]", row / (size_t)spec->heads_kv,
                         row % (size_t)spec->heads_kv, at % dd);
            else
                snprintf(label, sizeof label, "state_s[b=%zu][hk=%zu][d=%zu][e=%zu]",
                         row / (size_t)spec->heads_kv, row % (size_t)spec->heads_kv, at / dv % dd, at % dv);
        }
        note(res, ok, err, ratio, &res->max_err_state, label, x, r, c);
    }
    for (b = 0; b < c->batch && !linear; b++)
        for (h = 0; h < spec->heads_q; h++)
            for (i = 0; i < c->seq_q; i++) {
                const size_t at = (size_t)((b * spec->heads_q + h) * c->seq_q + i);
                double err, ratio;
                const int ok = values_agree(lse[at], ref->lse[at], ATTN_REF_TOL(ATTN_DTYPE_F32, ref->lse[at]), &err,
                                             &ratio);
                if (!ok && res->failures == 0)
                    snprintf(label, sizeof label, "LSE[b=%lld][h=%lld][i=%lld]",
                             (long long)b, (long long)h, (long long)i);
                note(res, ok, err, ratio, &res->max_err_lse, label, lse[at], ref->lse[at], c);
            }

    /* the weights: within ATTN_REF_TOL_P, and exactly 0 where the reference's are */
    if (cb->args.weights != NULL)
        for (b = 0; b < c->batch; b++)
            for (h = 0; h < spec->heads_q; h++)
                for (i = 0; i < c->seq_q; i++)
                    for (d = 0; d < c->seq_k; d++) { /* d: the key */
                        const double x = ((const float *)cb->p.ptr)[offset4(&cb->lp, b, h, i, d)];
                        const double r = ref->p[((b * spec->heads_q + h) * c->seq_q + i) * c->seq_k + d];
                        double err, ratio;
                        int ok = values_agree(x, r, ATTN_REF_TOL_P(r), &err, &ratio);
                        if (r == 0.0 && x != 0.0) {
                            ok = 0;
                            ratio = INFINITY;
                        }
                        if (!ok && res->failures == 0)
                            snprintf(label, sizeof label, "P[b=%lld][h=%lld][i=%lld][j=%lld]",
                                     (long long)b, (long long)h, (long long)i, (long long)d);
                        note(res, ok, err, ratio, &res->max_err_p, label, x, r, c);
                    }
    for (e = 0; e < cb->lp.span; e++) { /* P's gaps must still hold the sentinel */
        if (cb->p_described[e] || load_bits(ATTN_DTYPE_F32, cb->p.ptr, e) == o_gap_bits(ATTN_DTYPE_F32))
            continue;
        if (res->failures == 0)
            snprintf(res->first_failure, sizeof res->first_failure,
                     "P gap at element offset %zu was overwritten with %.9g (shape %s)", e,
                     (double)load_value(ATTN_DTYPE_F32, cb->p.ptr, e), shape);
        res->failures++;
    }

    /* O's gaps must still hold the sentinel */
    for (e = 0; e < cb->lo.span; e++) {
        if (cb->o_described[e])
            continue;
        if (load_bits(odt, cb->o.ptr, e) != o_gap_bits(odt)) {
            if (res->failures == 0)
                snprintf(res->first_failure, sizeof res->first_failure,
                         "O gap at element offset %zu was overwritten with %.9g (shape %s)", e,
                         (double)load_value(odt, cb->o.ptr, e), shape);
            res->failures++;
        }
    }
}

/* attn_verify_case_variants for an sdpa or linear kernel: the inputs and
   the reference once, then each variant from reset outputs */
static void sdpa_verify_variants(const attn_kernel *kernel, const attn_variant *const *variants, int n,
                                 const attn_case *c, attn_verify_result *res, attn_status *status)
{
    const attn_spec *spec = &kernel->spec;
    case_bufs cb;
    sdpa_ref ref;
    char shape[96];
    attn_status st;
    int v;

    attn_verify_case_string(c, shape, sizeof shape);
    st = case_build(&cb, spec, c);
    if (st != ATTN_OK) {
        for (v = 0; v < n; v++)
            fail_variant(&res[v], &status[v], st, "cannot build the inputs: ", "", shape);
        return;
    }
    memset(&ref, 0, sizeof ref);
    st = sdpa_ref_run(spec, c, &cb, &ref);
    for (v = 0; v < n; v++) {
        if (st != ATTN_OK) {
            fail_variant(&res[v], &status[v], st, "the reference failed: ", "", shape);
            continue;
        }
        if (v > 0)
            reset_outputs(&cb); /* the state too: each run starts from the same one */
        status[v] = run_kernel(kernel, variants[v], &cb.args);
        if (status[v] != ATTN_OK)
            fail_variant(&res[v], &status[v], status[v], "kernel returned \"", "\"", shape);
        else
            sdpa_compare(spec, c, &cb, &ref, shape, &res[v]);
    }
    sdpa_ref_free(&ref);
    case_free(&cb);
}

attn_status attn_verify_case_variants(const attn_kernel *kernel, const attn_variant *const *variants, int n,
                                      const attn_case *c, attn_verify_result *res, attn_status *status)
{
    int v;

    memset(res, 0, (size_t)n * sizeof *res);
    for (v = 0; v < n; v++)
        status[v] = ATTN_OK;
    if (is_classic(&kernel->spec))
        classic_verify_variants(kernel, variants, n, c, res, status);
    else
        sdpa_verify_variants(kernel, variants, n, c, res, status);
    for (v = 0; v < n; v++)
        if (status[v] != ATTN_OK)
            return status[v];
    return ATTN_OK;
}

attn_status attn_verify_case(const attn_kernel *kernel, const attn_variant *variant, const attn_case *c,
                             attn_verify_result *res)
{
    attn_status st;
    attn_verify_case_variants(kernel, &variant, 1, c, res, &st);
    return st;
}

int attn_verify_bitwise_threads(const attn_kernel *kernel, const attn_variant *variant,
                                const attn_case *c, int threads_a, int threads_b)
{
    case_bufs cb;
    unsigned char *o_a = NULL, *p_a = NULL;
    float *lse_a = NULL, *s_a = NULL, *z_a = NULL;
    size_t o_bytes;
    int result = -1;

    if (is_classic(&kernel->spec))
        return classic_bitwise_threads(kernel, variant, c, threads_a, threads_b);
    if (case_build(&cb, &kernel->spec, c) != ATTN_OK)
        return -1;
    /* O as stored: its bytes, gaps included */
    o_bytes = cb.lo.span * attn_dtype_size(kernel->spec.dtype_o);
    o_a = (unsigned char *)malloc(o_bytes + 1);
    lse_a = (float *)malloc(cb.lse_count * sizeof *lse_a + 1);
    p_a = (unsigned char *)malloc(cb.lp.span * sizeof(float) + 1); /* the weights as stored */
    s_a = (float *)malloc(cb.s_count * sizeof *s_a + 1); /* the state after the call (linear) */
    z_a = (float *)malloc(cb.z_count * sizeof *z_a + 1);
    if (o_a == NULL || lse_a == NULL || p_a == NULL || s_a == NULL || z_a == NULL)
        goto done;

    cb.args.threads = threads_a;
    if (run_kernel(kernel, variant, &cb.args) != ATTN_OK)
        goto done;
    memcpy(o_a, cb.o.ptr, o_bytes);
    memcpy(lse_a, cb.lse.ptr, cb.lse_count * sizeof *lse_a);
    if (cb.lp.span > 0)
        memcpy(p_a, cb.p.ptr, cb.lp.span * sizeof(float));
    if (cb.s_count > 0) {
        memcpy(s_a, cb.state_s.ptr, cb.s_count * sizeof *s_a);
        memcpy(z_a, cb.state_z.ptr, cb.z_count * sizeof *z_a);
    }

    reset_outputs(&cb); /* the state too: the second run starts from the same one */
    cb.args.threads = threads_b;
    if (run_kernel(kernel, variant, &cb.args) != ATTN_OK)
        goto done;
    result = memcmp(o_a, cb.o.ptr, o_bytes) == 0 &&
             memcmp(lse_a, cb.lse.ptr, cb.lse_count * sizeof *lse_a) == 0 &&
             (cb.lp.span == 0 || memcmp(p_a, cb.p.ptr, cb.lp.span * sizeof(float)) == 0) &&
             (cb.s_count == 0 || (memcmp(s_a, cb.state_s.ptr, cb.s_count * sizeof *s_a) == 0 &&
                                  memcmp(z_a, cb.state_z.ptr, cb.z_count * sizeof *z_a) == 0));
done:
    free(o_a);
    free(p_a);
    free(lse_a);
    free(s_a);
    free(z_a);
    case_free(&cb);
    return result;
}

/* ---- the shape matrix --------------------------------------------------- */

typedef struct {
    attn_case *out;
    int max, n, padding, dropout;
} case_list;

static void add_case(case_list *l, int64_t batch, int64_t lq, int64_t lk, int strided,
                     int ragged, int threads)
{
    attn_case *c;
    if (l->n >= l->max || lq < 0 || lk < 0)
        return;
    c = &l->out[l->n];
    c->batch = batch;
    c->seq_q = lq;
    c->seq_k = lk;
    c->strided = strided;
    c->ragged = ragged && l->padding;
    c->threads = threads;
    c->seed = 0x5eed0000u + (uint64_t)l->n * 7919u;
    c->dropout_p = l->dropout ? 0.2f : 0.0f;
    c->dropout_seed = l->dropout ? 0x9e3779b97f4a7c15u * (uint64_t)(l->n + 1) : 0;
    c->dropout_offset = l->dropout ? (uint32_t)(3 * l->n + 1) : 0;
    c->with_u = 0;
    c->no_weights = 0;
    l->n++;
}

/*
 * The additive and luong families: every Lq in {1, 2, 5, 17} against every
 * Lk in {1, 2, 17, 50, 113}, batches of 1 to 3, layouts, ragged seqlens_k,
 * threads, U (additive) and A cycling through the grid at different
 * periods, so that each meets the others; then no keys (Lk = 0), no rows,
 * and a ragged batch of many rows.  quick == 0 adds longer sequences.
 */
static int classic_default_cases(const attn_spec *spec, attn_case *out, int max, int quick)
{
    static const int64_t lqs[] = { 1, 2, 5, 17 };
    static const int64_t lks[] = { 1, 2, 17, 50, 113 };
    const int additive = spec->family == ATTN_FAMILY_ADDITIVE;
    case_list l;
    int a, k, n;

    l.out = out;
    l.max = max;
    l.n = 0;
    l.padding = spec->padding;
    l.dropout = 0;
    for (a = 0; a < 4; a++)
        for (k = 0; k < 5; k++) {
            n = a * 5 + k;
            /*           B         Lq      Lk       strided       ragged          threads */
            add_case(&l, 1 + n % 3, lqs[a], lks[k], (a + k) % 2, (n / 2) % 2 == 0, 1 + (n / 3) % 2);
            if (l.n > 0 && l.n - 1 == n) {
                out[n].with_u = additive && n % 3 != 2;
                out[n].no_weights = n % 4 == 3;
            }
        }
    n = l.n;
    add_case(&l, 2, 5, 0, 0, 1, 2);   /* no keys: C = 0, A has no element */
    add_case(&l, 3, 17, 0, 1, 1, 1);
    add_case(&l, 2, 0, 17, 1, 1, 2);  /* no rows */
    add_case(&l, 3, 17, 50, 1, 1, 2); /* ragged, every layout, with U */
    if (l.n == n + 4)
        out[n + 3].with_u = additive;
    if (!quick) {
        n = l.n;
        add_case(&l, 1, 1, 1025, 0, 0, 2);
        add_case(&l, 2, 64, 257, 1, 1, 1);
        add_case(&l, 1, 300, 17, 0, 1, 2);
        add_case(&l, 2, 2, 4099, 1, 1, 2);
        for (a = n; a < l.n; a++)
            out[a].with_u = additive && a % 2;
    }
    return l.n;
}

int attn_verify_default_cases(const attn_spec *spec, attn_case *out, int max, int quick)
{
    case_list l;
    /* tile edges only for sane tiles (they are sizes the kernel loops over) */
    const int64_t tq = spec->tile_q >= 1 && spec->tile_q <= 1024 ? spec->tile_q : 0;
    const int64_t tk = spec->tile_kv >= 1 && spec->tile_kv <= 1024 ? spec->tile_kv : 0;

    if (is_classic(spec))
        return classic_default_cases(spec, out, max, quick);
    l.out = out;
    l.max = max;
    l.n = 0;
    l.padding = spec->padding;
    l.dropout = spec->family != ATTN_FAMILY_LINEAR && spec->dropout;

    /*           B  Lq   Lk strided ragged threads */
    /* Lq == Lk */
    add_case(&l, 1, 1, 1, 0, 0, 1);
    add_case(&l, 2, 2, 2, 0, 1, 1);
    add_case(&l, 1, 17, 17, 1, 0, 2);
    add_case(&l, 1, 113, 113, 0, 1, 2);
    /* Lq < Lk: decoding and prefill against a KV cache */
    add_case(&l, 2, 1, 113, 0, 1, 1);
    add_case(&l, 1, 1, 17, 1, 0, 1);
    add_case(&l, 1, 2, 17, 0, 0, 2);
    add_case(&l, 2, 17, 113, 1, 1, 2);
    /* Lq > Lk: with causal the first rows see no key */
    add_case(&l, 1, 2, 1, 0, 0, 1);
    add_case(&l, 2, 17, 2, 1, 1, 1);
    add_case(&l, 1, 113, 17, 0, 0, 2);
    /* empty sequences */
    add_case(&l, 1, 0, 17, 0, 0, 1);
    add_case(&l, 2, 5, 0, 0, 1, 2);
    /* on, below and above the tiles */
    if (tq > 0 && tk > 0) {
        add_case(&l, 1, tq - 1, tk + 1, 0, 0, 1);
        add_case(&l, 1, tq, tk, 1, 1, 2);
        add_case(&l, 1, tq + 1, tk - 1, 0, 0, 2);
        add_case(&l, 1, tq + 1, 2 * tk + 1, 1, 1, 1);
        add_case(&l, 2, 1, tk + 1, 0, 1, 2);
        add_case(&l, 1, tq, 1, 1, 0, 1);
    }
    /* a few more layouts of the common shapes */
    add_case(&l, 1, 113, 113, 1, 1, 1);
    add_case(&l, 2, 1, 17, 1, 1, 2);
    add_case(&l, 1, 17, 113, 0, 0, 1);

    if (!quick) {
        int dq, dk;
        add_case(&l, 1, 1023, 1025, 0, 0, 2);
        add_case(&l, 1, 1025, 1023, 1, 0, 2);
        add_case(&l, 2, 1, 1025, 0, 1, 2);
        add_case(&l, 2, 17, 1023, 1, 1, 1);
        add_case(&l, 1, 1025, 17, 0, 0, 2);
        if (tq > 0 && tk > 0)
            for (dq = -1; dq <= 1; dq++)
                for (dk = -1; dk <= 1; dk++)
                    add_case(&l, 2, tq + dq, 2 * tk + dk, (dq + dk) & 1, 1, 1 + (dk & 1));
    }
    return l.n;
}
