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
#include "attn_cases.h"

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
uint32_t attn_gap_bits(attn_dtype dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? 0x7fdeu : dtype == ATTN_DTYPE_F16 ? 0x7eadu : 0x7fc0deadu;
}

uint32_t attn_unset_bits(attn_dtype dtype)
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
uint32_t attn_load_bits(attn_dtype dtype, const void *base, size_t i)
{
    if (dtype == ATTN_DTYPE_F32) {
        uint32_t bits;
        memcpy(&bits, (const unsigned char *)base + i * sizeof bits, sizeof bits);
        return bits;
    }
    return ((const uint16_t *)base)[i];
}

void attn_store_bits(attn_dtype dtype, void *base, size_t i, uint32_t bits)
{
    if (dtype == ATTN_DTYPE_F32)
        memcpy((unsigned char *)base + i * sizeof bits, &bits, sizeof bits);
    else
        ((uint16_t *)base)[i] = (uint16_t)bits;
}

float attn_load_value(attn_dtype dtype, const void *base, size_t i)
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

/* attn_guard_huge_pages: the buffers of the bench's cases */
static int guard_huge;
#define GUARD_HUGE_ALIGN ((size_t)2 << 20)

void attn_guard_huge_pages(int on)
{
    guard_huge = on;
}

/* A buffer 2 MiB aligned and, where the kernel offers transparent huge
   pages on request, backed by them (as a serving engine holds a tensor); no
   guard pages.  Faulted in by its first writes, so that they can be huge. */
static int huge_alloc(attn_guard_buf *g, size_t bytes)
{
    const size_t len = bytes + 2 * GUARD_HUGE_ALIGN;
    unsigned char *map;
    if (bytes > SIZE_MAX - 2 * GUARD_HUGE_ALIGN)
        return -1;
    map = (unsigned char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == (unsigned char *)MAP_FAILED)
        return -1;
    g->map = map;
    g->map_len = len;
    g->bytes = bytes;
    g->ptr = map + (GUARD_HUGE_ALIGN - (size_t)((uintptr_t)map % GUARD_HUGE_ALIGN));
#ifdef MADV_HUGEPAGE
    madvise(g->ptr, (bytes + GUARD_HUGE_ALIGN - 1) / GUARD_HUGE_ALIGN * GUARD_HUGE_ALIGN, MADV_HUGEPAGE);
#endif
    return 0;
}

int attn_guard_alloc(attn_guard_buf *g, size_t bytes)
{
    const size_t ps = page_size();
    size_t pages, len;
    unsigned char *map;

    memset(g, 0, sizeof *g);
    if (guard_huge)
        return huge_alloc(g, bytes);
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

void attn_rng_init(attn_rng *r, uint64_t seed)
{
    r->state = seed;
    r->spare = 0.0;
    r->has_spare = 0;
}

uint64_t attn_rng_next(attn_rng *r) /* splitmix64 */
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1] */
double attn_rng_uniform(attn_rng *r)
{
    return ((double)(attn_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* N(0, 1) by Marsaglia's polar method: a point uniform in the unit disc
   gives two independent normals for one log and no cosine (filling the
   inputs was a fifth of the kernel tests' time with Box-Muller's cosine
   half alone); the second is returned by the next call. */
float attn_rng_normal(attn_rng *r)
{
    double u, v, s;
    if (r->has_spare) {
        r->has_spare = 0;
        return (float)r->spare;
    }
    do {
        u = 2.0 * attn_rng_uniform(r) - 1.0;
        v = 2.0 * attn_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    s = sqrt(-2.0 * log(s) / s);
    r->spare = v * s;
    r->has_spare = 1;
    return (float)(u * s);
}

/* 0..n inclusive */
int64_t attn_rng_range(attn_rng *r, int64_t n)
{
    return (int64_t)(attn_rng_next(r) % (uint64_t)(n + 1));
}

attn_status attn_case_start(const attn_case *c, attn_rng *r)
{
    if (c->batch < 0 || c->seq_q < 0 || c->seq_k < 0)
        return ATTN_ERR_SHAPE;
    attn_rng_init(r, c->seed);
    return ATTN_OK;
}

/* seqlens_k of a padded case: Lk for every batch, or (ragged) a mix of 0, Lk
   and random lengths; one draw per batch either way, so the inputs drawn
   after are the same. */
void attn_fill_seqlens(int32_t *seqlens, int64_t B, int64_t Lk, int ragged, attn_rng *r)
{
    int64_t b;
    for (b = 0; b < B; b++) {
        const uint64_t kind = attn_rng_next(r) % 4;
        int64_t len = Lk;
        if (ragged)
            len = kind == 0 ? 0 : kind == 1 ? Lk : attn_rng_range(r, Lk);
        seqlens[b] = (int32_t)len;
    }
}

/* ---- layouts ------------------------------------------------------------ */

/* Computes l->span; -1 when it is absurdly large for a test. */
int attn_layout_span(attn_layout4 *l)
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
void attn_tensor_layout(attn_layout4 *l, int64_t b, int64_t len, int64_t h, int64_t dim, int style)
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
void attn_mask_layout(attn_layout4 *l, int64_t b, int64_t hq, int64_t lq, int64_t lk, int style)
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

int64_t attn_offset4(const attn_layout4 *l, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * l->str[0] + b * l->str[1] + c * l->str[2] + d * l->str[3];
}

/* ---- one case's buffers ------------------------------------------------- */

/* The layout styles of a strided case: drawn first from its stream, so the
   inputs drawn after are the same for every layout. */
void attn_case_styles(const attn_case *c, attn_rng *r, int *style, int *mstyle)
{
    *style = 0;
    *mstyle = 0;
    if (c->strided) {
        *style = 1 + (int)(attn_rng_next(r) % 2);
        *mstyle = 1 + (int)(attn_rng_next(r) % 4);
    }
}

/* The weights' layout (P, A): dense, or (strided cases) padded or
   key-major, from the seed alone so that the other inputs stay the same
   random stream. */
int attn_weights_style(const attn_case *c)
{
    return c->strided ? ((c->seed >> 4) & 1 ? 4 : 1) : 0;
}

/* ---- buffers ------------------------------------------------------------ */

/* frees a widened copy unless it is the stored tensor itself */
void attn_free_wide(float **wide, const attn_guard_buf *stored)
{
    if (*wide != NULL && (void *)*wide != stored->ptr)
        free(*wide);
    *wide = NULL;
}

void attn_fill_nan(float *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = NAN;
}

/* Fills every element of a [B][L][H][dim] tensor with N(0,1); rows at or
   past valid[b] (when valid is not NULL) stay NaN. */
void attn_fill_tensor(float *base, const attn_layout4 *l, const int32_t *valid, attn_rng *r)
{
    int64_t b, s, h, d;
    attn_fill_nan(base, l->span);
    for (b = 0; b < l->ext[0]; b++)
        for (s = 0; s < l->ext[1]; s++)
            for (h = 0; h < l->ext[2]; h++)
                for (d = 0; d < l->ext[3]; d++) {
                    const float x = attn_rng_normal(r);
                    if (valid == NULL || s < valid[b])
                        base[attn_offset4(l, b, s, h, d)] = x;
                }
}

void attn_reset_output(attn_dtype dtype, void *base, const unsigned char *described, size_t span)
{
    const uint32_t unset = attn_unset_bits(dtype), gap = attn_gap_bits(dtype);
    size_t i;
    for (i = 0; i < span; i++)
        attn_store_bits(dtype, base, i, described[i] ? unset : gap);
}

unsigned char *attn_describe(const attn_layout4 *l)
{
    unsigned char *m = (unsigned char *)calloc(l->span + 1, 1);
    int64_t a, b, c, d;
    if (m == NULL)
        return NULL;
    for (a = 0; a < l->ext[0]; a++)
        for (b = 0; b < l->ext[1]; b++)
            for (c = 0; c < l->ext[2]; c++)
                for (d = 0; d < l->ext[3]; d++)
                    m[attn_offset4(l, a, b, c, d)] = 1;
    return m;
}

int attn_guard_floats(attn_guard_buf *g, size_t n)
{
    return n > SIZE_MAX / sizeof(float) ? -1 : attn_guard_alloc(g, n * sizeof(float));
}

/* n elements of storage type dtype against a guard page, and *wide, n
   floats for the widened values (the same memory for f32).  0 or -1. */
int attn_guard_stored(attn_guard_buf *g, float **wide, attn_dtype dtype, size_t n)
{
    const size_t esize = attn_dtype_size(dtype);
    *wide = NULL;
    if (esize == 0 || n > SIZE_MAX / sizeof(float) || attn_guard_alloc(g, n * esize) != 0)
        return -1;
    if (dtype == ATTN_DTYPE_F32) {
        *wide = (float *)g->ptr;
        return 0;
    }
    /* a block type's n blocks widen to n * 32 values */
    if (n > SIZE_MAX / sizeof(float) / (size_t)attn_dtype_values(dtype))
        return -1;
    *wide = (float *)malloc(n * (size_t)attn_dtype_values(dtype) * sizeof(float) + 1);
    return *wide != NULL ? 0 : -1;
}

void attn_verify_store(attn_dtype dtype, float *wide, void *stored, size_t n)
{
    attn_verify_narrow(dtype, wide, stored, n);
    attn_verify_widen(dtype, stored, wide, n);
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
int attn_values_agree(double x, double ref, double tol, double *err, double *ratio)
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
void attn_verify_note(attn_verify_result *res, int ok, double err, double ratio, double *max_err, const char *label,
                      double got, double want, const attn_case *c)
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

void attn_verify_gaps(attn_verify_result *res, const char *name, attn_dtype dtype, const void *base,
                      const unsigned char *described, size_t span, const char *shape)
{
    size_t e;
    for (e = 0; e < span; e++) {
        if (described[e] || attn_load_bits(dtype, base, e) == attn_gap_bits(dtype))
            continue;
        if (res->failures == 0)
            snprintf(res->first_failure, sizeof res->first_failure,
                     "%s gap at element offset %zu was overwritten with %.9g (shape %s)", name, e,
                     (double)attn_load_value(dtype, base, e), shape);
        res->failures++;
    }
}

const char *attn_stored_as(attn_dtype dtype, char *buf, size_t len)
{
    if (dtype == ATTN_DTYPE_F32)
        buf[0] = '\0';
    else
        snprintf(buf, len, " stored as %s", attn_dtype_name(dtype));
    return buf;
}

/* ---- the families' operations ------------------------------------------- */

/* [family][direction]; a family without a direction's kernels holds NULL */
static const attn_case_ops *const case_ops[ATTN_FAMILY_COUNT][ATTN_DIR_COUNT] = {
    [ATTN_FAMILY_SDPA] = { [ATTN_DIR_FWD] = &attn_cases_sdpa_fwd, [ATTN_DIR_BWD] = &attn_cases_sdpa_bwd },
    [ATTN_FAMILY_LINEAR] = { [ATTN_DIR_FWD] = &attn_cases_linear_fwd },
    [ATTN_FAMILY_ADDITIVE] = { [ATTN_DIR_FWD] = &attn_cases_classic_fwd },
    [ATTN_FAMILY_LUONG] = { [ATTN_DIR_FWD] = &attn_cases_classic_fwd },
};

const attn_case_ops *attn_case_ops_for(const attn_spec *spec, attn_direction dir)
{
    if ((int)spec->family < 0 || spec->family >= ATTN_FAMILY_COUNT || (int)dir < 0 || dir >= ATTN_DIR_COUNT)
        return NULL;
    return case_ops[spec->family][dir];
}

void attn_verify_errors_string(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t buflen)
{
    const attn_case_ops *ops = attn_case_ops_for(spec, ATTN_DIR_FWD);
    if (ops != NULL)
        ops->errors(spec, res, buf, buflen);
    else if (buflen > 0)
        buf[0] = '\0';
}

/* ---- the harness -------------------------------------------------------- */

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

/* A built case's state, or NULL with *st set: the family's ops, a zeroed
   state of its size, and build's status. */
static void *case_new(const attn_case_ops *ops, const attn_spec *spec, const attn_case *c, attn_status *st)
{
    void *state;
    if (ops == NULL) {
        *st = ATTN_ERR_NULL_ARG; /* no ops: a family out of range */
        return NULL;
    }
    state = calloc(1, ops->state_size);
    if (state == NULL) {
        *st = ATTN_ERR_NOMEM;
        return NULL;
    }
    *st = ops->build(state, spec, c);
    if (*st != ATTN_OK) {
        free(state);
        return NULL;
    }
    return state;
}

static void case_delete(const attn_case_ops *ops, void *state)
{
    ops->free(state);
    free(state);
}

/* The outputs of a run, copied: n buffers of out's sizes in one block. */
static unsigned char *outputs_copy(const attn_case_output *out, int n)
{
    size_t total = 1, at = 0;
    unsigned char *copy;
    int i;
    for (i = 0; i < n; i++)
        total += out[i].bytes;
    copy = (unsigned char *)malloc(total);
    if (copy == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        if (out[i].bytes > 0)
            memcpy(copy + at, out[i].ptr, out[i].bytes);
        at += out[i].bytes;
    }
    return copy;
}

static int outputs_same(const attn_case_output *out, int n, const unsigned char *copy)
{
    size_t at = 0;
    int i;
    for (i = 0; i < n; i++) {
        if (out[i].bytes > 0 && memcmp(copy + at, out[i].ptr, out[i].bytes) != 0)
            return 0;
        at += out[i].bytes;
    }
    return 1;
}

/* A case whose inputs the reference refuses the way the kernel must too
   (a position outside the caller's RoPE table: a bottom-right row of a call
   with more query rows than keys): the variant passes when it returns the
   same status and leaves every output as it was. */
static void refused_case(const attn_case_ops *ops, void *state, const attn_case_kernel *k, const attn_case *c,
                         attn_status want, const char *shape, attn_verify_result *res, attn_status *status)
{
    attn_case_output out[ATTN_CASE_MAX_OUTPUTS];
    const int n = ops->outputs(state, out);
    unsigned char *before = outputs_copy(out, n);
    attn_status got;
    if (before == NULL) {
        fail_variant(res, status, ATTN_ERR_NOMEM, "cannot copy the outputs: ", "", shape);
        return;
    }
    got = ops->run(state, k, c->threads);
    if (got != want) {
        snprintf(res->first_failure, sizeof res->first_failure,
                 "kernel returned \"%s\" where the reference refused with \"%s\" (shape %s)", attn_status_string(got),
                 attn_status_string(want), shape);
        res->failures = 1;
        *status = got != ATTN_OK ? got : want;
    } else if (!outputs_same(out, n, before)) {
        fail_variant(res, status, want, "kernel wrote its outputs on refusing with \"", "\"", shape);
    }
    free(before);
}

/* The harness of one case of either direction: the inputs and the reference
   once, then each of the n kernels (variants) from reset outputs (a linear
   spec's state too: each run starts from the same one). */
static attn_status verify_case(attn_direction dir, const attn_spec *spec, const attn_case_kernel *ks, int n,
                               const attn_case *c, attn_verify_result *res, attn_status *status)
{
    const attn_case_ops *ops = attn_case_ops_for(spec, dir);
    char shape[96];
    attn_status st;
    void *state;
    int v;

    memset(res, 0, (size_t)n * sizeof *res);
    for (v = 0; v < n; v++)
        status[v] = ATTN_OK;
    attn_verify_case_string(c, shape, sizeof shape);
    state = case_new(ops, spec, c, &st);
    if (state == NULL) {
        for (v = 0; v < n; v++)
            fail_variant(&res[v], &status[v], st, "cannot build the inputs: ", "", shape);
    } else if ((st = ops->reference(state)) == ATTN_ERR_ROPE) {
        for (v = 0; v < n; v++)
            refused_case(ops, state, &ks[v], c, st, shape, &res[v], &status[v]);
        case_delete(ops, state);
    } else {
        for (v = 0; v < n; v++) {
            if (st != ATTN_OK) {
                fail_variant(&res[v], &status[v], st, "the reference failed: ", "", shape);
                continue;
            }
            if (v > 0)
                ops->reset(state);
            status[v] = ops->run(state, &ks[v], c->threads);
            if (status[v] != ATTN_OK)
                fail_variant(&res[v], &status[v], status[v], "kernel returned \"", "\"", shape);
            else
                ops->compare(state, shape, &res[v]);
        }
        case_delete(ops, state);
    }
    for (v = 0; v < n; v++)
        if (status[v] != ATTN_OK)
            return status[v];
    return ATTN_OK;
}

attn_status attn_verify_case_variants(const attn_kernel *kernel, const attn_variant *const *variants, int n,
                                      const attn_case *c, attn_verify_result *res, attn_status *status)
{
    attn_case_kernel ks[ATTN_ISA_COUNT + 1];
    int v;
    if (n < 0 || n > ATTN_ISA_COUNT + 1)
        return ATTN_ERR_NULL_ARG;
    for (v = 0; v < n; v++) {
        memset(&ks[v], 0, sizeof ks[v]);
        ks[v].fwd = kernel;
        ks[v].fwd_variant = variants[v];
    }
    return verify_case(ATTN_DIR_FWD, &kernel->spec, ks, n, c, res, status);
}

attn_status attn_verify_case(const attn_kernel *kernel, const attn_variant *variant, const attn_case *c,
                             attn_verify_result *res)
{
    attn_status st;
    attn_verify_case_variants(kernel, &variant, 1, c, res, &st);
    return st;
}

attn_status attn_verify_bwd_case(const attn_bwd_kernel *kernel, const attn_bwd_variant *variant, const attn_case *c,
                                 attn_verify_result *res)
{
    attn_case_kernel k = { NULL, NULL, NULL, NULL };
    attn_status st;
    k.bwd = kernel;
    k.bwd_variant = variant;
    verify_case(ATTN_DIR_BWD, &kernel->fwd->spec, &k, 1, c, res, &st);
    return st;
}

/* Two runs of one case with two thread counts: 1 when their outputs are the same bits. */
static int bitwise_threads(attn_direction dir, const attn_spec *spec, const attn_case_kernel *k, const attn_case *c,
                           int threads_a, int threads_b)
{
    const attn_case_ops *ops = attn_case_ops_for(spec, dir);
    attn_case_output out[ATTN_CASE_MAX_OUTPUTS];
    unsigned char *first = NULL;
    attn_status st;
    void *state = case_new(ops, spec, c, &st);
    int n, result = -1;

    if (state == NULL)
        return -1;
    if (ops->run(state, k, threads_a) != ATTN_OK)
        goto done;
    n = ops->outputs(state, out);
    first = outputs_copy(out, n);
    if (first == NULL)
        goto done;
    ops->reset(state); /* a linear spec's state too: the second run starts from the same one */
    if (ops->run(state, k, threads_b) != ATTN_OK)
        goto done;
    result = outputs_same(out, n, first);
done:
    free(first);
    case_delete(ops, state);
    return result;
}

int attn_verify_bitwise_threads(const attn_kernel *kernel, const attn_variant *variant,
                                const attn_case *c, int threads_a, int threads_b)
{
    attn_case_kernel k = { NULL, NULL, NULL, NULL };
    k.fwd = kernel;
    k.fwd_variant = variant;
    return bitwise_threads(ATTN_DIR_FWD, &kernel->spec, &k, c, threads_a, threads_b);
}

int attn_verify_bwd_bitwise_threads(const attn_bwd_kernel *kernel, const attn_bwd_variant *variant,
                                    const attn_case *c, int threads_a, int threads_b)
{
    attn_case_kernel k = { NULL, NULL, NULL, NULL };
    k.bwd = kernel;
    k.bwd_variant = variant;
    return bitwise_threads(ATTN_DIR_BWD, &kernel->fwd->spec, &k, c, threads_a, threads_b);
}

/* ---- the shape matrix --------------------------------------------------- */

void attn_case_list_add(attn_case_list *l, int64_t batch, int64_t lq, int64_t lk, int strided, int ragged,
                        int threads)
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

void attn_case_list_rows(attn_case_list *l, const int64_t (*rows)[6], size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        attn_case_list_add(l, rows[i][0], rows[i][1], rows[i][2], (int)rows[i][3], (int)rows[i][4], (int)rows[i][5]);
}

int attn_verify_default_cases(const attn_spec *spec, attn_case *out, int max, int quick)
{
    const attn_case_ops *ops = attn_case_ops_for(spec, ATTN_DIR_FWD);
    return ops != NULL ? ops->default_cases(spec, out, max, quick) : 0;
}

/* ---- a family's tensors, by name ---------------------------------------- */

const char *attn_dim_name(attn_dim d)
{
    static const char *const names[ATTN_DIM_COUNT] = {
        "batch",    "seq_q",    "seq_k",    "heads_q",           "heads_kv", "head_dim", "head_dim_v",
        "query_dim", "key_dim", "attn_dim", "key_dim + query_dim", "rows",    "rope dim / 2", "rows",
    };
    return (int)d >= 0 && d < ATTN_DIM_COUNT ? names[d] : "?";
}

int64_t attn_dim_value(attn_dim d, const attn_spec *spec, int64_t batch, int64_t seq_q, int64_t seq_k)
{
    switch (d) {
    case ATTN_DIM_BATCH: return batch;
    case ATTN_DIM_SEQ_Q: return seq_q;
    case ATTN_DIM_SEQ_K: return seq_k;
    case ATTN_DIM_HEADS_Q: return spec->heads_q;
    case ATTN_DIM_HEADS_KV: return spec->heads_kv;
    case ATTN_DIM_HEAD_DIM: return spec->head_dim;
    case ATTN_DIM_HEAD_DIM_V: return spec->head_dim_v;
    case ATTN_DIM_QUERY_DIM: return spec->query_dim;
    case ATTN_DIM_KEY_DIM: return spec->key_dim;
    case ATTN_DIM_ATTN_DIM: return spec->attn_dim;
    case ATTN_DIM_KEY_QUERY_DIM: return (int64_t)spec->key_dim + spec->query_dim;
    case ATTN_DIM_REL_ROWS: return attn_rel_rows(spec);
    case ATTN_DIM_ROPE_PAIRS: return spec->rope_dim / 2;
    default: return -1;
    }
}

attn_takes attn_case_tensor_takes(const attn_case_tensor *t, const attn_spec *spec, char *why, size_t len)
{
    if (len > 0)
        why[0] = '\0';
    return t->takes != NULL ? t->takes(spec, why, len) : ATTN_TAKES_REQUIRED;
}

const attn_case_tensor *attn_case_tensor_find(const attn_case_tensor *table, const char *opt, const attn_spec *spec)
{
    const attn_case_tensor *first = NULL;
    char why[160];
    for (; table != NULL && table->opt != NULL; table++) {
        if (strcmp(table->opt, opt) != 0)
            continue;
        if (attn_case_tensor_takes(table, spec, why, sizeof why) != ATTN_TAKES_NOT)
            return table;
        if (first == NULL)
            first = table;
    }
    return first;
}

attn_takes attn_takes_when(int cond, int required, char *why, size_t len, const char *yes, const char *no)
{
    snprintf(why, len, "%s", cond ? yes : no);
    return !cond ? ATTN_TAKES_NOT : required ? ATTN_TAKES_REQUIRED : ATTN_TAKES_OPTIONAL;
}

attn_takes attn_takes_padding(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->padding, 1, why, len, "has padding", "has no padding");
}

attn_takes attn_takes_mask(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->mask != ATTN_MASK_NONE, 1, why, len,
                    spec->mask == ATTN_MASK_BOOL ? "has mask \"bool\"" : "has mask \"bias\"", "has no mask");
}
