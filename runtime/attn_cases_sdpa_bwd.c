/*
 * attn_cases_sdpa_bwd.c - the verification cases of the sdpa backward pass
 * (specs with backward): the forward's inputs of the same case
 * (attn_cases_sdpa.c), O and LSE from the forward's reference stored as the
 * kernel stores them, a random dO in O's layout (NaN gaps), dQ, dK and dV
 * (and dsinks, with sinks, drel_table, with rel_bias, and dq_norm_w, with
 * qk_norm) against guard pages, and the comparison with the float64 reference
 * (attn_reference_backward) by FlashAttention's criterion: each gradient's
 * largest error at most twice that of a plain float32 implementation of the
 * same formulas on the same inputs, plus 1e-5 of the gradient's largest
 * magnitude (and, for gradients stored as bf16 or f16, the rounding of
 * ATTN_REF_TOL_REL of that type).  These are the sdpa family's ops for the
 * backward direction (attn_cases_sdpa_bwd), which the harness of
 * attn_verify.c runs as it runs the forward's.
 */
#include "attn_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cases_qkv.h"
#include "attn_reference.h"

enum { NGRAD = 6 }; /* dQ, dK, dV, dsinks, drel_table, dq_norm_w */

typedef struct {
    attn_qkv_case f;            /* the forward's inputs, O and LSE */
    attn_guard_buf dout, dq, dk, dv, dsinks, drel, dnorm;
    float *dow, *ow;            /* dO and O as stored, widened, contiguous [B][Lq][Hq][Dv] */
    float *ref[2][NGRAD];       /* [float64, plain f32][dQ, dK, dV, dsinks, drel_table, dq_norm_w], contiguous */
    size_t n[NGRAD];            /* elements of each (dsinks: Hq with sinks; drel_table: rows Hq with rel_bias;
                                   dq_norm_w: D with qk_norm) */
    attn_status refused;        /* the forward reference's refusal (ATTN_ERR_ROPE), which the kernel must repeat */
    attn_bwd_args args;
} bwd_case;

static void bwd_free(bwd_case *cb)
{
    int m, g;
    attn_qkv_free(&cb->f);
    attn_guard_free(&cb->dout);
    attn_guard_free(&cb->dq);
    attn_guard_free(&cb->dk);
    attn_guard_free(&cb->dv);
    attn_guard_free(&cb->dsinks);
    attn_guard_free(&cb->drel);
    attn_guard_free(&cb->dnorm);
    free(cb->dow);
    free(cb->ow);
    for (m = 0; m < 2; m++)
        for (g = 0; g < NGRAD; g++)
            free(cb->ref[m][g]);
    memset(cb, 0, sizeof *cb);
}

static attn_dtype grad_type(const attn_spec *spec, int g)
{
    return g == 0 ? spec->dtype_grad_q : g >= 3 ? ATTN_DTYPE_F32 : spec->dtype_grad_kv;
}

/* The gradients before a run: every element the "unset" NaN. */
static void bwd_reset(void *state)
{
    bwd_case *cb = (bwd_case *)state;
    attn_guard_buf *out[NGRAD] = { &cb->dq, &cb->dk, &cb->dv, &cb->dsinks, &cb->drel, &cb->dnorm };
    int g;
    size_t i;
    for (g = 0; g < NGRAD; g++)
        for (i = 0; i < cb->n[g]; i++)
            attn_store_bits(grad_type(cb->f.spec, g), out[g]->ptr, i, attn_unset_bits(grad_type(cb->f.spec, g)));
}

/* O and LSE of the forward's reference, stored as the kernel's forward would leave them. */
static void bwd_store_forward(bwd_case *cb)
{
    const attn_spec *spec = cb->f.spec;
    const attn_case *c = &cb->f.c;
    int64_t b, i, h, d;
    for (b = 0; b < c->batch; b++)
        for (i = 0; i < c->seq_q; i++)
            for (h = 0; h < spec->heads_q; h++)
                for (d = 0; d < spec->head_dim_v; d++) {
                    const size_t at = (size_t)(((b * c->seq_q + i) * spec->heads_q + h) * spec->head_dim_v + d);
                    const size_t o = (size_t)attn_offset4(&cb->f.lo, b, i, h, d);
                    float x = cb->f.ref.o[at];
                    attn_verify_narrow(spec->dtype_o, &x, (unsigned char *)cb->f.o.ptr + o * attn_dtype_size(spec->dtype_o), 1);
                    attn_verify_widen(spec->dtype_o, (unsigned char *)cb->f.o.ptr + o * attn_dtype_size(spec->dtype_o),
                                      &cb->ow[at], 1);
                    /* dO: N(0,1) as stored */
                    x = cb->dow[at];
                    attn_verify_narrow(spec->dtype_o, &x, (unsigned char *)cb->dout.ptr + o * attn_dtype_size(spec->dtype_o), 1);
                    attn_verify_widen(spec->dtype_o, (unsigned char *)cb->dout.ptr + o * attn_dtype_size(spec->dtype_o),
                                      &cb->dow[at], 1);
                }
    memcpy(cb->f.lse.ptr, cb->f.ref.lse, cb->f.lse_count * sizeof(float));
}

static void bwd_free_state(void *state)
{
    bwd_free((bwd_case *)state);
}

static attn_status bwd_build_parts(bwd_case *cb, const attn_spec *spec, const attn_case *c)
{
    attn_status st = attn_qkv_build(&cb->f, spec, c);
    const size_t no = (size_t)c->batch * (size_t)c->seq_q * (size_t)spec->heads_q * (size_t)spec->head_dim_v;
    attn_guard_buf *out[NGRAD] = { &cb->dq, &cb->dk, &cb->dv, &cb->dsinks, &cb->drel, &cb->dnorm };
    attn_rng r;
    size_t i;
    int m, g;

    if (st != ATTN_OK)
        return st;
    st = attn_qkv_reference(&cb->f);
    if (st == ATTN_ERR_ROPE)
        cb->refused = st;
    else if (st != ATTN_OK)
        return st;
    cb->n[0] = (size_t)c->batch * (size_t)c->seq_q * (size_t)spec->heads_q * (size_t)spec->head_dim;
    cb->n[1] = (size_t)c->batch * (size_t)c->seq_k * (size_t)spec->heads_kv * (size_t)spec->head_dim;
    cb->n[2] = (size_t)c->batch * (size_t)c->seq_k * (size_t)spec->heads_kv * (size_t)spec->head_dim_v;
    cb->n[3] = spec->sinks ? (size_t)spec->heads_q : 0;
    cb->n[4] = (size_t)attn_rel_rows(spec) * (size_t)spec->heads_q;
    cb->n[5] = spec->qk_norm ? (size_t)spec->head_dim : 0;
    cb->dow = (float *)malloc((no + 1) * sizeof(float));
    cb->ow = (float *)malloc((no + 1) * sizeof(float));
    if (cb->dow == NULL || cb->ow == NULL ||
        attn_guard_alloc(&cb->dout, cb->f.lo.span * attn_dtype_size(spec->dtype_o)))
        return ATTN_ERR_NOMEM;
    for (g = 0; g < NGRAD; g++) {
        if (attn_guard_alloc(out[g], cb->n[g] * attn_dtype_size(grad_type(spec, g))))
            return ATTN_ERR_NOMEM;
        for (m = 0; m < 2; m++)
            if ((cb->ref[m][g] = (float *)malloc((cb->n[g] + 1) * sizeof(float))) == NULL)
                return ATTN_ERR_NOMEM;
    }
    /* dO: its own stream (the forward's inputs stay the forward case's); gaps NaN */
    attn_rng_init(&r, c->seed ^ 0xd0d0d0d0u);
    for (i = 0; i < no; i++)
        cb->dow[i] = attn_rng_normal(&r);
    for (i = 0; i < cb->f.lo.span; i++)
        attn_store_bits(spec->dtype_o, cb->dout.ptr, i, attn_gap_bits(spec->dtype_o));
    if (!cb->refused)
        bwd_store_forward(cb);
    bwd_reset(cb);
    cb->args.fwd = cb->f.args;
    cb->args.fwd.weights = NULL;
    cb->args.fwd.entropy = NULL;
    cb->args.d_o = cb->dout.ptr;
    cb->args.dq = cb->dq.ptr;
    cb->args.dk = cb->dk.ptr;
    cb->args.dv = cb->dv.ptr;
    cb->args.dsinks = spec->sinks ? (float *)cb->dsinks.ptr : NULL;
    cb->args.drel_table = cb->n[4] > 0 ? (float *)cb->drel.ptr : NULL;
    cb->args.dq_norm_w = cb->n[5] > 0 ? (float *)cb->dnorm.ptr : NULL;
    memcpy(cb->args.do_stride, cb->f.lo.str, sizeof cb->args.do_stride);
    {
        attn_bwd_args contiguous = cb->args;
        attn_bwd_args_set_contiguous(&contiguous, spec);
        memcpy(cb->args.dq_stride, contiguous.dq_stride, sizeof cb->args.dq_stride);
        memcpy(cb->args.dk_stride, contiguous.dk_stride, sizeof cb->args.dk_stride);
        memcpy(cb->args.dv_stride, contiguous.dv_stride, sizeof cb->args.dv_stride);
    }
    return ATTN_OK;
}

/* The case's inputs (on failure, nothing left to free).  Where the forward's
   reference refuses the inputs (a position outside a RoPE table), the case
   is built all the same and remembers the refusal: its reference returns it,
   and the harness expects the kernel to return it too, writing nothing. */
static attn_status bwd_build(void *state, const attn_spec *spec, const attn_case *c)
{
    bwd_case *cb = (bwd_case *)state;
    const attn_status st = bwd_build_parts(cb, spec, c);
    if (st != ATTN_OK)
        bwd_free(cb);
    return st;
}

/* Both references: float64 (m = 0) and plain f32 (m = 1), on the stored values widened. */
static attn_status bwd_reference(void *state)
{
    bwd_case *cb = (bwd_case *)state;
    const attn_spec *spec = cb->f.spec;
    attn_bwd_args a = cb->args;
    attn_status st = ATTN_OK;
    int m;
    if (cb->refused)
        return cb->refused;
    attn_bwd_args_set_contiguous(&a, spec);
    a.fwd = cb->f.args;
    a.fwd.weights = NULL;
    a.fwd.entropy = NULL;
    a.fwd.q = cb->f.qw;
    a.fwd.k = cb->f.kw;
    a.fwd.v = cb->f.vw;
    a.fwd.o = cb->ow;
    memcpy(a.fwd.k_stride, cb->f.lkw.str, sizeof a.fwd.k_stride);
    memcpy(a.fwd.v_stride, cb->f.lvw.str, sizeof a.fwd.v_stride);
    {
        attn_args contiguous = a.fwd;
        attn_args_set_contiguous(&contiguous, spec);
        memcpy(a.fwd.o_stride, contiguous.o_stride, sizeof a.fwd.o_stride);
        memcpy(a.do_stride, contiguous.o_stride, sizeof a.do_stride);
    }
    a.d_o = cb->dow;
    for (m = 0; m < 2 && st == ATTN_OK; m++) {
        a.dq = cb->ref[m][0];
        a.dk = cb->ref[m][1];
        a.dv = cb->ref[m][2];
        a.dsinks = spec->sinks ? cb->ref[m][3] : NULL;
        a.drel_table = cb->n[4] > 0 ? cb->ref[m][4] : NULL;
        a.dq_norm_w = cb->n[5] > 0 ? cb->ref[m][5] : NULL;
        st = attn_reference_backward(spec, &a, m);
    }
    return st;
}

static const char *const grad_names[NGRAD] = { "dQ", "dK", "dV", "dsinks", "drel_table", "dq_norm_w" };

/* Each gradient of the last run against the float64 reference. */
static void bwd_compare(const void *state, const char *shape, attn_verify_result *res)
{
    const bwd_case *cb = (const bwd_case *)state;
    const attn_spec *spec = cb->f.spec;
    const attn_guard_buf *out[NGRAD] = { &cb->dq, &cb->dk, &cb->dv, &cb->dsinks, &cb->drel, &cb->dnorm };
    double *max_err[NGRAD];
    char label[96] = "";
    int g;
    size_t i;

    max_err[0] = &res->max_err_dq;
    max_err[1] = &res->max_err_dk;
    max_err[2] = &res->max_err_dv;
    max_err[3] = &res->max_err_dsinks;
    max_err[4] = &res->max_err_drel;
    max_err[5] = &res->max_err_dq_norm_w;
    (void)shape;
    for (g = 0; g < NGRAD; g++) {
        const attn_dtype dt = grad_type(spec, g);
        double f32_err = 0.0, mag = 0.0, tol;
        for (i = 0; i < cb->n[g]; i++) {
            const double r = cb->ref[0][g][i], e = fabs((double)cb->ref[1][g][i] - r);
            if (isfinite(r) && fabs(r) > mag)
                mag = fabs(r);
            if (isfinite(e) && e > f32_err)
                f32_err = e;
        }
        tol = 2.0 * f32_err + 1e-5 * mag;
        for (i = 0; i < cb->n[g]; i++) {
            const double x = attn_load_value(dt, out[g]->ptr, i), r = cb->ref[0][g][i];
            double err, ratio;
            const double t = tol + (dt == ATTN_DTYPE_F32 ? 0.0 : ATTN_REF_TOL_REL(dt) * fabs(r)) + 1e-30;
            const int ok = attn_values_agree(x, r, t, &err, &ratio);
            if (!ok && res->failures == 0)
                snprintf(label, sizeof label, "%s[%zu] (contiguous; tolerance %.2e)", grad_names[g], i, t);
            attn_verify_note(res, ok, err, ratio, max_err[g], label, x, r, &cb->f.c);
        }
    }
}

static attn_status bwd_run(void *state, const attn_case_kernel *k, int threads)
{
    bwd_case *cb = (bwd_case *)state;
    cb->args.fwd.threads = threads;
    return k->bwd_variant != NULL ? k->bwd_variant->bwd(&cb->args) : k->bwd->bwd(&cb->args);
}

static int bwd_outputs(const void *state, attn_case_output *out)
{
    const bwd_case *cb = (const bwd_case *)state;
    const attn_guard_buf *buf[NGRAD] = { &cb->dq, &cb->dk, &cb->dv, &cb->dsinks, &cb->drel, &cb->dnorm };
    int g;
    for (g = 0; g < NGRAD; g++) {
        out[g].name = grad_names[g];
        out[g].ptr = buf[g]->ptr;
        out[g].bytes = cb->n[g] * attn_dtype_size(grad_type(cb->f.spec, g));
    }
    return NGRAD;
}

/* "dQ e dK e dV e", and the gradients the spec has besides */
static void bwd_errors(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t len)
{
    int n = snprintf(buf, len, "dQ %.1e dK %.1e dV %.1e", res->max_err_dq, res->max_err_dk, res->max_err_dv);
    if (spec->sinks && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " dsinks %.1e", res->max_err_dsinks);
    if (spec->rel_bias && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " drel_table %.1e", res->max_err_drel);
    if (spec->qk_norm && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " dq_norm_w %.1e", res->max_err_dq_norm_w);
}

/* ---- what the bench asks (attn_case_ops.flops, visible, args) ------------ */

static int64_t bwd_visible(const void *state)
{
    return attn_qkv_visible(&((const bwd_case *)state)->f);
}

/* five products of the visible scores' size against the forward's two */
static double bwd_flops(const void *state)
{
    const bwd_case *cb = (const bwd_case *)state;
    return 2.5 * 2.0 * (double)bwd_visible(state) * (cb->f.spec->head_dim + cb->f.spec->head_dim_v);
}

static const void *bwd_case_args(const void *state)
{
    return &((const bwd_case *)state)->args;
}

/* ---- the tensors of the backward pass (`attngen run`) -------------------- */

static attn_takes takes_dsinks(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->sinks, 0, why, len, "", "has no sinks (sinks = true)");
}

static attn_takes takes_drel(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(attn_rel_rows(spec) > 0, 0, why, len, "", "has no relative position bias (rel_bias)");
}

static attn_takes takes_dnorm(const attn_spec *spec, char *why, size_t len)
{
    return attn_takes_when(spec->qk_norm, 0, why, len, "", "has no qk_norm");
}

/* dO, shaped like O (in O's storage type), and the gradients written: of Q,
   K and V, of the sinks, of the relative position table and of the query
   norm's weights; the forward's inputs are the forward ops' (attn_qkv_tensors). */
static const attn_case_tensor bwd_tensors[] = {
    { "--do", "the gradient of the output", 0, 4,
      { ATTN_DIM_BATCH, ATTN_DIM_SEQ_Q, ATTN_DIM_HEADS_Q, ATTN_DIM_HEAD_DIM_V }, ATTN_STORE_O, NULL, 0, NULL },
    { "--dq", "the gradient of Q", 1, 4, { ATTN_DIM_BATCH, ATTN_DIM_SEQ_Q, ATTN_DIM_HEADS_Q, ATTN_DIM_HEAD_DIM },
      ATTN_STORE_GRAD_Q, NULL, 0, NULL },
    { "--dk", "the gradient of K", 1, 4, { ATTN_DIM_BATCH, ATTN_DIM_SEQ_K, ATTN_DIM_HEADS_KV, ATTN_DIM_HEAD_DIM },
      ATTN_STORE_GRAD_KV, NULL, 0, NULL },
    { "--dv", "the gradient of V", 1, 4, { ATTN_DIM_BATCH, ATTN_DIM_SEQ_K, ATTN_DIM_HEADS_KV, ATTN_DIM_HEAD_DIM_V },
      ATTN_STORE_GRAD_KV, NULL, 0, NULL },
    { "--dsinks", "sinks gradient", 1, 1, { ATTN_DIM_HEADS_Q }, ATTN_STORE_F32, takes_dsinks, 0, NULL },
    { "--drel", "relative position table's gradient", 1, 2, { ATTN_DIM_REL_ROWS, ATTN_DIM_HEADS_Q }, ATTN_STORE_F32,
      takes_drel, 0, NULL },
    { "--dq-norm-w", "query norm weights' gradient", 1, 1, { ATTN_DIM_HEAD_DIM }, ATTN_STORE_F32, takes_dnorm, 0, NULL },
    { NULL, NULL, 0, 0, { ATTN_DIM_BATCH }, ATTN_STORE_F32, NULL, 0, NULL },
};

const attn_case_ops attn_cases_sdpa_bwd = {
    "sdpa backward", sizeof(bwd_case), bwd_build,      bwd_reference,  bwd_run,
    bwd_compare,     bwd_reset,        bwd_outputs,    bwd_free_state, attn_qkv_default_cases,
    bwd_errors,
    bwd_flops,       "backward",       bwd_visible,    bwd_case_args,  NULL,
    bwd_tensors,
};
