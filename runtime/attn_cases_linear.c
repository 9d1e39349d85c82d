/*
 * attn_cases_linear.c - what linear attention's verification cases add to
 * those of attn_cases_sdpa.c: the state S [D][Dv] and z [D] per batch and
 * kv head, in and out, that kernel and reference start from and must agree
 * on within ATTN_REF_TOL_STATE, and the LSE a linear kernel must leave
 * alone.  Linear attention has no mask, weights or dropout (the case's
 * build ignores their fields).
 */
#include "attn_cases_qkv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"

/* n states (S [D][Dv], z [D]) of 1 to 16 earlier N(0,1) keys and values
   each, summed in double and rounded once.  0, or -1 when out of memory. */
static int fill_state(float *s, float *z, int64_t n, int64_t D, int64_t Dv, attn_rng *r)
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
        const int64_t keys = 1 + (int64_t)(attn_rng_next(r) % 16);
        for (j = 0; j < D * Dv + D; j++)
            acc[j] = 0.0;
        for (m = 0; m < keys; m++) {
            for (d = 0; d < D; d++) {
                const double x = attn_rng_normal(r);
                k[d] = x > 0.0 ? x + 1.0 : exp(x); /* elu(x) + 1 */
            }
            for (e = 0; e < Dv; e++)
                v[e] = attn_rng_normal(r);
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

/* the state before the call: that of a few earlier N(0,1) keys and values,
   S = sum phi(k) v^T (any sign) and z = sum phi(k) (positive), as a real
   state is */
int attn_linear_state_build(attn_qkv_case *cb, attn_rng *r)
{
    const attn_spec *spec = cb->spec;
    const int64_t B = cb->c.batch, Hkv = spec->heads_kv, D = spec->head_dim, Dv = spec->head_dim_v;
    cb->s_count = (size_t)B * (size_t)Hkv * (size_t)D * (size_t)Dv;
    cb->z_count = (size_t)B * (size_t)Hkv * (size_t)D;
    if (attn_guard_floats(&cb->state_s, cb->s_count) || attn_guard_floats(&cb->state_z, cb->z_count))
        return -1;
    cb->s0 = (float *)malloc(cb->s_count * sizeof(float) + 1);
    cb->z0 = (float *)malloc(cb->z_count * sizeof(float) + 1);
    if (cb->s0 == NULL || cb->z0 == NULL || fill_state(cb->s0, cb->z0, B * Hkv, D, Dv, r) != 0)
        return -1;
    return 0;
}

void attn_linear_state_reset(attn_qkv_case *cb)
{
    if (cb->s_count > 0)
        memcpy(cb->state_s.ptr, cb->s0, cb->s_count * sizeof(float));
    if (cb->z_count > 0)
        memcpy(cb->state_z.ptr, cb->z0, cb->z_count * sizeof(float));
}

void attn_linear_state_args(attn_qkv_case *cb)
{
    if (cb->s_count > 0) {
        cb->args.state_s = (float *)cb->state_s.ptr;
        cb->args.state_z = (float *)cb->state_z.ptr;
    }
}

int attn_linear_state_outputs(const attn_qkv_case *cb, attn_case_output *out)
{
    if (cb->s_count == 0)
        return 0;
    out[0].name = "state_s";
    out[0].ptr = cb->state_s.ptr;
    out[0].bytes = cb->s_count * sizeof(float);
    out[1].name = "state_z";
    out[1].ptr = cb->state_z.ptr;
    out[1].bytes = cb->z_count * sizeof(float);
    return 2;
}

void attn_linear_state_free(attn_qkv_case *cb)
{
    attn_guard_free(&cb->state_s);
    attn_guard_free(&cb->state_z);
    free(cb->s0);
    cb->s0 = NULL;
    free(cb->z0);
    cb->z0 = NULL;
}

/* the reference's state starts where the kernel's does */
int attn_linear_state_ref_alloc(attn_qkv_case *cb)
{
    attn_qkv_ref *ref = &cb->ref;
    if (cb->s_count == 0)
        return 0;
    ref->s = (float *)malloc(cb->s_count * sizeof *ref->s + 1);
    ref->z = (float *)malloc(cb->z_count * sizeof *ref->z + 1);
    ref->s_abs = (double *)malloc(cb->s_count * sizeof *ref->s_abs + 1);
    ref->z_abs = (double *)malloc(cb->z_count * sizeof *ref->z_abs + 1);
    if (ref->s == NULL || ref->z == NULL || ref->s_abs == NULL || ref->z_abs == NULL)
        return -1;
    memcpy(ref->s, cb->s0, cb->s_count * sizeof *ref->s);
    memcpy(ref->z, cb->z0, cb->z_count * sizeof *ref->z);
    return 0;
}

/* the sums of |terms| that bound the state's error, after the reference ran */
attn_status attn_linear_state_ref_bound(attn_qkv_case *cb, const attn_args *ref_args)
{
    if (cb->s_count > 0 &&
        attn_reference_linear_state_bound(cb->spec, ref_args, cb->s0, cb->z0, cb->ref.s_abs, cb->ref.z_abs) != 0)
        return ATTN_ERR_NOMEM; /* cannot happen: the reference accepted the args */
    return ATTN_OK;
}

void attn_linear_compare_lse_untouched(const attn_qkv_case *cb, const char *shape, attn_verify_result *res)
{
    size_t e;
    for (e = 0; e < cb->lse_count; e++) {
        if (attn_load_bits(ATTN_DTYPE_F32, cb->lse.ptr, e) == attn_gap_bits(ATTN_DTYPE_F32))
            continue;
        if (res->failures == 0)
            snprintf(res->first_failure, sizeof res->first_failure,
                     "LSE[%zu] was written (%.9g) by a linear kernel, which writes no LSE (shape %s)", e,
                     (double)((const float *)cb->lse.ptr)[e], shape);
        res->failures++;
    }
}

/* the state after the call, within ATTN_REF_TOL_STATE of sum|terms| */
void attn_linear_compare_state(const attn_qkv_case *cb, attn_verify_result *res)
{
    const attn_spec *spec = cb->spec;
    const attn_qkv_ref *ref = &cb->ref;
    char label[96] = "";
    size_t e;

    for (e = 0; e < cb->s_count + cb->z_count; e++) {
        const int is_z = e >= cb->s_count;
        const size_t at = is_z ? e - cb->s_count : e;
        const double x = is_z ? ((const float *)cb->state_z.ptr)[at] : ((const float *)cb->state_s.ptr)[at];
        const double r = is_z ? ref->z[at] : ref->s[at];
        const double bound = ATTN_REF_TOL_STATE(is_z ? ref->z_abs[at] : ref->s_abs[at]);
        double err, ratio;
        const int ok = attn_values_agree(x, r, bound, &err, &ratio);
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
        attn_verify_note(res, ok, err, ratio, &res->max_err_state, label, x, r, &cb->c);
    }
}

/* linear attention verifies as the sdpa cases do, with the state above;
   its shape matrix is sdpa's (masks do not apply; tile_q is the chunk of
   the causal algorithm; no dropout) */
/* no LSE; the state written back when there is one */
static void linear_errors(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t len)
{
    if (spec->state)
        snprintf(buf, len, "O %.1e state %.1e", res->max_err_o, res->max_err_state);
    else
        snprintf(buf, len, "O %.1e", res->max_err_o);
}

/* the FLOPs of the chunked algorithm the kernels run */
static double linear_flops(const void *state)
{
    const attn_qkv_case *cb = (const attn_qkv_case *)state;
    return attn_reference_linear_flops(cb->spec, &cb->args);
}

const attn_case_ops attn_cases_linear_fwd = {
    "linear",         sizeof(attn_qkv_case), attn_qkv_build,   attn_qkv_reference, attn_qkv_run,
    attn_qkv_compare, attn_qkv_reset,        attn_qkv_outputs, attn_qkv_free,      attn_qkv_default_cases,
    linear_errors,
    linear_flops,     "linear_chunked",      attn_qkv_visible, attn_qkv_args,      attn_qkv_widened,
    attn_qkv_tensors, /* sdpa's: the same arguments */
};
