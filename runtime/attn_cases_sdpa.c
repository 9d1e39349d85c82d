/*
 * attn_cases_sdpa.c - the verification cases of the kernels that take
 * attn_args (sdpa, and linear attention, whose state lives in
 * attn_cases_linear.c): Q, K, V and O in their storage types, LSE, the
 * mask, seqlens_k, the weights P and the entropy E against guard pages, and the
 * comparison of a run with the reference (attn_reference), for the harness
 * of attn_verify.c (attn_cases.h).
 */
#include "attn_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cases_qkv.h"
#include "attn_reference.h"

/* ---- one case's buffers ------------------------------------------------- */

void attn_qkv_free(void *state)
{
    attn_qkv_case *cb = (attn_qkv_case *)state;
    attn_free_wide(&cb->qw, &cb->q);
    attn_free_wide(&cb->kw, &cb->k);
    attn_free_wide(&cb->vw, &cb->v);
    attn_guard_free(&cb->q);
    attn_guard_free(&cb->k);
    attn_guard_free(&cb->v);
    attn_guard_free(&cb->o);
    attn_guard_free(&cb->lse);
    attn_guard_free(&cb->mask);
    attn_guard_free(&cb->seqlens);
    attn_guard_free(&cb->p);
    attn_guard_free(&cb->sinks);
    attn_guard_free(&cb->rel);
    attn_guard_free(&cb->e);
    attn_guard_free(&cb->rope);
    attn_guard_free(&cb->qk_norm);
    attn_linear_state_free(cb);
    attn_paged_free(cb);
    free(cb->o_described);
    cb->o_described = NULL;
    free(cb->p_described);
    cb->p_described = NULL;
    attn_qkv_ref_free(&cb->ref);
}

/* O: gaps get the sentinel, elements the "unset" NaN; LSE all NaN (for a
   linear spec, which must not write it, the gap sentinel); the state (linear
   specs with state) back to the state before the call; P likewise. */
void attn_qkv_reset(void *state)
{
    attn_qkv_case *cb = (attn_qkv_case *)state;
    size_t i;
    attn_reset_output(cb->spec->dtype_o, cb->o.ptr, cb->o_described, cb->lo.span);
    if (cb->spec->family == ATTN_FAMILY_LINEAR)
        for (i = 0; i < cb->lse_count; i++)
            attn_store_bits(ATTN_DTYPE_F32, cb->lse.ptr, i, attn_gap_bits(ATTN_DTYPE_F32));
    else
        attn_fill_nan((float *)cb->lse.ptr, cb->lse_count);
    attn_linear_state_reset(cb);
    attn_reset_output(ATTN_DTYPE_F32, cb->p.ptr, cb->p_described, cb->lp.span);
    if (cb->e.ptr != NULL)
        attn_fill_nan((float *)cb->e.ptr, cb->lse_count);
}

/* The layout of a block type's values widened: each block's 32 values in
   place of the block (strides times 32); l itself where n is 1. */
static void widen_layout(attn_layout4 *w, const attn_layout4 *l, int64_t n)
{
    int d;
    *w = *l;
    for (d = 0; d < 3; d++)
        w->str[d] = l->str[d] * n;
    w->ext[3] = l->ext[3] * n;
    w->span = l->span * (size_t)n;
}

/* A contiguous [B][L][H][dim] layout's strides made those of [B][H][L][dim]. */
static void head_major(attn_layout4 *l)
{
    const int64_t len = l->ext[1], dim = l->ext[3];
    l->str[2] = len * dim;
    l->str[1] = dim;
}

/* The layouts of Q, K, V, O, the mask and P; ATTN_ERR_TOO_LARGE when a span
   is absurd. */
static attn_status qkv_layouts(attn_qkv_case *cb, int weights, attn_rng *r)
{
    const attn_spec *spec = cb->spec;
    const int64_t kv_values = attn_dtype_values(spec->dtype_kv);
    const attn_case *c = &cb->c;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k;
    int style, mstyle;

    attn_case_styles(c, r, &style, &mstyle);
    if (c->bench) mstyle = 2; /* the bench's: one [Lq][Lk] mask for every batch entry and head */
    attn_tensor_layout(&cb->lq, B, Lq, spec->heads_q, spec->head_dim, style);
    attn_tensor_layout(&cb->lk, B, Lk, spec->heads_kv, spec->head_dim / kv_values, style);
    attn_tensor_layout(&cb->lv, B, Lk, spec->heads_kv, spec->head_dim_v / kv_values, style);
    if (c->kv_head_major && spec->page == 0) { /* [B][Hkv][Lk][D]: a kv head's keys adjacent */
        head_major(&cb->lk);
        head_major(&cb->lv);
    }
    attn_tensor_layout(&cb->lo, B, Lq, spec->heads_q, spec->head_dim_v, style);
    attn_mask_layout(&cb->lm, B, spec->heads_q, Lq, Lk, mstyle);
    if (weights)
        attn_mask_layout(&cb->lp, B, spec->heads_q, Lq, Lk, c->bench ? 0 : attn_weights_style(c));
    if (attn_layout_span(&cb->lq) || attn_layout_span(&cb->lk) || attn_layout_span(&cb->lv) ||
        attn_layout_span(&cb->lo) || attn_layout_span(&cb->lm) || attn_layout_span(&cb->lp))
        return ATTN_ERR_TOO_LARGE;
    widen_layout(&cb->lkw, &cb->lk, kv_values);
    widen_layout(&cb->lvw, &cb->lv, kv_values);
    cb->lse_count = (size_t)B * (size_t)spec->heads_q * (size_t)Lq;
    return ATTN_OK;
}

/* Q, K, V, O, LSE, seqlens_k, P and E against guard pages: 0 or -1 */
static int qkv_alloc(attn_qkv_case *cb, int weights)
{
    const attn_spec *spec = cb->spec;
    return attn_guard_stored(&cb->q, &cb->qw, spec->dtype_q, cb->lq.span) ||
           attn_guard_stored(&cb->k, &cb->kw, spec->dtype_kv, cb->lk.span) ||
           attn_guard_stored(&cb->v, &cb->vw, spec->dtype_kv, cb->lv.span) ||
           attn_dtype_size(spec->dtype_o) == 0 || cb->lo.span > SIZE_MAX / sizeof(float) ||
           attn_guard_alloc(&cb->o, cb->lo.span * attn_dtype_size(spec->dtype_o)) ||
           attn_guard_floats(&cb->lse, cb->lse_count) ||
           attn_guard_alloc(&cb->seqlens, (size_t)cb->c.batch * sizeof(int32_t)) ||
           (weights && attn_guard_floats(&cb->p, cb->lp.span)) ||
           (spec->family != ATTN_FAMILY_LINEAR && spec->entropy && attn_guard_floats(&cb->e, cb->lse_count))
               ? -1
               : 0;
}

/* N(0,1) as f32, then as stored (the same random stream for every
   storage type) */
static void qkv_fill(attn_qkv_case *cb, const int32_t *seqlens, attn_rng *r)
{
    const attn_spec *spec = cb->spec;
    attn_fill_tensor(cb->qw, &cb->lq, NULL, r);
    /* a scale above 1/sqrt(D) (T5's 1: its query weights hold the 1/sqrt(D)) gets the
       queries such a model computes, N(0, 1) times 1/(sqrt(D) scale), so that the scores
       are as large as at the default scale, where the tolerance is stated (docs/testing.md) */
    if (spec->family == ATTN_FAMILY_SDPA && (double)spec->scale * sqrt((double)spec->head_dim) > 1.0) {
        const float f = (float)(1.0 / ((double)spec->scale * sqrt((double)spec->head_dim)));
        int64_t b, i, h, d;
        for (b = 0; b < cb->lq.ext[0]; b++)
            for (i = 0; i < cb->lq.ext[1]; i++)
                for (h = 0; h < cb->lq.ext[2]; h++)
                    for (d = 0; d < cb->lq.ext[3]; d++)
                        cb->qw[attn_offset4(&cb->lq, b, i, h, d)] *= f;
    }
    attn_fill_tensor(cb->kw, &cb->lkw, seqlens, r);
    attn_fill_tensor(cb->vw, &cb->lvw, seqlens, r);
    attn_verify_store(spec->dtype_q, cb->qw, cb->q.ptr, cb->lq.span);
    /* a block type: the values quantized, and the reference's values the
       dequantized ones (n counts values) */
    attn_verify_store(spec->dtype_kv, cb->kw, cb->k.ptr, cb->lkw.span);
    attn_verify_store(spec->dtype_kv, cb->vw, cb->v.ptr, cb->lvw.span);
}

/* the mask: broadcast dims (stride 0) are filled once; 0 or -1 */
static int qkv_mask(attn_qkv_case *cb, attn_mask_kind mask, attn_rng *r)
{
    const int is_bool = mask == ATTN_MASK_BOOL;
    const int64_t B = cb->c.batch, Hq = cb->spec->heads_q, Lq = cb->c.seq_q, Lk = cb->c.seq_k;
    const int64_t nb = cb->lm.str[0] == 0 ? 1 : B, nh = cb->lm.str[1] == 0 ? 1 : Hq;
    const size_t esize = is_bool ? 1 : sizeof(float);
    int64_t b, h, i, j;

    if (cb->lm.span > SIZE_MAX / esize || attn_guard_alloc(&cb->mask, cb->lm.span * esize))
        return -1;
    if (is_bool) { /* gaps random: a read of one is likely to show */
        unsigned char *m = (unsigned char *)cb->mask.ptr;
        size_t e;
        for (e = 0; e < cb->lm.span; e++)
            m[e] = (unsigned char)(attn_rng_next(r) & 1);
    } else {
        attn_fill_nan((float *)cb->mask.ptr, cb->lm.span);
    }
    for (b = 0; b < nb; b++)
        for (h = 0; h < nh; h++)
            for (i = 0; i < Lq; i++)
                for (j = 0; j < Lk; j++) {
                    const int64_t off = attn_offset4(&cb->lm, b, h, i, j);
                    if (is_bool) /* the bench's case: every key visible */
                        ((unsigned char *)cb->mask.ptr)[off] = cb->c.bench || attn_rng_uniform(r) < 0.8;
                    else
                        ((float *)cb->mask.ptr)[off] = cb->c.bench ? 0.0f : attn_rng_normal(r);
                }
    return 0;
}

/* the relative position table [rows][Hq] (specs with rel_bias): N(0, 1) times 2,
   biases of the size a trained T5 holds */
static int qkv_rel(attn_qkv_case *cb, attn_rng *r)
{
    const size_t n = (size_t)attn_rel_rows(cb->spec) * (size_t)cb->spec->heads_q;
    size_t e;
    if (attn_guard_alloc(&cb->rel, n * sizeof(float)))
        return 1;
    for (e = 0; e < n; e++)
        ((float *)cb->rel.ptr)[e] = 2.0f * attn_rng_normal(r);
    cb->args.rel_table = (const float *)cb->rel.ptr;
    return 0;
}

/* rope with table = true: cos and sin of the angles p / 500^(2m / dim) for
   the positions 0..max(Lq, Lk)-1 (those of the rows a case can have; the
   table is a caller's, so any angles do), in double, rounded to f32 */
static int qkv_rope(attn_qkv_case *cb)
{
    const int64_t half = cb->spec->rope_dim / 2;
    const int64_t rows = cb->c.seq_q > cb->c.seq_k ? cb->c.seq_q : cb->c.seq_k;
    const size_t n = (size_t)(rows * half);
    float *t;
    int64_t pos, m;
    /* exactly the two tables: sin's last row ends at the guard page, and every float is
       aligned (a byte more put the tables one byte off their alignment) */
    if (attn_guard_alloc(&cb->rope, 2 * n * sizeof(float)))
        return 1;
    t = (float *)cb->rope.ptr;
    for (pos = 0; pos < rows; pos++)
        for (m = 0; m < half; m++) {
            const double a = (double)pos * pow(500.0, -2.0 * (double)m / (double)cb->spec->rope_dim);
            t[pos * half + m] = (float)cos(a);
            t[n + (size_t)(pos * half + m)] = (float)sin(a);
        }
    cb->args.rope_cos = t;
    cb->args.rope_sin = t + n;
    cb->args.rope_rows = rows;
    return 0;
}

/* qk_norm: the weights of query rows and of appended key rows, uniform in
   0.5..1.5 as the factor (offset + w) the rows are multiplied by, so that
   the norm and the weights both move the scores */
static int qkv_qk_norm(attn_qkv_case *cb, attn_rng *r)
{
    const int64_t D = cb->spec->head_dim;
    float *w;
    int64_t d;
    if (attn_guard_floats(&cb->qk_norm, (size_t)(2 * D)))
        return 1;
    w = (float *)cb->qk_norm.ptr;
    for (d = 0; d < 2 * D; d++)
        w[d] = (float)(attn_rng_uniform(r) - 0.5 + (cb->spec->qk_norm_offset ? 0.0 : 1.0));
    cb->args.q_norm_w = w;
    cb->args.k_norm_w = w + D;
    return 0;
}

/* the kernel's arguments: the case's buffers and layouts */
static void qkv_args(attn_qkv_case *cb, attn_mask_kind mask, int weights, int32_t *seqlens)
{
    const attn_case *c = &cb->c;
    attn_args *a = &cb->args;
    a->batch = c->batch;
    a->seq_q = c->seq_q;
    a->seq_k = c->seq_k;
    a->q = cb->q.ptr;
    a->k = cb->k.ptr;
    a->v = cb->v.ptr;
    a->o = cb->o.ptr;
    a->lse = (float *)cb->lse.ptr;
    memcpy(a->q_stride, cb->lq.str, sizeof a->q_stride);
    memcpy(a->k_stride, cb->lk.str, sizeof a->k_stride);
    memcpy(a->v_stride, cb->lv.str, sizeof a->v_stride);
    memcpy(a->o_stride, cb->lo.str, sizeof a->o_stride);
    a->seqlens_k = seqlens;
    if (mask != ATTN_MASK_NONE) {
        a->mask = cb->mask.ptr;
        memcpy(a->mask_stride, cb->lm.str, sizeof a->mask_stride);
    }
    if (weights) {
        a->weights = (float *)cb->p.ptr;
        memcpy(a->weights_stride, cb->lp.str, sizeof a->weights_stride);
    }
    if (cb->e.ptr != NULL && !c->bench) /* the bench times O, LSE and the weights */
        a->entropy = (float *)cb->e.ptr;
    attn_linear_state_args(cb);
    a->dropout_p = c->dropout_p;
    a->dropout_seed = c->dropout_seed;
    a->dropout_offset = c->dropout_offset;
    a->threads = c->threads;
    if (cb->spec->family != ATTN_FAMILY_LINEAR && cb->spec->shared_kv) {
        /* V is read from K's rows: args->v and v_stride must not be read
           (a NULL pointer and strides the check would refuse) */
        a->v = NULL;
        a->v_stride[0] = a->v_stride[1] = a->v_stride[2] = -1;
    }
}

/* Builds the inputs, layouts and args of a case; ATTN_OK or an error. */
attn_status attn_qkv_build(void *state, const attn_spec *spec, const attn_case *c)
{
    attn_qkv_case *cb = (attn_qkv_case *)state;
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    /* linear attention has no mask, weights or dropout: their fields are ignored */
    const attn_mask_kind mask = linear ? ATTN_MASK_NONE : spec->mask;
    const int weights = !linear && spec->weights;
    int32_t *seqlens = NULL;
    attn_status st;
    attn_rng r;

    memset(cb, 0, sizeof *cb);
    cb->spec = spec;
    cb->c = *c;
    st = attn_case_start(c, &r);
    if (st == ATTN_OK)
        st = qkv_layouts(cb, weights, &r);
    if (st != ATTN_OK)
        return st;
    if (qkv_alloc(cb, weights))
        goto nomem;
    /* seqlens_k: with padding, ragged cases mix 0, Lk and random lengths */
    if (spec->padding) {
        seqlens = (int32_t *)cb->seqlens.ptr;
        attn_fill_seqlens(seqlens, c->batch, c->seq_k, c->ragged, &r);
    }
    qkv_fill(cb, seqlens, &r);
    /* drawn after the other inputs, so those stay the same random stream */
    if (linear && spec->state && attn_linear_state_build(cb, &r))
        goto nomem;
    if (mask != ATTN_MASK_NONE && qkv_mask(cb, mask, &r))
        goto nomem;
    if (!linear && spec->sinks) { /* 2 + 2 N(0,1): below, near and above the rows' largest scores */
        int h;
        if (attn_guard_floats(&cb->sinks, (size_t)spec->heads_q))
            goto nomem;
        for (h = 0; h < spec->heads_q; h++)
            ((float *)cb->sinks.ptr)[h] = 2.0f + 2.0f * attn_rng_normal(&r);
        cb->args.sinks = (const float *)cb->sinks.ptr;
    }
    if (attn_rel_rows(spec) > 0 && qkv_rel(cb, &r))
        goto nomem;
    if (!linear && spec->rope_style != ATTN_ROPE_NONE && spec->rope_table && qkv_rope(cb))
        goto nomem;
    if (!linear && spec->qk_norm && qkv_qk_norm(cb, &r))
        goto nomem;
    /* which O and P span elements are elements of O and P */
    cb->o_described = attn_describe(&cb->lo);
    cb->p_described = attn_describe(&cb->lp);
    if (cb->o_described == NULL || cb->p_described == NULL)
        goto nomem;
    attn_qkv_reset(cb);
    qkv_args(cb, mask, weights, seqlens);
    if (attn_paged_spec(spec) && attn_paged_build(cb, &r)) /* last: the other inputs keep their random stream */
        goto nomem;
    return ATTN_OK;
nomem:
    attn_qkv_free(cb);
    return ATTN_ERR_NOMEM;
}

/* A kernel's run (sdpa, linear) with a workspace of the caller's (args.workspace): two-thread
 * runs bring one of exactly the size the kernel asks for, one byte past an
 * ATTN_ALIGN boundary, so the kernel must align it itself; the other runs use
 * the allocator hook.  The result must be the same (attn_verify_bitwise_threads
 * compares a run of each). */
static attn_status qkv_run_workspace(attn_qkv_case *cb, const attn_kernel *kernel, const attn_variant *variant)
{
    attn_args *a = &cb->args;
    const size_t n = kernel->workspace_size(a->batch, a->seq_q, a->seq_k, a->threads);
    char *block;
    attn_status st;
    if (n == 0 || n == SIZE_MAX)
        return variant != NULL ? variant->fwd(a) : kernel->fwd(a);
    block = (char *)attn_alloc(n + 1);
    if (block == NULL)
        return ATTN_ERR_NOMEM;
    a->workspace = block + 1;
    a->workspace_bytes = n;
    st = variant != NULL ? variant->fwd(a) : kernel->fwd(a);
    a->workspace = NULL;
    a->workspace_bytes = 0;
    attn_free(block);
    return st;
}

attn_status attn_qkv_run(void *state, const attn_case_kernel *k, int threads)
{
    attn_qkv_case *cb = (attn_qkv_case *)state;
    const attn_kernel *kernel = k->fwd;
    const attn_variant *variant = k->fwd_variant;
    cb->args.threads = threads;
    if (cb->c.bench) /* the kernel's call alone */
        return variant != NULL ? variant->fwd(&cb->args) : kernel->fwd(&cb->args);
    if (attn_paged_spec(cb->spec))
        attn_paged_bad_tables(cb, kernel, variant);
    if (kernel != NULL && kernel->workspace_size != NULL && threads == 2)
        return qkv_run_workspace(cb, kernel, variant);
    return variant != NULL ? variant->fwd(&cb->args) : kernel->fwd(&cb->args);
}

int attn_qkv_outputs(const void *state, attn_case_output *out)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    int n = 0;
    /* O as stored: its bytes, gaps included */
    out[n].name = "O";
    out[n].ptr = cb->o.ptr;
    out[n++].bytes = cb->lo.span * attn_dtype_size(cb->spec->dtype_o);
    out[n].name = "LSE";
    out[n].ptr = cb->lse.ptr;
    out[n++].bytes = cb->lse_count * sizeof(float);
    out[n].name = "P"; /* the weights as stored */
    out[n].ptr = cb->p.ptr;
    out[n++].bytes = cb->lp.span * sizeof(float);
    out[n].name = "E"; /* each row's entropy (none: 0 bytes) */
    out[n].ptr = cb->e.ptr;
    out[n++].bytes = cb->e.ptr != NULL ? cb->lse_count * sizeof(float) : 0;
    return n + attn_linear_state_outputs(cb, out + n);
}

/* ---- the reference ------------------------------------------------------ */

void attn_qkv_ref_free(attn_qkv_ref *ref)
{
    free(ref->o);
    free(ref->lse);
    free(ref->p);
    free(ref->e);
    free(ref->s);
    free(ref->z);
    free(ref->s_abs);
    free(ref->z_abs);
    memset(ref, 0, sizeof *ref);
}

/* Runs the reference on the case's stored inputs, widened, into cb->ref
   (freed with the case whatever this returns). */
attn_status attn_qkv_reference(void *state)
{
    attn_qkv_case *cb = (attn_qkv_case *)state;
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    attn_qkv_ref *ref = &cb->ref;
    attn_args ref_args;
    /* the reference writes a contiguous O of its own */
    const size_t o_count = (size_t)c->batch * (size_t)c->seq_q * (size_t)spec->heads_q * (size_t)spec->head_dim_v;
    attn_status st;

    ref->o = (float *)malloc(o_count * sizeof *ref->o + 1);
    ref->lse = (float *)malloc(cb->lse_count * sizeof *ref->lse + 1);
    if (cb->args.weights != NULL) /* contiguous [B][Hq][Lq][Lk] */
        ref->p = (float *)malloc((size_t)c->batch * (size_t)spec->heads_q * (size_t)c->seq_q * (size_t)c->seq_k *
                                     sizeof *ref->p + 1);
    if (cb->args.entropy != NULL)
        ref->e = (float *)malloc(cb->lse_count * sizeof *ref->e + 1);
    if (ref->o == NULL || ref->lse == NULL || (cb->args.weights != NULL && ref->p == NULL) ||
        (cb->args.entropy != NULL && ref->e == NULL) ||
        attn_linear_state_ref_alloc(cb))
        return ATTN_ERR_NOMEM;
    /* the stored inputs, widened, with the kernel's strides */
    ref_args = cb->args;
    ref_args.q = cb->qw;
    ref_args.k = cb->kw;
    ref_args.v = cb->vw;
    ref_args.o = ref->o;
    ref_args.lse = ref->lse;
    ref_args.weights = ref->p;
    ref_args.entropy = ref->e;
    ref_args.state_s = ref->s;
    ref_args.state_z = ref->z;
    attn_args_set_contiguous(&ref_args, spec);
    memcpy(ref_args.q_stride, cb->args.q_stride, sizeof ref_args.q_stride);
    memcpy(ref_args.k_stride, cb->lkw.str, sizeof ref_args.k_stride); /* the widened values' (lk's but for */
    memcpy(ref_args.v_stride, cb->lvw.str, sizeof ref_args.v_stride); /* a block type) */
    memcpy(ref_args.mask_stride, cb->args.mask_stride, sizeof ref_args.mask_stride);
    if (attn_paged_spec(spec))
        attn_paged_ref_args(cb, &ref_args);
    st = attn_reference(spec, &ref_args);
    if (st == ATTN_OK)
        st = attn_linear_state_ref_bound(cb, &ref_args);
    return st;
}

/* ---- comparison --------------------------------------------------------- */

static void compare_o(const attn_qkv_case *cb, attn_verify_result *res)
{
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    const attn_dtype odt = spec->dtype_o;
    char label[96] = "", as[32];
    int64_t b, i, h, d;

    for (b = 0; b < c->batch; b++)
        for (i = 0; i < c->seq_q; i++)
            for (h = 0; h < spec->heads_q; h++)
                for (d = 0; d < spec->head_dim_v; d++) {
                    const double x = attn_load_value(odt, cb->o.ptr, (size_t)attn_offset4(&cb->lo, b, i, h, d));
                    const double r = cb->ref.o[((b * c->seq_q + i) * spec->heads_q + h) * spec->head_dim_v + d];
                    double err, ratio;
                    const int ok = attn_values_agree(x, r, ATTN_REF_TOL_O(spec, r), &err, &ratio);
                    if (!ok && res->failures == 0)
                        snprintf(label, sizeof label, "O[b=%lld][i=%lld][h=%lld][d=%lld]%s", (long long)b,
                                 (long long)i, (long long)h, (long long)d, attn_stored_as(odt, as, sizeof as));
                    attn_verify_note(res, ok, err, ratio, &res->max_err_o, label, x, r, c);
                }
}

/* One value a row, [B][Hq][Lq]: LSE within the f32 bound of the reference's
   value, or the entropy (entropy = 1) within ATTN_REF_TOL_E of the row's LSE. */
static void compare_rows(const attn_qkv_case *cb, attn_verify_result *res, int entropy)
{
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    const float *got = (const float *)(entropy ? cb->e.ptr : cb->lse.ptr);
    const float *ref = entropy ? cb->ref.e : cb->ref.lse;
    double *max_err = entropy ? &res->max_err_e : &res->max_err_lse;
    char label[96] = "";
    int64_t b, h, i;

    for (b = 0; b < c->batch; b++)
        for (h = 0; h < spec->heads_q; h++)
            for (i = 0; i < c->seq_q; i++) {
                const size_t at = (size_t)((b * spec->heads_q + h) * c->seq_q + i);
                const float r = ref[at];
                const double tol = entropy ? ATTN_REF_TOL_E(cb->ref.lse[at]) : (ATTN_REF_TOL_ABS + ATTN_REF_TOL_REL_SPEC(spec, ATTN_DTYPE_F32) * fabs(r));
                double err, ratio;
                const int ok = attn_values_agree(got[at], r, tol, &err, &ratio);
                if (!ok && res->failures == 0)
                    snprintf(label, sizeof label, "%s[b=%lld][h=%lld][i=%lld]", entropy ? "E" : "LSE",
                             (long long)b, (long long)h, (long long)i);
                attn_verify_note(res, ok, err, ratio, max_err, label, got[at], r, c);
            }
}

/* the weights: within ATTN_REF_TOL_P, and exactly 0 where the reference's are */
static void compare_p(const attn_qkv_case *cb, attn_verify_result *res)
{
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    char label[96] = "";
    int64_t b, h, i, j;

    for (b = 0; b < c->batch; b++)
        for (h = 0; h < spec->heads_q; h++)
            for (i = 0; i < c->seq_q; i++)
                for (j = 0; j < c->seq_k; j++) {
                    const double x = ((const float *)cb->p.ptr)[attn_offset4(&cb->lp, b, h, i, j)];
                    const double r = cb->ref.p[((b * spec->heads_q + h) * c->seq_q + i) * c->seq_k + j];
                    double err, ratio;
                    int ok = attn_values_agree(x, r, ATTN_REF_TOL_P(r), &err, &ratio);
                    if (r == 0.0 && x != 0.0) {
                        ok = 0;
                        ratio = INFINITY;
                    }
                    if (!ok && res->failures == 0)
                        snprintf(label, sizeof label, "P[b=%lld][h=%lld][i=%lld][j=%lld]", (long long)b,
                                 (long long)h, (long long)i, (long long)j);
                    attn_verify_note(res, ok, err, ratio, &res->max_err_p, label, x, r, c);
                }
}

/* O (and LSE, P, the state) of one variant's run against the reference's,
   and O's and P's gaps, into res */
void attn_qkv_compare(const void *state, const char *shape, attn_verify_result *res)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    const int linear = cb->spec->family == ATTN_FAMILY_LINEAR;

    compare_o(cb, res);
    if (linear)
        attn_linear_compare_lse_untouched(cb, shape, res);
    attn_linear_compare_state(cb, res);
    if (!linear)
        compare_rows(cb, res, 0);
    if (cb->args.weights != NULL)
        compare_p(cb, res);
    if (cb->args.entropy != NULL)
        compare_rows(cb, res, 1);
    attn_verify_gaps(res, "P", ATTN_DTYPE_F32, cb->p.ptr, cb->p_described, cb->lp.span, shape);
    attn_verify_gaps(res, "O", cb->spec->dtype_o, cb->o.ptr, cb->o_described, cb->lo.span, shape);
    attn_paged_compare(cb, shape, res);
}

/* ---- the shape matrix --------------------------------------------------- */

/* on, below and above the tiles, and (quick == 0) around two of them */
static void tile_cases(attn_case_list *l, int64_t tq, int64_t tk, int quick)
{
    int dq, dk;
    if (tq <= 0 || tk <= 0)
        return;
    if (quick) {
        /*                    B  Lq      Lk          strided ragged threads */
        attn_case_list_add(l, 1, tq - 1, tk + 1, 0, 0, 1);
        attn_case_list_add(l, 1, tq, tk, 1, 1, 2);
        attn_case_list_add(l, 1, tq + 1, tk - 1, 0, 0, 2);
        attn_case_list_add(l, 1, tq + 1, 2 * tk + 1, 1, 1, 1);
        attn_case_list_add(l, 2, 1, tk + 1, 0, 1, 2);
        attn_case_list_add(l, 1, tq, 1, 1, 0, 1);
        return;
    }
    for (dq = -1; dq <= 1; dq++)
        for (dk = -1; dk <= 1; dk++)
            attn_case_list_add(l, 2, tq + dq, 2 * tk + dk, (dq + dk) & 1, 1, 1 + (dk & 1));
}

/* The shapes of every sdpa and linear kernel: B, Lq, Lk, strided, ragged, threads */
static const int64_t common_rows[][6] = {
    /* Lq == Lk */
    { 1, 1, 1, 0, 0, 1 }, { 2, 2, 2, 0, 1, 1 }, { 1, 17, 17, 1, 0, 2 }, { 1, 113, 113, 0, 1, 2 },
    /* Lq < Lk: decoding and prefill against a KV cache */
    { 2, 1, 113, 0, 1, 1 }, { 1, 1, 17, 1, 0, 1 }, { 1, 2, 17, 0, 0, 2 }, { 2, 17, 113, 1, 1, 2 },
    /* Lq > Lk: with causal the first rows see no key */
    { 1, 2, 1, 0, 0, 1 }, { 2, 17, 2, 1, 1, 1 }, { 1, 113, 17, 0, 0, 2 },
    /* empty sequences */
    { 1, 0, 17, 0, 0, 1 }, { 2, 5, 0, 0, 1, 2 },
};
/* a few more layouts of the common shapes (after the tile edges) */
static const int64_t layout_rows[][6] = { { 1, 113, 113, 1, 1, 1 }, { 2, 1, 17, 1, 1, 2 }, { 1, 17, 113, 0, 0, 1 } };
/* quick == 0: long sequences */
static const int64_t long_rows[][6] = {
    { 1, 1023, 1025, 0, 0, 2 }, { 1, 1025, 1023, 1, 0, 2 }, { 2, 1, 1025, 0, 1, 2 },
    { 2, 17, 1023, 1, 1, 1 },   { 1, 1025, 17, 0, 0, 2 },
};

int attn_qkv_default_cases(const attn_spec *spec, attn_case *out, int max, int quick)
{
    attn_case_list l;
    /* tile edges only for sane tiles (they are sizes the kernel loops over) */
    const int64_t tq = spec->tile_q >= 1 && spec->tile_q <= 1024 ? spec->tile_q : 0;
    const int64_t tk = spec->tile_kv >= 1 && spec->tile_kv <= 1024 ? spec->tile_kv : 0;

    l.out = out;
    l.max = max;
    l.n = 0;
    l.padding = spec->padding;
    l.dropout = spec->family != ATTN_FAMILY_LINEAR && spec->dropout;

    attn_case_list_rows(&l, common_rows, sizeof common_rows / sizeof common_rows[0]);
    tile_cases(&l, tq, tk, 1);
    attn_case_list_rows(&l, layout_rows, sizeof layout_rows / sizeof layout_rows[0]);

    if (!quick) {
        attn_case_list_rows(&l, long_rows, sizeof long_rows / sizeof long_rows[0]);
        tile_cases(&l, tq, tk, 0);
    }
    return l.n;
}

static void sdpa_errors(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t len)
{
    snprintf(buf, len, "O %.1e LSE %.1e", res->max_err_o, res->max_err_lse);
    if (spec->weights) { /* the weights P too */
        const size_t n = strlen(buf);
        if (n < len)
            snprintf(buf + n, len - n, " P %.1e", res->max_err_p);
    }
    if (spec->entropy) { /* and the entropy E */
        const size_t n = strlen(buf);
        if (n < len)
            snprintf(buf + n, len - n, " E %.1e", res->max_err_e);
    }
}

/* ---- what the bench asks (attn_case_ops.flops, visible, args) ------------ */

int64_t attn_qkv_visible(const void *state)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    const attn_spec *spec = cb->spec;
    attn_spec one;
    /* a mask shared by the heads (or none): visibility does not depend on
       the head, so count one and multiply */
    if (cb->args.mask != NULL && cb->args.mask_stride[1] != 0)
        return attn_reference_visible_count(spec, &cb->args);
    one = *spec;
    one.heads_q = one.heads_kv = 1;
    return attn_reference_visible_count(&one, &cb->args) * spec->heads_q;
}

/* 2 * visible * (D + Dv): the count of the README's benchmark tables */
static double sdpa_flops(const void *state)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    return 2.0 * (double)attn_qkv_visible(state) * (cb->spec->head_dim + cb->spec->head_dim_v);
}

const void *attn_qkv_args(const void *state)
{
    return &((const attn_qkv_case *)state)->args;
}

/* The args on the widened Q, K and V (paged: the widened pools), as the
   reference reads them. */
void attn_qkv_widened(const void *state, void *out)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    attn_args *a = (attn_args *)out;
    *a = cb->args;
    a->q = cb->qw;
    a->k = cb->kw;
    a->v = cb->vw;
    memcpy(a->k_stride, cb->lkw.str, sizeof a->k_stride);
    memcpy(a->v_stride, cb->lvw.str, sizeof a->v_stride);
    if (attn_paged_spec(cb->spec))
        attn_paged_ref_args(cb, a);
}

/* ---- the tensors of a call (`attngen run`; linear attention's too) ------ */

/* Each takes() answers whether a spec takes its tensor, with the reason in
   words (the run tool's messages: "the config 'x' has no sinks (sinks =
   true), so ..."; attn_takes_when). */
static int is_linear(const attn_spec *spec) { return spec->family == ATTN_FAMILY_LINEAR; }

static attn_takes takes_v(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(is_linear(spec) || !spec->shared_kv, 1, why, len, "",
                    "has shared_kv (V is the first head_dim_v values of each K row)");
}

static attn_takes takes_sinks(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(!is_linear(spec) && spec->sinks, 1, why, len, "has sinks (a logit per query head)",
                    "has no sinks (sinks = true)");
}

static attn_takes takes_rel(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(attn_rel_rows(spec) > 0, 1, why, len, "has rel_bias", "has no rel_bias");
}

static attn_takes takes_table(const attn_spec *spec, char *why, size_t len)
{
    const attn_takes t = attn_takes_when(!is_linear(spec) && spec->page > 0, 1, why, len, "",
                                  "is not paged (paged = {page, order})");
    if (t != ATTN_TAKES_NOT)
        snprintf(why, len, "is paged (K and V are pools of %d keys a page)", spec->page);
    return t;
}

static attn_takes takes_rope(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->family == ATTN_FAMILY_SDPA && spec->rope_style != ATTN_ROPE_NONE && spec->rope_table, 1,
                    why, len, "has rope = {table = true}", "has no rope table (rope = {table = true})");
}

static attn_takes takes_q_norm(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->family == ATTN_FAMILY_SDPA && spec->qk_norm, 1, why, len,
                    "has qk_norm (the weights of the query rows' norm)", "has no qk_norm");
}

static attn_takes takes_k_norm(const attn_spec *spec, char *why, size_t len) /* required with --k-new */
{
    return attn_takes_when(spec->family == ATTN_FAMILY_SDPA && spec->qk_norm, 0, why, len,
                    "has qk_norm (the new key rows are normed)", "has no qk_norm");
}

static attn_takes takes_state(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(is_linear(spec) && spec->state, 0, why, len, "",
                    "has no state (kind = \"linear\" with state = true)");
}

static attn_takes takes_new_rows(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->family == ATTN_FAMILY_SDPA, 0, why, len, "", ""); /* run's appending checks say why */
}

static attn_takes takes_lse(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(!is_linear(spec), 0, why, len, "", "is linear attention, which has no LSE");
}

static attn_takes takes_weights(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->weights, 0, why, len, "", "has no weights (weights = true)");
}

static attn_takes takes_entropy(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(!is_linear(spec) && spec->entropy, 0, why, len, "", "has no entropy (entropy = true)");
}

#define B_ ATTN_DIM_BATCH
#define LQ ATTN_DIM_SEQ_Q
#define LK ATTN_DIM_SEQ_K
#define HQ ATTN_DIM_HEADS_Q
#define HK ATTN_DIM_HEADS_KV
#define D_ ATTN_DIM_HEAD_DIM
#define DV ATTN_DIM_HEAD_DIM_V
#define ROWS ATTN_DIM_ROWS

/* Q, K, V [B][L][H][dim] (a paged config's K and V: pools of pages, read
   through --block-table), the padding's lengths, the mask [B|1][Hq|1][Lq][Lk]
   (or [Lq][Lk]), the per-head and per-dim parameters, linear attention's
   state (S and z, in and out), appending's new rows and the caches after
   them; O, LSE, the weights and the entropy. */
const attn_case_tensor attn_qkv_tensors[] = {
    { "--q", "the query tensor", 0, 4, { B_, LQ, HQ, D_ }, ATTN_STORE_Q, NULL, 0, NULL },
    { "--k", "the key tensor", 0, 4, { B_, LK, HK, D_ }, ATTN_STORE_KV, NULL, 0, NULL },
    { "--v", "the value tensor", 0, 4, { B_, LK, HK, DV }, ATTN_STORE_KV, takes_v, 0, NULL },
    { "--seqlens-k", "one key length per batch", 0, 1, { B_ }, ATTN_STORE_I32, attn_takes_padding, 0, NULL },
    { "--sinks", "one logit per query head", 0, 1, { HQ }, ATTN_STORE_F32, takes_sinks, 0, NULL },
    { "--mask", "the mask", 0, 4, { B_, HQ, LQ, LK }, ATTN_STORE_MASK, attn_takes_mask, 0, NULL },
    { "--rel-table", "the relative position table", 0, 2, { ATTN_DIM_REL_ROWS, HQ }, ATTN_STORE_F32, takes_rel, 0, NULL },
    { "--block-table", "the block table", 0, 2, { B_, ROWS }, ATTN_STORE_I32, takes_table, 0, NULL },
    { "--rope-cos", "a position's cos of each rotated pair", 0, 2, { ROWS, ATTN_DIM_ROPE_PAIRS }, ATTN_STORE_F32,
      takes_rope, 1, NULL },
    { "--rope-sin", "a position's sin of each rotated pair", 0, 2, { ROWS, ATTN_DIM_ROPE_PAIRS }, ATTN_STORE_F32,
      takes_rope, 1, NULL },
    { "--q-norm-w", "a weight per head dim", 0, 1, { D_ }, ATTN_STORE_F32, takes_q_norm, 1, NULL },
    { "--k-norm-w", "a weight per head dim", 0, 1, { D_ }, ATTN_STORE_F32, takes_k_norm, 1, NULL },
    { "--state-in", "S", 0, 4, { B_, HK, D_, DV }, ATTN_STORE_F32, takes_state, 0, NULL },
    { "--state-in", "z", 0, 3, { B_, HK, D_ }, ATTN_STORE_F32, takes_state, 0, NULL },
    { "--k-new", "the new keys", 0, 4, { B_, ROWS, HK, D_ }, ATTN_STORE_Q, takes_new_rows, 0, NULL },
    { "--v-new", "the new values", 0, 4, { B_, ROWS, HK, DV }, ATTN_STORE_Q, takes_new_rows, 0, NULL },
    { "-o", "the output", 1, 4, { B_, LQ, HQ, DV }, ATTN_STORE_O, NULL, 0, NULL },
    { "--lse", "the log-sum-exp of each row", 1, 3, { B_, HQ, LQ }, ATTN_STORE_F32, takes_lse, 0, NULL },
    { "--weights", "the attention weights", 1, 4, { B_, HQ, LQ, LK }, ATTN_STORE_F32, takes_weights, 0, NULL },
    { "--entropy", "each row's attention entropy", 1, 3, { B_, HQ, LQ }, ATTN_STORE_F32, takes_entropy, 0, NULL },
    { "--state-out", "S", 1, 4, { B_, HK, D_, DV }, ATTN_STORE_F32, takes_state, 0, "--state-in" },
    { "--state-out", "z", 1, 3, { B_, HK, D_ }, ATTN_STORE_F32, takes_state, 0, "--state-in" },
    { "--k-out", "the key cache after appending", 1, 4, { B_, LK, HK, D_ }, ATTN_STORE_KV, takes_new_rows, 0, "--k" },
    { "--v-out", "the value cache after appending", 1, 4, { B_, LK, HK, DV }, ATTN_STORE_KV, takes_new_rows, 0, "--v" },
    { NULL, NULL, 0, 0, { B_ }, ATTN_STORE_F32, NULL, 0, NULL },
};

#undef B_
#undef LQ
#undef LK
#undef HQ
#undef HK
#undef D_
#undef DV
#undef ROWS

const attn_case_ops attn_cases_sdpa_fwd = {
    "sdpa",           sizeof(attn_qkv_case), attn_qkv_build,   attn_qkv_reference, attn_qkv_run,
    attn_qkv_compare, attn_qkv_reset,        attn_qkv_outputs, attn_qkv_free,      attn_qkv_default_cases,
    sdpa_errors,
    sdpa_flops,       "visible_scores",      attn_qkv_visible, attn_qkv_args,      attn_qkv_widened,
    attn_qkv_tensors,
};
