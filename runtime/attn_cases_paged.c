/*
 * attn_cases_paged.c - the K/V pools and block table of a verification case
 * of a paged sdpa spec (spec.page > 0): the case's keys, drawn in the
 * contiguous layout as for every other spec, are copied into pools of pages
 * in a shuffled order, with pages no sequence uses, a table entry that is
 * not a page past each sequence's last page (never to be read), and -1
 * (evicted) for every page that attn_check_args accepts so (a sliding
 * window's or a chunk's old keys).  Each run first gives the kernel two bad
 * tables, which must return ATTN_ERR_PAGE and leave the outputs untouched.
 */
#include "attn_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cases_qkv.h"

/* A table entry past a sequence's last page: no page (a read would fault). */
#define NOT_READ INT32_MAX

int attn_paged_spec(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_SDPA && spec->page > 0;
}

/* The layout of a pool [N][P][Hkv][dim]: {page, slot, head, 1} strides by
   order, the page stride padded by one element in a strided case; the
   widened pool's (w) strides are times `values` (a block type's 32). */
static void pool_layout(attn_layout4 *l, attn_layout4 *w, const attn_spec *spec, int64_t n, int64_t dim,
                        int64_t values, int strided)
{
    const int64_t pg = spec->page, hkv = spec->heads_kv;
    int d;
    l->ext[0] = n;
    l->ext[1] = pg;
    l->ext[2] = hkv;
    l->ext[3] = dim;
    l->str[3] = 1;
    if (spec->page_order == ATTN_PAGE_HND) {
        l->str[1] = dim;
        l->str[2] = pg * dim;
    } else {
        l->str[1] = hkv * dim;
        l->str[2] = dim;
    }
    l->str[0] = pg * hkv * dim + (strided ? 1 : 0);
    *w = *l;
    for (d = 0; d < 3; d++)
        w->str[d] = l->str[d] * values;
    w->ext[3] = dim * values;
}

/* A pool of n elements of dtype against guard pages, and *wide its values
   widened (the same memory for f32): like attn_guard_stored, but with front
   set the pool starts at the leading guard page (its size rounded up to
   64 KiB, a whole number of pages), so that a read before the pool's first
   page (an evicted page's -1 taken for a page) faults; else it ends at the
   trailing one.  0 or -1. */
static int pool_alloc(attn_guard_buf *g, float **wide, attn_dtype dtype, size_t n, int front)
{
    const size_t es = attn_dtype_size(dtype), values = (size_t)attn_dtype_values(dtype);
    size_t bytes;
    if (!front)
        return attn_guard_stored(g, wide, dtype, n);
    *wide = NULL;
    if (es == 0 || n > (SIZE_MAX - 65536) / es / values / sizeof(float))
        return -1;
    bytes = (n * es + 65535) / 65536 * 65536;
    if (attn_guard_alloc(g, bytes) != 0)
        return -1;
    *wide = dtype == ATTN_DTYPE_F32 ? (float *)g->ptr : (float *)malloc(n * values * sizeof(float) + 1);
    return *wide == NULL ? -1 : 0;
}

/* A random permutation of 0..n-1 into perm. */
static void shuffle(int32_t *perm, int64_t n, attn_rng *r)
{
    int64_t i;
    for (i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    for (i = n - 1; i > 0; i--) {
        const int64_t k = (int64_t)(attn_rng_next(r) % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
}

/* Copies key j of batch b (every kv head) into slot s of page pg of the pools. */
static void copy_key(attn_qkv_case *cb, int64_t b, int64_t j, int64_t pg, int64_t s)
{
    const attn_spec *spec = cb->spec;
    const size_t es = attn_dtype_size(spec->dtype_kv);
    int64_t hk;
    for (hk = 0; hk < spec->heads_kv; hk++) {
        memcpy((char *)cb->kpool.ptr + (size_t)attn_offset4(&cb->lkp, pg, s, hk, 0) * es,
               (const char *)cb->k.ptr + (size_t)attn_offset4(&cb->lk, b, j, hk, 0) * es, (size_t)cb->lkp.ext[3] * es);
        memcpy((char *)cb->vpool.ptr + (size_t)attn_offset4(&cb->lvp, pg, s, hk, 0) * es,
               (const char *)cb->v.ptr + (size_t)attn_offset4(&cb->lv, b, j, hk, 0) * es, (size_t)cb->lvp.ext[3] * es);
        if (cb->kpoolw != (float *)cb->kpool.ptr) {
            memcpy(cb->kpoolw + attn_offset4(&cb->lkpw, pg, s, hk, 0), cb->kw + attn_offset4(&cb->lkw, b, j, hk, 0),
                   (size_t)cb->lkpw.ext[3] * sizeof(float));
            memcpy(cb->vpoolw + attn_offset4(&cb->lvpw, pg, s, hk, 0), cb->vw + attn_offset4(&cb->lvw, b, j, hk, 0),
                   (size_t)cb->lvpw.ext[3] * sizeof(float));
        }
    }
}

/* Sets to -1 every used page attn_check_args accepts so (no row of the case
   sees a key of it): the -1 entries a sliding window's cache holds. */
static void evict(attn_qkv_case *cb)
{
    const attn_spec *spec = cb->spec;
    int32_t *table = (int32_t *)cb->table.ptr;
    int64_t b, e;
    if (spec->window_left < 0 && spec->chunk == 0)
        return; /* every row sees the first keys */
    for (b = 0; b < cb->c.batch; b++)
        for (e = 0; e * spec->page < cb->args.seqlens_k[b]; e++) {
            const int32_t keep = table[b * cb->table_stride + e];
            table[b * cb->table_stride + e] = -1;
            if (attn_check_args(spec, &cb->args) != ATTN_OK)
                table[b * cb->table_stride + e] = keep;
        }
}

int attn_paged_build(attn_qkv_case *cb, attn_rng *r)
{
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    const int64_t pg = spec->page, values = attn_dtype_values(spec->dtype_kv);
    const int64_t per = (c->seq_k + pg - 1) / pg; /* pages of a full sequence */
    const int64_t n = c->batch * per + 2;        /* two pages no sequence uses */
    int32_t *perm, *table;
    int64_t b, e, s;

    cb->pages = n;
    cb->table_stride = per + 1; /* a column past the last page */
    pool_layout(&cb->lkp, &cb->lkpw, spec, n, spec->head_dim / values, values, c->strided);
    pool_layout(&cb->lvp, &cb->lvpw, spec, n, spec->head_dim_v / values, values, c->strided);
    if (attn_layout_span(&cb->lkp) || attn_layout_span(&cb->lvp) || attn_layout_span(&cb->lkpw) ||
        attn_layout_span(&cb->lvpw))
        return -1;
    perm = (int32_t *)malloc((size_t)n * sizeof *perm);
    /* odd seeds: the pools start at a guard page; even: they end at one */
    if (perm == NULL || pool_alloc(&cb->kpool, &cb->kpoolw, spec->dtype_kv, cb->lkp.span, (int)(c->seed & 1)) ||
        pool_alloc(&cb->vpool, &cb->vpoolw, spec->dtype_kv, cb->lvp.span, (int)(c->seed & 1)) ||
        attn_guard_alloc(&cb->table, (size_t)(c->batch * cb->table_stride + 1) * sizeof(int32_t))) {
        free(perm);
        return -1;
    }
    shuffle(perm, n, r);
    table = (int32_t *)cb->table.ptr;
    for (b = 0; b < c->batch; b++)
        for (e = 0; e < cb->table_stride; e++)
            table[b * cb->table_stride + e] = e * pg < cb->args.seqlens_k[b] ? perm[b * per + e] : NOT_READ;
    free(perm);

    /* the kernel's K and V: the pools */
    cb->args.k = cb->kpool.ptr;
    cb->args.v = cb->vpool.ptr;
    memcpy(cb->args.k_stride, cb->lkp.str, sizeof cb->args.k_stride);
    memcpy(cb->args.v_stride, cb->lvp.str, sizeof cb->args.v_stride);
    cb->args.block_table = table;
    cb->args.block_table_stride = cb->table_stride;
    cb->args.num_pages = n;
    evict(cb);

    /* pages no key lands on: NaN (all ones, a NaN in every storage type) */
    memset(cb->kpool.ptr, 0xff, cb->lkp.span * attn_dtype_size(spec->dtype_kv));
    memset(cb->vpool.ptr, 0xff, cb->lvp.span * attn_dtype_size(spec->dtype_kv));
    if (cb->kpoolw != (float *)cb->kpool.ptr) {
        attn_fill_nan(cb->kpoolw, cb->lkpw.span);
        attn_fill_nan(cb->vpoolw, cb->lvpw.span);
    }
    for (b = 0; b < c->batch; b++)
        for (e = 0; e * pg < cb->args.seqlens_k[b]; e++)
            if (table[b * cb->table_stride + e] >= 0)
                for (s = 0; s < pg && e * pg + s < c->seq_k; s++)
                    copy_key(cb, b, e * pg + s, table[b * cb->table_stride + e], s);
    return 0;
}

void attn_paged_ref_args(const attn_qkv_case *cb, attn_args *ref_args)
{
    ref_args->k = cb->kpoolw;
    ref_args->v = cb->vpoolw;
    memcpy(ref_args->k_stride, cb->lkpw.str, sizeof ref_args->k_stride);
    memcpy(ref_args->v_stride, cb->lvpw.str, sizeof ref_args->v_stride);
}

/* Runs the kernel with the entry of the last page of the first sequence
   with keys set to `bad`: ATTN_ERR_PAGE with the outputs untouched, or 1. */
static int bad_run(attn_qkv_case *cb, const attn_kernel *kernel, const attn_variant *variant, int64_t at,
                   int32_t bad)
{
    int32_t *table = (int32_t *)cb->table.ptr;
    const int32_t keep = table[at];
    attn_case_output out[ATTN_CASE_MAX_OUTPUTS];
    const int n = attn_qkv_outputs(cb, out);
    unsigned char *copy;
    size_t total = 1, pos = 0;
    attn_status st;
    int i, failed = 0;

    for (i = 0; i < n; i++)
        total += out[i].bytes;
    copy = (unsigned char *)malloc(total);
    if (copy == NULL)
        return 1;
    for (i = 0; i < n; i++) {
        if (out[i].bytes > 0)
            memcpy(copy + pos, out[i].ptr, out[i].bytes);
        pos += out[i].bytes;
    }
    table[at] = bad;
    st = variant != NULL ? variant->fwd(&cb->args) : kernel->fwd(&cb->args);
    table[at] = keep;
    failed = st != ATTN_ERR_PAGE;
    for (i = 0, pos = 0; i < n; i++) {
        if (out[i].bytes > 0 && memcmp(copy + pos, out[i].ptr, out[i].bytes) != 0)
            failed = 1;
        pos += out[i].bytes;
    }
    free(copy);
    return failed;
}

void attn_paged_bad_tables(attn_qkv_case *cb, const attn_kernel *kernel, const attn_variant *variant)
{
    int64_t b;
    for (b = 0; b < cb->c.batch; b++) {
        const int64_t lk = cb->args.seqlens_k[b];
        if (lk > 0) {
            /* the last page: its last key is seen by some row unless no row sees any */
            const int64_t at = b * cb->table_stride + (lk - 1) / cb->spec->page;
            if (bad_run(cb, kernel, variant, at, (int32_t)cb->pages) || bad_run(cb, kernel, variant, at, -2))
                cb->bad_table_failed = 1;
            return;
        }
    }
}

void attn_paged_compare(const attn_qkv_case *cb, const char *shape, attn_verify_result *res)
{
    if (!cb->bad_table_failed)
        return;
    if (res->failures == 0)
        snprintf(res->first_failure, sizeof res->first_failure,
                 "a bad block table did not give ATTN_ERR_PAGE with the outputs untouched (shape %s)", shape);
    res->failures++;
}

void attn_paged_free(attn_qkv_case *cb)
{
    attn_free_wide(&cb->kpoolw, &cb->kpool);
    attn_free_wide(&cb->vpoolw, &cb->vpool);
    attn_guard_free(&cb->kpool);
    attn_guard_free(&cb->vpool);
    attn_guard_free(&cb->table);
}
