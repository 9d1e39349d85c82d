/*
 * attn_cases_classic.c - the verification cases of the additive and luong
 * families (attn_classic_args, run through classic_fwd), for the harness
 * of attn_verify.c (attn_cases.h).
 *
 * The same discipline as the sdpa cases: S [B][Lq][Ds], H [B][Lk][Dh],
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
#include "attn_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"

typedef struct {
    const attn_spec *spec;
    attn_case c;
    attn_score score;
    int64_t da;            /* attn_dim for the tanh scores, else 0 */
    int64_t n_w;           /* elements of W (general, concat) */
    attn_layout4 ls, lh, lu, lc, lm, la;
    attn_guard_buf s, h, u, c_out, a, mask, seqlens, w_s, w_h, w, v, bias;
    unsigned char *c_described, *a_described;
    int has_u, has_a;
    attn_classic_args args;
    /* the reference: contiguous f32 C and A of its own, C not rounded, and
       the bounds of C (per element) and of A (relative, per row) */
    float *ref_c, *ref_a;
    double *c_tol, *w_rel;
} classic_case;

static void classic_free(void *state)
{
    classic_case *cb = (classic_case *)state;
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
    free(cb->ref_c);
    free(cb->ref_a);
    free(cb->c_tol);
    free(cb->w_rel);
    cb->ref_c = cb->ref_a = NULL;
    cb->c_tol = cb->w_rel = NULL;
}

/* C: gaps the sentinel, elements "unset"; A (f32) likewise. */
static void classic_reset(void *state)
{
    classic_case *cb = (classic_case *)state;
    attn_reset_output(cb->spec->dtype_o, cb->c_out.ptr, cb->c_described, cb->lc.span);
    attn_reset_output(ATTN_DTYPE_F32, cb->a.ptr, cb->a_described, cb->la.span);
}

/* n parameters uniform in +-bound, stored in dtype into a new guard buffer;
   the stored values widened into wide when not NULL.  0 or -1. */
static int classic_param(attn_guard_buf *g, attn_dtype dtype, int64_t n, double bound, attn_rng *r, float *wide)
{
    float *tmp = (float *)malloc((size_t)n * sizeof *tmp + 1);
    int64_t i;
    if (tmp == NULL || attn_guard_alloc(g, (size_t)n * attn_dtype_size(dtype)) != 0) {
        free(tmp);
        return -1;
    }
    for (i = 0; i < n; i++)
        tmp[i] = (float)((2.0 * attn_rng_uniform(r) - 1.0) * bound);
    attn_verify_store(dtype, tmp, g->ptr, (size_t)n);
    if (wide != NULL)
        memcpy(wide, tmp, (size_t)n * sizeof *tmp);
    free(tmp);
    return 0;
}

/* A [B][L][1][dim] tensor: N(0,1) (rows at or past valid[b] NaN when valid
   is not NULL, gaps NaN) stored in dtype into a new guard buffer. */
static int classic_tensor(attn_guard_buf *g, attn_dtype dtype, const attn_layout4 *l, const int32_t *valid,
                          attn_rng *r)
{
    float *tmp = (float *)malloc(l->span * sizeof *tmp + 1);
    if (tmp == NULL || attn_guard_alloc(g, l->span * attn_dtype_size(dtype)) != 0) {
        free(tmp);
        return -1;
    }
    attn_fill_tensor(tmp, l, valid, r);
    attn_verify_store(dtype, tmp, g->ptr, l->span);
    free(tmp);
    return 0;
}

/* The score and what it needs: attn_dim, W's size, U and A. */
static void classic_shape(classic_case *cb)
{
    const attn_spec *spec = cb->spec;
    const int64_t Ds = spec->query_dim, Dh = spec->key_dim;
    int tanh_score;
    cb->score = spec->family == ATTN_FAMILY_ADDITIVE ? ATTN_SCORE_ADDITIVE : spec->score;
    tanh_score = cb->score == ATTN_SCORE_ADDITIVE || cb->score == ATTN_SCORE_CONCAT;
    cb->da = tanh_score ? spec->attn_dim : 0;
    cb->n_w = cb->score == ATTN_SCORE_GENERAL ? Dh * Ds : cb->score == ATTN_SCORE_CONCAT ? cb->da * (Dh + Ds) : 0;
    cb->has_u = cb->score == ATTN_SCORE_ADDITIVE && cb->c.with_u;
    cb->has_a = !cb->c.no_weights;
}

/* The layouts of S, H, C, U, the mask and A; ATTN_ERR_TOO_LARGE when a
   span is absurd. */
static attn_status classic_layouts(classic_case *cb, attn_rng *r)
{
    const attn_case *c = &cb->c;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k;
    int style, mstyle;

    attn_case_styles(c, r, &style, &mstyle);
    if (c->bench) mstyle = 2; /* the bench's: one [Lq][Lk] mask for every batch entry */
    attn_tensor_layout(&cb->ls, B, Lq, 1, cb->spec->query_dim, style);
    attn_tensor_layout(&cb->lh, B, Lk, 1, cb->spec->key_dim, style);
    attn_tensor_layout(&cb->lc, B, Lq, 1, cb->spec->key_dim, style);
    if (cb->has_u)
        attn_tensor_layout(&cb->lu, B, Lk, 1, cb->da, style);
    attn_mask_layout(&cb->lm, B, 1, Lq, Lk, mstyle);
    if (cb->has_a)
        attn_mask_layout(&cb->la, B, 1, Lq, Lk, attn_weights_style(c));
    if (attn_layout_span(&cb->ls) || attn_layout_span(&cb->lh) || attn_layout_span(&cb->lc) ||
        attn_layout_span(&cb->lu) || attn_layout_span(&cb->lm) || attn_layout_span(&cb->la))
        return ATTN_ERR_TOO_LARGE;
    return ATTN_OK;
}

/* The parameters, in the same order for every case of a spec (a case with
   U draws W_h too, so it sees the same inputs as the case without); W_h's
   stored values, widened, into w_h_wide (additive).  0 or -1. */
static int classic_params(classic_case *cb, float *w_h_wide, attn_rng *r)
{
    const attn_spec *spec = cb->spec;
    const int64_t Ds = spec->query_dim, Dh = spec->key_dim;
    const attn_dtype tkv = spec->dtype_kv;

    if (cb->score == ATTN_SCORE_ADDITIVE) {
        if (classic_param(&cb->w_s, tkv, cb->da * Ds, 1.0 / sqrt((double)Ds), r, NULL) ||
            classic_param(&cb->w_h, tkv, cb->da * Dh, 1.0 / sqrt((double)Dh), r, w_h_wide))
            return -1;
    } else if (cb->n_w > 0) {
        /* general: W [Dh][Ds], in_features Ds; concat: W [Da][Dh + Ds] */
        const double in = cb->score == ATTN_SCORE_GENERAL ? (double)Ds : (double)(Dh + Ds);
        if (classic_param(&cb->w, tkv, cb->n_w, 1.0 / sqrt(in), r, NULL))
            return -1;
    }
    if (cb->score == ATTN_SCORE_ADDITIVE || cb->score == ATTN_SCORE_CONCAT) { /* the tanh scores */
        /* v: in_features Da; b: that of the layer it belongs to */
        const double in_b = cb->score == ATTN_SCORE_ADDITIVE ? (double)Ds : (double)(Dh + Ds);
        if (classic_param(&cb->v, tkv, cb->da, 1.0 / sqrt((double)cb->da), r, NULL) ||
            (spec->bias && classic_param(&cb->bias, tkv, cb->da, 1.0 / sqrt(in_b), r, NULL)))
            return -1;
    }
    return 0;
}

/* U = H W_h^T from the stored H and W_h, in double, then stored; rows past
   seqlens_k and the gaps NaN.  0 or -1. */
static int classic_u(classic_case *cb, const float *w_h_wide, const int32_t *seqlens)
{
    const attn_dtype tkv = cb->spec->dtype_kv;
    const int64_t Dh = cb->spec->key_dim;
    float *tmp = (float *)malloc(cb->lu.span * sizeof *tmp + 1);
    float *hw = (float *)malloc((size_t)Dh * sizeof *hw + 1);
    int64_t b, j, a, d;

    if (tmp == NULL || hw == NULL || attn_guard_alloc(&cb->u, cb->lu.span * attn_dtype_size(tkv))) {
        free(tmp);
        free(hw);
        return -1;
    }
    attn_fill_nan(tmp, cb->lu.span);
    for (b = 0; b < cb->c.batch; b++)
        for (j = 0; j < (seqlens != NULL ? seqlens[b] : cb->c.seq_k); j++) {
            for (d = 0; d < Dh; d++)
                hw[d] = attn_load_value(tkv, cb->h.ptr, (size_t)attn_offset4(&cb->lh, b, j, 0, d));
            for (a = 0; a < cb->da; a++) {
                double sum = 0.0;
                for (d = 0; d < Dh; d++)
                    sum += (double)w_h_wide[a * Dh + d] * (double)hw[d];
                tmp[attn_offset4(&cb->lu, b, j, 0, a)] = (float)sum;
            }
        }
    attn_verify_narrow(tkv, tmp, cb->u.ptr, cb->lu.span);
    free(tmp);
    free(hw);
    return 0;
}

/* the mask: gaps random (a read of one is likely to show), broadcast
   batches (stride 0) filled once.  0 or -1. */
static int classic_mask(classic_case *cb, attn_rng *r)
{
    const int64_t nb = cb->lm.str[0] == 0 ? 1 : cb->c.batch;
    unsigned char *m;
    int64_t b, i, j;
    size_t e;

    if (attn_guard_alloc(&cb->mask, cb->lm.span))
        return -1;
    m = (unsigned char *)cb->mask.ptr;
    for (e = 0; e < cb->lm.span; e++)
        m[e] = (unsigned char)(attn_rng_next(r) & 1);
    for (b = 0; b < nb; b++)
        for (i = 0; i < cb->c.seq_q; i++)
            for (j = 0; j < cb->c.seq_k; j++)
                m[attn_offset4(&cb->lm, b, 0, i, j)] = cb->c.bench || attn_rng_uniform(r) < 0.8; /* bench: all */
    return 0;
}

/* the kernel's arguments: the case's buffers and layouts */
static void classic_args(classic_case *cb, int32_t *seqlens)
{
    attn_classic_args *a = &cb->args;
    a->batch = cb->c.batch;
    a->seq_q = cb->c.seq_q;
    a->seq_k = cb->c.seq_k;
    a->s = cb->s.ptr;
    a->h = cb->h.ptr;
    a->u = cb->has_u ? cb->u.ptr : NULL;
    a->w_s = cb->w_s.ptr;
    /* with U the kernel must not read W_h: NULL, so that a read faults */
    a->w_h = cb->has_u ? NULL : cb->w_h.ptr;
    a->w = cb->w.ptr;
    a->v_attn = cb->v.ptr;
    a->b_attn = cb->bias.ptr;
    a->c = cb->c_out.ptr;
    a->weights = cb->has_a ? (float *)cb->a.ptr : NULL;
    a->s_stride[0] = cb->ls.str[0];
    a->s_stride[1] = cb->ls.str[1];
    a->h_stride[0] = cb->lh.str[0];
    a->h_stride[1] = cb->lh.str[1];
    a->u_stride[0] = cb->lu.str[0];
    a->u_stride[1] = cb->lu.str[1];
    a->c_stride[0] = cb->lc.str[0];
    a->c_stride[1] = cb->lc.str[1];
    a->weights_stride[0] = cb->la.str[0];
    a->weights_stride[1] = cb->la.str[2];
    a->weights_stride[2] = cb->la.str[3];
    a->seqlens_k = seqlens;
    if (cb->spec->mask == ATTN_MASK_BOOL) {
        a->mask = (const uint8_t *)cb->mask.ptr;
        a->mask_stride[0] = cb->lm.str[0];
        a->mask_stride[1] = cb->lm.str[2];
        a->mask_stride[2] = cb->lm.str[3];
    }
    a->threads = cb->c.threads;
}

/* Builds the inputs, layouts and args of a case; ATTN_OK or an error. */
static attn_status classic_build(void *state, const attn_spec *spec, const attn_case *c)
{
    classic_case *cb = (classic_case *)state;
    const attn_dtype tkv = spec->dtype_kv;
    int32_t *seqlens = NULL;
    float *w_h_wide = NULL;
    attn_status st;
    attn_rng r;

    memset(cb, 0, sizeof *cb);
    cb->spec = spec;
    cb->c = *c;
    classic_shape(cb);
    st = attn_case_start(c, &r);
    if (st == ATTN_OK)
        st = classic_layouts(cb, &r);
    if (st != ATTN_OK)
        return st;
    if (attn_dtype_size(spec->dtype_q) == 0 || attn_dtype_size(tkv) == 0 || attn_dtype_size(spec->dtype_o) == 0 ||
        attn_guard_alloc(&cb->c_out, cb->lc.span * attn_dtype_size(spec->dtype_o)) ||
        attn_guard_floats(&cb->a, cb->la.span) || attn_guard_alloc(&cb->seqlens, (size_t)c->batch * sizeof(int32_t)))
        goto nomem;
    /* seqlens_k: with padding, ragged cases mix 0, Lk and random lengths */
    if (spec->padding) {
        seqlens = (int32_t *)cb->seqlens.ptr;
        attn_fill_seqlens(seqlens, c->batch, c->seq_k, c->ragged, &r);
    }
    /* S and H N(0,1), then the parameters */
    if (classic_tensor(&cb->s, spec->dtype_q, &cb->ls, NULL, &r) || classic_tensor(&cb->h, tkv, &cb->lh, seqlens, &r))
        goto nomem;
    if (cb->score == ATTN_SCORE_ADDITIVE) {
        w_h_wide = (float *)malloc((size_t)(cb->da * spec->key_dim) * sizeof *w_h_wide + 1);
        if (w_h_wide == NULL)
            goto nomem;
    }
    if (classic_params(cb, w_h_wide, &r) || (cb->has_u && classic_u(cb, w_h_wide, seqlens)))
        goto nomem;
    free(w_h_wide);
    w_h_wide = NULL;
    if (spec->mask == ATTN_MASK_BOOL && classic_mask(cb, &r))
        goto nomem;
    cb->c_described = attn_describe(&cb->lc);
    cb->a_described = attn_describe(&cb->la);
    if (cb->c_described == NULL || cb->a_described == NULL)
        goto nomem;
    classic_reset(cb);
    classic_args(cb, seqlens);
    return ATTN_OK;
nomem:
    free(w_h_wide);
    classic_free(cb);
    return ATTN_ERR_NOMEM;
}

static attn_status classic_run(void *state, const attn_case_kernel *k, int threads)
{
    classic_case *cb = (classic_case *)state;
    const attn_classic_fwd_fn fwd = k->fwd_variant != NULL ? k->fwd_variant->classic_fwd : k->fwd->classic_fwd;
    cb->args.threads = threads;
    return fwd != NULL ? fwd(&cb->args) : ATTN_ERR_NULL_ARG;
}

static int classic_outputs(const void *state, attn_case_output *out)
{
    const classic_case *cb = (const classic_case *)state;
    out[0].name = "C";
    out[0].ptr = cb->c_out.ptr;
    out[0].bytes = cb->lc.span * attn_dtype_size(cb->spec->dtype_o);
    out[1].name = "A";
    out[1].ptr = cb->a.ptr;
    out[1].bytes = cb->la.span * sizeof(float);
    return 2;
}

/* The reference on the stored inputs: contiguous f32 C and A of its own,
   C not rounded, and the bounds (attn_reference_classic_bounds). */
static attn_status classic_reference(void *state)
{
    classic_case *cb = (classic_case *)state;
    const int64_t B = cb->c.batch, Lq = cb->c.seq_q, Lk = cb->c.seq_k, Dh = cb->spec->key_dim;
    attn_classic_args ra;

    cb->ref_c = (float *)malloc((size_t)(B * Lq * Dh) * sizeof *cb->ref_c + 1);
    cb->ref_a = (float *)malloc((size_t)(B * Lq * Lk) * sizeof *cb->ref_a + 1);
    cb->c_tol = (double *)malloc((size_t)(B * Lq * Dh) * sizeof *cb->c_tol + 1);
    cb->w_rel = (double *)malloc((size_t)(B * Lq) * sizeof *cb->w_rel + 1);
    if (cb->ref_c == NULL || cb->ref_a == NULL || cb->c_tol == NULL || cb->w_rel == NULL)
        return ATTN_ERR_NOMEM;
    ra = cb->args;
    ra.c = cb->ref_c;
    ra.weights = cb->ref_a;
    ra.c_stride[1] = Dh;
    ra.c_stride[0] = Lq * Dh;
    ra.weights_stride[2] = 1;
    ra.weights_stride[1] = Lk;
    ra.weights_stride[0] = Lq * Lk;
    return attn_reference_classic_bounds(cb->spec, &ra, cb->c_tol, cb->w_rel);
}

/* C within c_tol, exactly 0 in rows that see no key */
static void compare_c(const classic_case *cb, attn_verify_result *res)
{
    const attn_spec *spec = cb->spec;
    const attn_case *c = &cb->c;
    const attn_dtype odt = spec->dtype_o;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k, Dh = spec->key_dim;
    char label[96] = "", as[32];
    int64_t b, i, j, d;
    int sees = 0;

    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++)
            for (d = 0; d < Dh; d++) {
                const int64_t at = (b * Lq + i) * Dh + d;
                const double x = attn_load_value(odt, cb->c_out.ptr, (size_t)attn_offset4(&cb->lc, b, i, 0, d));
                const double r = cb->ref_c[at];
                double err, ratio;
                int ok = attn_values_agree(x, r, cb->c_tol[at], &err, &ratio);
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
                    snprintf(label, sizeof label, "C[b=%lld][i=%lld][d=%lld]%s", (long long)b, (long long)i,
                             (long long)d, attn_stored_as(odt, as, sizeof as));
                attn_verify_note(res, ok, err, ratio, &res->max_err_o, label, x, r, c);
            }
}

/* A within ATTN_REF_TOL_P and w_rel, exactly 0 where hidden */
static void compare_a(const classic_case *cb, attn_verify_result *res)
{
    const attn_case *c = &cb->c;
    const int64_t B = c->batch, Lq = c->seq_q, Lk = c->seq_k;
    char label[96] = "";
    int64_t b, i, j;

    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++)
            for (j = 0; j < Lk; j++) {
                const double x = ((const float *)cb->a.ptr)[attn_offset4(&cb->la, b, 0, i, j)];
                const double r = cb->ref_a[(b * Lq + i) * Lk + j];
                double err, ratio;
                int ok = attn_values_agree(x, r, ATTN_REF_TOL_P(r) + cb->w_rel[b * Lq + i] * fabs(r), &err, &ratio);
                /* hidden: exactly 0 (a visible key's weight may underflow to 0 in the
                   reference and to a denormal in f32: within the tolerance) */
                if (x != 0.0 && !attn_reference_classic_key_visible(cb->spec, &cb->args, b, i, j)) {
                    ok = 0;
                    ratio = INFINITY;
                }
                if (!ok && res->failures == 0)
                    snprintf(label, sizeof label, "A[b=%lld][i=%lld][j=%lld]", (long long)b, (long long)i,
                             (long long)j);
                attn_verify_note(res, ok, err, ratio, &res->max_err_p, label, x, r, c);
            }
}

/* C and A of one variant's run against the reference's, and their gaps */
static void classic_compare(const void *state, const char *shape, attn_verify_result *res)
{
    const classic_case *cb = (const classic_case *)state;
    compare_c(cb, res);
    if (cb->has_a)
        compare_a(cb, res);
    attn_verify_gaps(res, "C", cb->spec->dtype_o, cb->c_out.ptr, cb->c_described, cb->lc.span, shape);
    attn_verify_gaps(res, "A", ATTN_DTYPE_F32, cb->a.ptr, cb->a_described, cb->la.span, shape);
}

/*
 * Every Lq in {1, 2, 5, 17} against every Lk in {1, 2, 17, 50, 113},
 * batches of 1 to 3, layouts, ragged seqlens_k, threads, U (additive) and A
 * cycling through the grid at different periods, so that each meets the
 * others; then no keys (Lk = 0), no rows, and a ragged batch of many rows.
 * quick == 0 adds longer sequences.
 */
static int classic_default_cases(const attn_spec *spec, attn_case *out, int max, int quick)
{
    static const int64_t lqs[] = { 1, 2, 5, 17 };
    static const int64_t lks[] = { 1, 2, 17, 50, 113 };
    const int additive = spec->family == ATTN_FAMILY_ADDITIVE;
    attn_case_list l;
    int a, k, n;

    l.out = out;
    l.max = max;
    l.n = 0;
    l.padding = spec->padding;
    l.dropout = 0;
    for (a = 0; a < 4; a++)
        for (k = 0; k < 5; k++) {
            n = a * 5 + k;
            /*                     B          Lq      Lk       strided      ragged            threads */
            attn_case_list_add(&l, 1 + n % 3, lqs[a], lks[k], (a + k) % 2, (n / 2) % 2 == 0, 1 + (n / 3) % 2);
            if (l.n > 0 && l.n - 1 == n) {
                out[n].with_u = additive && n % 3 != 2;
                out[n].no_weights = n % 4 == 3;
            }
        }
    n = l.n;
    attn_case_list_add(&l, 2, 5, 0, 0, 1, 2);   /* no keys: C = 0, A has no element */
    attn_case_list_add(&l, 3, 17, 0, 1, 1, 1);
    attn_case_list_add(&l, 2, 0, 17, 1, 1, 2);  /* no rows */
    attn_case_list_add(&l, 3, 17, 50, 1, 1, 2); /* ragged, every layout, with U */
    if (l.n == n + 4)
        out[n + 3].with_u = additive;
    if (!quick) {
        n = l.n;
        attn_case_list_add(&l, 1, 1, 1025, 0, 0, 2);
        attn_case_list_add(&l, 2, 64, 257, 1, 1, 1);
        attn_case_list_add(&l, 1, 300, 17, 0, 1, 2);
        attn_case_list_add(&l, 2, 2, 4099, 1, 1, 2);
        for (a = n; a < l.n; a++)
            out[a].with_u = additive && a % 2;
    }
    return l.n;
}

/* C and the weights A, which every classic case asks for; no LSE */
static void classic_errors(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t len)
{
    (void)spec;
    snprintf(buf, len, "C %.1e A %.1e", res->max_err_o, res->max_err_p);
}

/* ---- what the bench asks (attn_case_ops.flops, visible, args) ------------ */

static double classic_flops(const void *state)
{
    const classic_case *cb = (const classic_case *)state;
    return attn_reference_classic_flops(cb->spec, &cb->args);
}

static int64_t classic_visible(const void *state)
{
    (void)state;
    return -1; /* the bench reports FLOPs of the projections, scores and context */
}

static const void *classic_case_args(const void *state)
{
    return &((const classic_case *)state)->args;
}

/* ---- the tensors of a call (`attngen run`) ------------------------------ */

static int is_additive(const attn_spec *spec) { return spec->family == ATTN_FAMILY_ADDITIVE; }

static attn_takes takes_additive(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(is_additive(spec), 1, why, len, "", "");
}

/* W_h or U (U = H W_h^T replaces W_h): one of the two, in additive configs */
static attn_takes takes_w_h_or_u(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(is_additive(spec), 0, why, len, "", "");
}

static attn_takes takes_w_general(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(!is_additive(spec) && spec->score == ATTN_SCORE_GENERAL, 1, why, len, "", "");
}

static attn_takes takes_concat(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(!is_additive(spec) && spec->score == ATTN_SCORE_CONCAT, 1, why, len, "", "");
}

static attn_takes takes_v_attn(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(is_additive(spec) || spec->score == ATTN_SCORE_CONCAT, 1, why, len, "", "");
}

static attn_takes takes_bias(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->bias && (is_additive(spec) || spec->score == ATTN_SCORE_CONCAT), 1, why, len,
                           "", "has no bias (bias = true)");
}

static attn_takes takes_optional(const attn_spec *spec, char *why, size_t len)
{
    (void)spec;
    return attn_takes_when(1, 0, why, len, "", "");
}

#define B_ ATTN_DIM_BATCH
#define LQ ATTN_DIM_SEQ_Q
#define LK ATTN_DIM_SEQ_K
#define DS ATTN_DIM_QUERY_DIM
#define DH ATTN_DIM_KEY_DIM
#define DA ATTN_DIM_ATTN_DIM

/* S and H (which give batch, seq_q and seq_k), the parameters the score
   reads (S in dtype_q, the rest in dtype_kv), the padding's lengths and the
   mask; C and the weights A. */
static const attn_case_tensor classic_tensors[] = {
    { "--s", "the decoder states S", 0, 3, { B_, LQ, DS }, ATTN_STORE_Q, NULL, 0, NULL },
    { "--h", "the encoder states H", 0, 3, { B_, LK, DH }, ATTN_STORE_KV, NULL, 0, NULL },
    { "--u", "U = H W_h^T", 0, 3, { B_, LK, DA }, ATTN_STORE_KV, takes_w_h_or_u, 0, NULL },
    { "--w-s", "W_s", 0, 2, { DA, DS }, ATTN_STORE_KV, takes_additive, 0, NULL },
    { "--w-h", "W_h", 0, 2, { DA, DH }, ATTN_STORE_KV, takes_w_h_or_u, 0, NULL },
    { "--w", "W", 0, 2, { DH, DS }, ATTN_STORE_KV, takes_w_general, 0, NULL },
    { "--w", "W", 0, 2, { DA, ATTN_DIM_KEY_QUERY_DIM }, ATTN_STORE_KV, takes_concat, 0, NULL },
    { "--v-attn", "v", 0, 1, { DA }, ATTN_STORE_KV, takes_v_attn, 0, NULL },
    { "--b", "b", 0, 1, { DA }, ATTN_STORE_KV, takes_bias, 1, NULL },
    { "--seqlens-k", "one key length per batch", 0, 1, { B_ }, ATTN_STORE_I32, attn_takes_padding, 0, NULL },
    { "--mask", "the mask", 0, 3, { B_, LQ, LK }, ATTN_STORE_MASK, attn_takes_mask, 0, NULL },
    { "-o", "the context C", 1, 3, { B_, LQ, DH }, ATTN_STORE_O, NULL, 0, NULL },
    { "--weights", "the attention weights A", 1, 3, { B_, LQ, LK }, ATTN_STORE_F32, takes_optional, 0, NULL },
    { NULL, NULL, 0, 0, { B_ }, ATTN_STORE_F32, NULL, 0, NULL },
};

#undef B_
#undef LQ
#undef LK
#undef DS
#undef DH
#undef DA

const attn_case_ops attn_cases_classic_fwd = {
    "classic",       sizeof(classic_case), classic_build,   classic_reference, classic_run,
    classic_compare, classic_reset,        classic_outputs, classic_free,      classic_default_cases,
    classic_errors,
    classic_flops,   "classic",            classic_visible, classic_case_args, NULL,
    classic_tensors,
};
