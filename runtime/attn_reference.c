/*
 * attn_reference.c - the naive reference of the sdpa, linear, additive and
 * luong families' semantics (docs/config.md).
 *
 * Written to be obviously right rather than fast: for every (b, h, i) it
 * decides the visibility of every key with the rules exactly as
 * docs/config.md states them, computes the scores in double, and takes a max-subtracted
 * softmax in double.  It shares no code with the templates.  Its tensors are
 * f32 whatever the kernel stores (attn_reference.h): for bf16 and f16
 * kernels the caller passes the stored values widened.
 */
#include "attn_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double attn_reference_alibi_slope(int h, int n)
{
    int c = 1;
    if (n <= 0 || h < 0 || h >= n)
        return NAN;
    while (c * 2 <= n) /* c = 2^floor(log2 n) */
        c *= 2;
    if (h < c) /* the rule for c heads: 2^(-8 (h+1) / c) */
        return pow(2.0, -8.0 * (h + 1) / c);
    /* then indices 0, 2, 4, ... of the rule for 2c heads */
    return pow(2.0, -8.0 * (2 * (h - c) + 1) / (2.0 * c));
}

int attn_reference_dropout_kept(const attn_spec *spec, const attn_args *args, int64_t b, int h, int64_t i,
                                int64_t j)
{
    /* counter (j >> 2, i, b * Hq + h, offset), key (seed mod 2^32, seed >> 32): word j & 3 */
    uint32_t ctr[4], key[2], r[4];
    ctr[0] = (uint32_t)(j >> 2);
    ctr[1] = (uint32_t)i;
    ctr[2] = (uint32_t)(b * spec->heads_q + h);
    ctr[3] = args->dropout_offset;
    key[0] = (uint32_t)(args->dropout_seed & 0xFFFFFFFFu);
    key[1] = (uint32_t)(args->dropout_seed >> 32);
    attn_philox4x32_10(ctr, key, r);
    return r[j & 3] >= (uint32_t)floor((double)args->dropout_p * 4294967296.0);
}

/* A softmax weight w after dropout: w / (1 - p) where kept, else 0. */
static double dropout_weight(const attn_spec *spec, const attn_args *args, int64_t b, int h, int64_t i, int64_t j,
                             double w)
{
    if (args->dropout_p <= 0.0f)
        return w;
    return attn_reference_dropout_kept(spec, args, b, h, i, j) ? w / (1.0 - (double)args->dropout_p) : 0.0;
}

/* The element offset of mask/bias value (b, h, i, j). */
static int64_t mask_offset(const attn_args *args, int64_t b, int h, int64_t i, int64_t j)
{
    return b * args->mask_stride[0] + h * args->mask_stride[1] +
           i * args->mask_stride[2] + j * args->mask_stride[3];
}

/* The position of query row i of Lq rows when Lk_b keys are valid:
   bottom-right, i + Lk_b - Lq, or with causal = "top_left", i. */
static int64_t position(const attn_spec *spec, int64_t i, int64_t lk_b, int64_t lq)
{
    if (spec->top_left)
        return i;
    return i + lk_b - lq;
}

/* The element offset of key j of kv head hk of batch b in K or V (its
   strides): {b, s, h}, or for a paged config {page, slot, head}, key j
   being slot j % P of page block_table[b][j / P]. */
static int64_t kv_offset(const attn_spec *spec, const attn_args *args, const int64_t *stride, int64_t b, int64_t j,
                         int hk)
{
    if (spec->family == ATTN_FAMILY_SDPA && spec->page > 0) {
        const int64_t page = args->block_table[b * args->block_table_stride + j / spec->page];
        return page * stride[0] + (j % spec->page) * stride[1] + hk * stride[2];
    }
    return b * stride[0] + j * stride[1] + hk * stride[2];
}

/* The temperature of a query row at position p (docs/config.md,
   "temperature"): 1 + scale * ln(floor((p + 1) / floor) + 1), p + 1 taken as
   0 below 0, in double and rounded to f32 once; 1 without temperature. */
static double temperature(const attn_spec *spec, int64_t p)
{
    double x;
    if (spec->temperature_scale <= 0.0)
        return 1.0;
    x = p + 1 > 0 ? floor((double)(p + 1) / spec->temperature_floor) : 0.0;
    return (double)(float)(1.0 + spec->temperature_scale * log(x + 1.0));
}

static int linear_key_visible(const attn_spec *spec, int64_t j, int64_t lk_b, int64_t p);

/* Whether key j is visible to query row i (position p) of batch b, head h. */
static int key_visible(const attn_spec *spec, const attn_args *args, int64_t b, int h,
                       int64_t i, int64_t j, int64_t lk_b, int64_t p)
{
    const int64_t g = spec->global_tokens;

    /* valid: j < Lk_b */
    if (!(j < lk_b))
        return 0;
    /* causal: j <= p_i */
    if (spec->causal && !(j <= p))
        return 0;
    /* a sparse pattern is causal by itself, for every row: j <= p_i */
    if (spec->sparse != ATTN_SPARSE_NONE && !(j <= p))
        return 0;
    /* window: p_i - left <= j <= p_i + right; chunk: j / C == p_i / C, for
       p_i >= 0 (a row at p_i < 0 is in no chunk).  Global queries
       (0 <= p_i < G) are exempt from both and from the sparse pattern,
       keys j < G from the window's left bound, the chunk and the pattern.
       A row past the keys (p_i < 0, when Lq > Lk_b) is no global token. */
    if (!(p >= 0 && p < g)) {
        if (spec->window_left >= 0 && !(j < g) && !(p - spec->window_left <= j))
            return 0;
        if (spec->window_right >= 0 && !(j <= p + spec->window_right))
            return 0;
        if (spec->chunk > 0 && !(j < g) && !(p >= 0 && j / spec->chunk == p / spec->chunk))
            return 0;
        /* sparse patterns (Child et al. 2019), for keys j >= G: strided with
           stride l: p_i - j < l or (p_i - j) mod l == 0; fixed with block l,
           summary c: j / l == p_i / l or j mod l >= l - c */
        if (spec->sparse == ATTN_SPARSE_STRIDED && !(j < g)) {
            const int64_t l = spec->sparse_stride;
            if (!(p - j < l || (p - j) % l == 0))
                return 0;
        }
        if (spec->sparse == ATTN_SPARSE_FIXED && !(j < g)) {
            const int64_t l = spec->sparse_block, c = spec->sparse_summary;
            if (!(j / l == p / l || j % l >= l - c))
                return 0;
        }
    }
    /* bool mask: keep only nonzero */
    if (spec->mask == ATTN_MASK_BOOL) {
        const unsigned char *m = (const unsigned char *)args->mask;
        if (m[mask_offset(args, b, h, i, j)] == 0)
            return 0;
    }
    return 1;
}

int attn_reference_key_visible(const attn_spec *spec, const attn_args *args, int64_t b, int h,
                               int64_t i, int64_t j)
{
    const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
    const int64_t p = position(spec, i, lk_b, args->seq_q);
    if (spec->family == ATTN_FAMILY_LINEAR)
        return linear_key_visible(spec, j, lk_b, p);
    return key_visible(spec, args, b, h, i, j, lk_b, p);
}

int64_t attn_reference_rel_bucket(const attn_spec *spec, int64_t rel)
{
    if (spec->rel_bias == ATTN_REL_CLIPPED) {
        const int64_t k = spec->rel_max_distance;
        return (rel < -k ? -k : rel > k ? k : rel) + k;
    } else {
        /* Hugging Face T5's _relative_position_bucket, its float32 math included */
        int64_t nb = spec->rel_buckets, bucket = 0, n, me;
        if (spec->rel_bidirectional) {
            nb /= 2;
            bucket = rel > 0 ? nb : 0;
            n = rel < 0 ? -rel : rel;
        } else {
            n = rel < 0 ? -rel : 0;
        }
        me = nb / 2; /* max_exact */
        if (n < me)
            return bucket + n;
        {
            const float x = logf((float)n / (float)me) / (float)log((double)spec->rel_max_distance / (double)me) *
                            (float)(nb - me);
            const int64_t large = me + (int64_t)x;
            return bucket + (large < nb - 1 ? large : nb - 1);
        }
    }
}

/* qk_norm (docs/config.md, "qk_norm"): x[0..head_dim) times (offset + w) /
   sqrt(mean(x^2) + eps), in double. */
void attn_reference_qk_norm(const attn_spec *spec, const float *w, double *x)
{
    double ss = 0.0, r;
    int d;
    for (d = 0; d < spec->head_dim; d++)
        ss += x[d] * x[d];
    r = 1.0 / sqrt(ss / spec->head_dim + spec->qk_norm_eps);
    for (d = 0; d < spec->head_dim; d++)
        x[d] = x[d] * r * ((double)spec->qk_norm_offset + (double)w[d]);
}

/* x[0..rope_dim) rotated by RoPE's angles at position p (docs/config.md,
   "rope"), sign = 1, or back (the rotation's transpose: the gradient of a
   rotated row taken to the row before it), sign = -1: the angles p *
   inv_freq_m formed and taken cos / sin of in double, or the caller's table
   rows (args->rope_cos / rope_sin); x as it is without rope. */
void attn_reference_rope(const attn_spec *spec, const attn_args *args, int64_t p, double *x, int sign)
{
    const int half = spec->rope_dim / 2;
    int m;
    if (spec->rope_style == ATTN_ROPE_NONE)
        return;
    for (m = 0; m < half; m++) {
        const int ia = spec->rope_style == ATTN_ROPE_GPTJ ? 2 * m : m;
        const int ib = spec->rope_style == ATTN_ROPE_GPTJ ? 2 * m + 1 : m + half;
        const double a = x[ia], b = x[ib];
        double c, sn;
        if (spec->rope_table) {
            c = (double)args->rope_cos[p * half + m];
            sn = (double)args->rope_sin[p * half + m];
        } else {
            c = cos((double)p * spec->rope_inv_freq[m]);
            sn = sin((double)p * spec->rope_inv_freq[m]);
        }
        sn *= (double)sign;
        x[ia] = a * c - b * sn;
        x[ib] = a * sn + b * c;
    }
}

/* Query row q at position p as used by the scores, in double: RMS-normed
   first with qk_norm (attn_reference_qk_norm), then rotated by RoPE
   (attn_reference_rope) when the spec has it; else q as it is. */
static void query_row(const attn_spec *spec, const attn_args *args, const float *q, int64_t p, double *out)
{
    int d;
    for (d = 0; d < spec->head_dim; d++)
        out[d] = (double)q[d];
    if (spec->qk_norm)
        attn_reference_qk_norm(spec, args->q_norm_w, out);
    attn_reference_rope(spec, args, p, out, 1);
}

/* x, a gradient with respect to the normed row of q (qk_norm, before RoPE),
   taken back through the norm: with r = 1 / sqrt(mean(q^2) + eps) and
   gw = x (offset + w), x becomes r gw - q r^3 / D sum(gw q); x q r is added to
   dw (the weights' gradient) where dw is not NULL.  In double. */
static void query_row_norm_back(const attn_spec *spec, const float *w, const float *q, double *x, double *dw)
{
    const int n = spec->head_dim;
    double ss = 0.0, s = 0.0, r;
    int d;
    for (d = 0; d < n; d++) {
        ss += (double)q[d] * (double)q[d];
        s += x[d] * ((double)spec->qk_norm_offset + (double)w[d]) * (double)q[d];
    }
    r = 1.0 / sqrt(ss / n + spec->qk_norm_eps);
    for (d = 0; d < n; d++) {
        const double gw = x[d] * ((double)spec->qk_norm_offset + (double)w[d]);
        if (dw)
            dw[d] += x[d] * (double)q[d] * r;
        x[d] = r * gw - (double)q[d] * r * r * r / n * s;
    }
}

/* The score of query row i against key j (both already located; q the
   row as query_row gives it). */
static double score(const attn_spec *spec, const attn_args *args, const double *q,
                    const float *k, int64_t b, int h, int64_t i, int64_t j, int64_t p, double temp)
{
    double dot = 0.0, s;
    int d;

    for (d = 0; d < spec->head_dim; d++)
        dot += q[d] * (double)k[d];
    s = (double)spec->scale * temp * dot; /* the row's temperature multiplies q */
    if (spec->softcap > 0.0f) {
        const double c = spec->softcap;
        s = c * tanh(s / c);
    }
    if (spec->alibi) {
        const double dist = (double)(p > j ? p - j : j - p);
        s += -attn_reference_alibi_slope(h, spec->heads_q) * dist;
    }
    if (spec->rel_bias != ATTN_REL_NONE)
        s += (double)args->rel_table[attn_reference_rel_bucket(spec, j - p) * spec->heads_q + h];
    if (spec->mask == ATTN_MASK_BIAS) {
        const float *bias = (const float *)args->mask;
        s += (double)bias[mask_offset(args, b, h, i, j)];
    }
    return s;
}

/* ---- the linear family ------------------------------------------------ */

/* phi(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise (NaN stays NaN). */
static double phi(double x)
{
    if (isnan(x))
        return x;
    return x > 0.0 ? x + 1.0 : exp(x);
}

/* Lk_b: seqlens_k[b] with padding, else seq_k. */
static int64_t linear_valid_keys(const attn_spec *spec, const attn_args *args, int64_t b)
{
    return spec->padding ? args->seqlens_k[b] : args->seq_k;
}

/* Whether a row at position p sees key j: j < Lk_b, and with causal j <= p. */
static int linear_key_visible(const attn_spec *spec, int64_t j, int64_t lk_b, int64_t p)
{
    if (!(j < lk_b))
        return 0;
    if (spec->causal && !(j <= p))
        return 0;
    return 1;
}

static int64_t linear_visible_count(const attn_spec *spec, const attn_args *args)
{
    int64_t b, i, j, n = 0;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = linear_valid_keys(spec, args, b);
        for (i = 0; i < args->seq_q; i++) {
            const int64_t p = position(spec, i, lk_b, args->seq_q);
            for (j = 0; j < lk_b; j++)
                n += linear_key_visible(spec, j, lk_b, p);
        }
    }
    return n * spec->heads_q;
}

/*
 * O_i = (phi(q_i)^T S_i) / (phi(q_i) . z_i + eps), with S_i = S0 + sum of
 * phi(k_j) v_j^T and z_i = z0 + sum of phi(k_j) over the keys row i sees
 * (S0, z0: the state before the call, or 0).  Written per row as
 *   num = phi(q)^T S0 + sum_j (phi(q) . phi(k_j)) v_j,
 *   den = phi(q) . z0 + sum_j  phi(q) . phi(k_j) + eps,
 * the same sums regrouped (phi(q)^T (phi(k) v^T) = (phi(q) . phi(k)) v^T),
 * in double.  Then, with spec->state, S0 += sum over every valid key of
 * phi(k_j) v_j^T and z0 += sum phi(k_j), summed in double onto the f32
 * state and rounded once.
 */
static attn_status linear_reference(const attn_spec *spec, const attn_args *args)
{
    const int64_t D = spec->head_dim, Dv = spec->head_dim_v;
    const int group = spec->heads_q / spec->heads_kv;
    const float *q_base = (const float *)args->q, *k_base = (const float *)args->k;
    const float *v_base = (const float *)args->v;
    float *o_base = (float *)args->o;
    double *fq, *fk, *num, *s_new, *z_new;
    int64_t b, i, j, d, e;
    int h, hk;

    fq = (double *)malloc(((size_t)D + 1) * sizeof *fq);
    fk = (double *)malloc(((size_t)D + 1) * sizeof *fk);
    num = (double *)malloc(((size_t)Dv + 1) * sizeof *num);
    s_new = (double *)malloc(((size_t)D * (size_t)Dv + 1) * sizeof *s_new);
    z_new = (double *)malloc(((size_t)D + 1) * sizeof *z_new);
    if (fq == NULL || fk == NULL || num == NULL || s_new == NULL || z_new == NULL) {
        free(fq);
        free(fk);
        free(num);
        free(s_new);
        free(z_new);
        return ATTN_ERR_NOMEM;
    }

    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = linear_valid_keys(spec, args, b);
        for (hk = 0; hk < spec->heads_kv; hk++) {
            /* the state before the call: [B][Hkv][D][Dv] and [B][Hkv][D] */
            const float *s0 = spec->state ? args->state_s + (b * spec->heads_kv + hk) * D * Dv : NULL;
            const float *z0 = spec->state ? args->state_z + (b * spec->heads_kv + hk) * D : NULL;

            for (h = hk * group; h < (hk + 1) * group; h++)
                for (i = 0; i < args->seq_q; i++) {
                    const int64_t p = position(spec, i, lk_b, args->seq_q);
                    const float *q = q_base + b * args->q_stride[0] + i * args->q_stride[1] +
                                     h * args->q_stride[2];
                    float *o = o_base + b * args->o_stride[0] + i * args->o_stride[1] + h * args->o_stride[2];
                    double den = 0.0;

                    for (d = 0; d < D; d++)
                        fq[d] = phi((double)q[d]);
                    for (e = 0; e < Dv; e++)
                        num[e] = 0.0;
                    /* the state: every row sees it */
                    if (spec->state) {
                        for (d = 0; d < D; d++) {
                            den += fq[d] * (double)z0[d];
                            for (e = 0; e < Dv; e++)
                                num[e] += fq[d] * (double)s0[d * Dv + e];
                        }
                    }
                    /* the keys the row sees */
                    for (j = 0; j < lk_b; j++) {
                        const float *k, *v;
                        double w = 0.0;
                        if (!linear_key_visible(spec, j, lk_b, p))
                            continue;
                        k = k_base + b * args->k_stride[0] + j * args->k_stride[1] + hk * args->k_stride[2];
                        v = v_base + b * args->v_stride[0] + j * args->v_stride[1] + hk * args->v_stride[2];
                        for (d = 0; d < D; d++)
                            w += fq[d] * phi((double)k[d]);
                        den += w;
                        for (e = 0; e < Dv; e++)
                            num[e] += w * (double)v[e];
                    }
                    /* a row that sees nothing: 0 / eps = 0 */
                    den += (double)spec->eps;
                    for (e = 0; e < Dv; e++)
                        o[e] = (float)(num[e] / den);
                }

            /* the state after the call: every valid key, whatever the rows saw */
            if (spec->state) {
                float *s = args->state_s + (b * spec->heads_kv + hk) * D * Dv;
                float *z = args->state_z + (b * spec->heads_kv + hk) * D;
                for (d = 0; d < D; d++) {
                    z_new[d] = (double)z[d];
                    for (e = 0; e < Dv; e++)
                        s_new[d * Dv + e] = (double)s[d * Dv + e];
                }
                for (j = 0; j < lk_b; j++) {
                    const float *k = k_base + b * args->k_stride[0] + j * args->k_stride[1] + hk * args->k_stride[2];
                    const float *v = v_base + b * args->v_stride[0] + j * args->v_stride[1] + hk * args->v_stride[2];
                    for (d = 0; d < D; d++)
                        fk[d] = phi((double)k[d]);
                    for (d = 0; d < D; d++) {
                        z_new[d] += fk[d];
                        for (e = 0; e < Dv; e++)
                            s_new[d * Dv + e] += fk[d] * (double)v[e];
                    }
                }
                for (d = 0; d < D; d++) {
                    z[d] = (float)z_new[d];
                    for (e = 0; e < Dv; e++)
                        s[d * Dv + e] = (float)s_new[d * Dv + e];
                }
            }
        }
    }
    free(fq);
    free(fk);
    free(num);
    free(s_new);
    free(z_new);
    return ATTN_OK;
}

int attn_reference_linear_state_bound(const attn_spec *spec, const attn_args *args, const float *state_s0,
                                      const float *state_z0, double *s_abs, double *z_abs)
{
    const int64_t D = spec->head_dim, Dv = spec->head_dim_v;
    const float *k_base = (const float *)args->k, *v_base = (const float *)args->v;
    int64_t b, j, d, e;
    int hk;

    if (spec->family != ATTN_FAMILY_LINEAR || attn_check_args(spec, args) != ATTN_OK)
        return -1;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = linear_valid_keys(spec, args, b);
        for (hk = 0; hk < spec->heads_kv; hk++) {
            const int64_t at = b * spec->heads_kv + hk;
            double *sa = s_abs + at * D * Dv, *za = z_abs + at * D;
            for (d = 0; d < D; d++) {
                za[d] = state_z0 != NULL ? fabs((double)state_z0[at * D + d]) : 0.0;
                for (e = 0; e < Dv; e++)
                    sa[d * Dv + e] = state_s0 != NULL ? fabs((double)state_s0[(at * D + d) * Dv + e]) : 0.0;
            }
            for (j = 0; j < lk_b; j++) {
                const float *k = k_base + b * args->k_stride[0] + j * args->k_stride[1] + hk * args->k_stride[2];
                const float *v = v_base + b * args->v_stride[0] + j * args->v_stride[1] + hk * args->v_stride[2];
                for (d = 0; d < D; d++) {
                    const double f = fabs(phi((double)k[d]));
                    za[d] += f;
                    for (e = 0; e < Dv; e++)
                        sa[d * Dv + e] += f * fabs((double)v[e]);
                }
            }
        }
    }
    return 0;
}

/* x clamped to [lo, hi] */
static int64_t clamp64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

double attn_reference_linear_flops(const attn_spec *spec, const attn_args *args)
{
    const double D = spec->head_dim, Dv = spec->head_dim_v;
    double flops = 0.0;
    int64_t b, i0;

    if (spec->family != ATTN_FAMILY_LINEAR || attn_check_args(spec, args) != ATTN_OK)
        return -1.0;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = linear_valid_keys(spec, args, b), lq = args->seq_q;
        const int64_t t = spec->tile_q > 0 ? spec->tile_q : (lq > 0 ? lq : 1);
        double block = 0.0; /* (row, key) pairs of the diagonal blocks */
        /* fold every valid key into the state, per kv head */
        flops += (double)spec->heads_kv * 2.0 * (double)lk_b * D * Dv;
        /* phi(q)^T S, per query head and row */
        flops += (double)spec->heads_q * (double)lq * 2.0 * D * Dv;
        if (!spec->causal)
            continue;
        /* the diagonal block of each chunk of T rows: keys from its first
           row's position to its last row's, scored in full */
        for (i0 = 0; i0 < lq; i0 += t) {
            const int64_t i1 = i0 + t < lq ? i0 + t : lq;
            const int64_t k0 = clamp64(position(spec, i0, lk_b, lq), 0, lk_b);
            const int64_t k1 = clamp64(position(spec, i1 - 1, lk_b, lq) + 1, 0, lk_b);
            if (k1 > k0)
                block += (double)(i1 - i0) * (double)(k1 - k0);
        }
        flops += (double)spec->heads_q * block * 2.0 * (D + Dv);
    }
    return flops;
}

int64_t attn_reference_visible_count(const attn_spec *spec, const attn_args *args)
{
    int64_t b, i, j, n = 0;
    int h;

    if (attn_check_args(spec, args) != ATTN_OK)
        return -1;
    if (spec->family == ATTN_FAMILY_LINEAR)
        return linear_visible_count(spec, args);
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
        for (h = 0; h < spec->heads_q; h++)
            for (i = 0; i < args->seq_q; i++)
                for (j = 0; j < lk_b; j++)
                    n += key_visible(spec, args, b, h, i, j, lk_b, position(spec, i, lk_b, args->seq_q));
    }
    return n;
}

int64_t attn_reference_keys_read(const attn_spec *spec, const attn_args *args)
{
    const int group = spec->heads_q / spec->heads_kv;
    int64_t b, i, j, n = 0;
    int hk, g;

    if (attn_check_args(spec, args) != ATTN_OK)
        return -1;
    if (spec->family == ATTN_FAMILY_LINEAR) { /* every valid key goes into the state */
        for (b = 0; b < args->batch; b++)
            n += linear_valid_keys(spec, args, b) * spec->heads_kv;
        return n;
    }
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
        for (hk = 0; hk < spec->heads_kv; hk++)
            for (j = 0; j < lk_b; j++) {
                int seen = 0;
                /* the last rows see the most keys: look at them first */
                for (g = 0; g < group && !seen; g++)
                    for (i = args->seq_q - 1; i >= 0 && !seen; i--)
                        seen = key_visible(spec, args, b, hk * group + g, i, j, lk_b,
                                           position(spec, i, lk_b, args->seq_q));
                n += seen;
            }
    }
    return n;
}

/* matmul = "int8" (spec->matmul ATTN_DTYPE_Q8_0): the query row the kernel
   multiplies, quantized to q8_0 as given (before any scale) and dequantized,
   into buf (head_dim <= 512); else the row itself. */
static const float *int8_query(const attn_spec *spec, const float *q, float *buf)
{
    attn_block_q8_0 blk[512 / ATTN_QK];
    if (spec->matmul != ATTN_DTYPE_Q8_0)
        return q;
    attn_quantize_q8_0(q, blk, spec->head_dim);
    attn_dequantize_q8_0(blk, buf, spec->head_dim);
    return buf;
}

/* Row i of head h of batch b of the weights output: P_ij = exp(s_ij - LSE_i) for
   visible keys (after dropout where the spec has it), 0 for every other j (and
   for the whole row of a query that sees no key: seen = 0). */
static void weights_row(const attn_spec *spec, const attn_args *args, int64_t b, int h, int64_t i,
                        const double *s, const unsigned char *vis, int seen, double lse)
{
    float *pw = args->weights + b * args->weights_stride[0] + h * args->weights_stride[1] +
                i * args->weights_stride[2];
    int64_t j;
    for (j = 0; j < args->seq_k; j++)
        pw[j * args->weights_stride[3]] =
            vis[j] && seen ? (float)(spec->dropout ? dropout_weight(spec, args, b, h, i, j, exp(s[j] - lse))
                                                   : exp(s[j] - lse))
                           : 0.0f;
}

attn_status attn_reference(const attn_spec *spec, const attn_args *args)
{
    float qq[512];
    /* the args are checked as the kernel's own (its storage sizes), so both
       accept the same args; the caller's f32 copies exist with the same
       element strides, and only offsets of their elements are formed */
    attn_status st = attn_check_args(spec, args);
    attn_args shared; /* shared_kv: the args with V pointed at K's rows */
    const float *q_base, *k_base, *v_base;
    float *o_base;
    double *s, *acc, *qd;
    unsigned char *vis;
    int64_t b, i, j;
    int h, d;

    if (st != ATTN_OK)
        return st;
    if (spec->family == ATTN_FAMILY_LINEAR)
        return linear_reference(spec, args);
    if (spec->shared_kv) { /* V: the first Dv values of each K row */
        shared = *args;
        shared.v = args->k;
        memcpy(shared.v_stride, args->k_stride, sizeof shared.v_stride);
        args = &shared;
    }
    /* the tensors as the f32 arrays they are (attn_reference.h) */
    q_base = (const float *)args->q;
    k_base = (const float *)args->k;
    v_base = (const float *)args->v;
    o_base = (float *)args->o;
    if ((uint64_t)args->seq_k >= SIZE_MAX / sizeof *s)
        return ATTN_ERR_NOMEM; /* scratch per key would not fit in memory */
    /* +1: never ask malloc for 0 bytes */
    s = (double *)malloc(((size_t)args->seq_k + 1) * sizeof *s);
    vis = (unsigned char *)malloc((size_t)args->seq_k + 1);
    acc = (double *)malloc(((size_t)spec->head_dim_v + 1) * sizeof *acc);
    qd = (double *)malloc(((size_t)spec->head_dim + 1) * sizeof *qd);
    if (s == NULL || vis == NULL || acc == NULL || qd == NULL) {
        free(s);
        free(vis);
        free(acc);
        free(qd);
        return ATTN_ERR_NOMEM;
    }

    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
        for (h = 0; h < spec->heads_q; h++) {
            const int hk = h / (spec->heads_q / spec->heads_kv); /* GQA */
            for (i = 0; i < args->seq_q; i++) {
                const int64_t p = position(spec, i, lk_b, args->seq_q);
                const float *q = int8_query(spec, q_base + b * args->q_stride[0] + i * args->q_stride[1] +
                                                          h * args->q_stride[2], qq);
                float *o = o_base + b * args->o_stride[0] + i * args->o_stride[1] +
                           h * args->o_stride[2];
                const double temp = temperature(spec, p);
                /* the row's sink logit (sinks: no value row, never scaled or masked) */
                const double sink = spec->sinks ? (double)args->sinks[h] : -INFINITY;
                double m = -INFINITY, sum = 0.0, lse, ent = 0.0;
                int any_nan = 0;

                query_row(spec, args, q, p, qd);
                /* scores of the visible keys, and their max */
                for (j = 0; j < args->seq_k; j++) {
                    vis[j] = (unsigned char)key_visible(spec, args, b, h, i, j, lk_b, p);
                    if (!vis[j])
                        continue;
                    s[j] = score(spec, args, qd, k_base + kv_offset(spec, args, args->k_stride, b, j, hk),
                                 b, h, i, j, p, temp);
                    if (isnan(s[j]))
                        any_nan = 1;
                    else if (s[j] > m)
                        m = s[j];
                }

                if (any_nan) {
                    /* a NaN score must not vanish behind the max */
                    for (d = 0; d < spec->head_dim_v; d++)
                        o[d] = NAN;
                    lse = ent = NAN;
                } else if (m == -INFINITY) {
                    /* no visible key (or all scores -inf): O = 0, LSE = -inf,
                       or the sink's logit */
                    for (d = 0; d < spec->head_dim_v; d++)
                        o[d] = 0.0f;
                    lse = sink;
                } else {
                    for (d = 0; d < spec->head_dim_v; d++)
                        acc[d] = 0.0;
                    if (sink > m) /* the sink joins the max and the sum (no value row) */
                        m = sink;
                    if (spec->sinks)
                        sum = exp(sink - m);
                    for (j = 0; j < args->seq_k; j++) {
                        const float *v;
                        double w;
                        if (!vis[j])
                            continue;
                        v = v_base + kv_offset(spec, args, args->v_stride, b, j, hk);
                        w = exp(s[j] - m);
                        sum += w;
                        for (d = 0; d < spec->head_dim_v; d++)
                            acc[d] += w * (double)v[d];
                    }
                    for (d = 0; d < spec->head_dim_v; d++)
                        o[d] = (float)(acc[d] / sum);
                    lse = m + log(sum);
                    /* the entropy -sum_j P_j ln P_j, P_j = exp(s_j - LSE), before dropout */
                    for (j = 0; j < args->seq_k; j++)
                        if (vis[j])
                            ent -= exp(s[j] - lse) * (s[j] - lse);
                    if (spec->sinks) /* the sink is one more outcome of the row's distribution */
                        ent -= exp(sink - lse) * (sink - lse);
                    if (spec->dropout) {
                        /* dropout, literally: the softmax's weights, each
                           kept (scaled by 1 / (1 - p)) or dropped by its
                           Philox draw, times V */
                        for (d = 0; d < spec->head_dim_v; d++)
                            acc[d] = 0.0;
                        for (j = 0; j < args->seq_k; j++) {
                            const float *v;
                            double w;
                            if (!vis[j])
                                continue;
                            w = dropout_weight(spec, args, b, h, i, j, exp(s[j] - m) / sum);
                            v = v_base + kv_offset(spec, args, args->v_stride, b, j, hk);
                            for (d = 0; d < spec->head_dim_v; d++)
                                acc[d] += w * (double)v[d];
                        }
                        for (d = 0; d < spec->head_dim_v; d++)
                            o[d] = (float)acc[d];
                    }
                }
                if (args->lse != NULL)
                    args->lse[(b * spec->heads_q + h) * args->seq_q + i] = (float)lse;
                if (spec->entropy && args->entropy != NULL)
                    args->entropy[(b * spec->heads_q + h) * args->seq_q + i] = (float)ent;
                if (spec->weights && args->weights != NULL)
                    weights_row(spec, args, b, h, i, s, vis, m != -INFINITY, lse);
            }
        }
    }
    free(s);
    free(vis);
    free(acc);
    free(qd);
    return ATTN_OK;
}

/* ---- the additive and luong families ------------------------------------ */

/*
 * Written from the semantics in attn_runtime.h (attn_classic_args) and
 * docs/config.md, in double on the stored values: each tensor is read in
 * its storage type and widened (exactly), so the reference needs no f32
 * copies.  The projections that do not depend on the pair (i, j) are
 * computed once per row and once per key, which is the same sum in double:
 *   additive: e_ij = sum_a v_a tanh(q_ia + k_ja), q_ia = (W_s s_i)_a + b_a,
 *             k_ja = (W_h h_j)_a, or U_ja when U is given;
 *   dot:      e_ij = sum_d s_id h_jd;
 *   general:  e_ij = sum_e h_je (W s_i)_e;
 *   concat:   e_ij = sum_a v_a tanh(q_ia + k_ja), q_ia = (W[:, Dh:] s_i)_a + b_a,
 *             k_ja = (W[:, :Dh] h_j)_a.
 * Then a_ij = exp(e_ij - max) / sum over the visible keys, c_i = sum_j a_ij h_j.
 */

/* Element i of an array of storage type dtype, widened. */
static double classic_load(attn_dtype dtype, const void *base, int64_t i)
{
    switch (dtype) {
    case ATTN_DTYPE_BF16: return (double)attn_bf16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_F16: return (double)attn_f16_to_f32(((const uint16_t *)base)[i]);
    default: return (double)((const float *)base)[i];
    }
}

/* Element i of an array of storage type dtype set to x, narrowed (to nearest even). */
static void classic_store(attn_dtype dtype, void *base, int64_t i, double x)
{
    switch (dtype) {
    case ATTN_DTYPE_BF16: ((uint16_t *)base)[i] = attn_f32_to_bf16((float)x); break;
    case ATTN_DTYPE_F16: ((uint16_t *)base)[i] = attn_f32_to_f16((float)x); break;
    default: ((float *)base)[i] = (float)x; break;
    }
}

/* n elements of an array of storage type dtype from element i0 on (stride
   1), widened into out. */
static void classic_widen(attn_dtype dtype, const void *base, int64_t i0, int64_t n, double *out)
{
    int64_t d;
    for (d = 0; d < n; d++)
        out[d] = classic_load(dtype, base, i0 + d);
}

/* sum_d a_d x_d, and sum_d |a_d x_d| into *abs_sum: the terms in four
   interleaved partial sums (the same sum in double, without one long chain
   of dependent additions). */
static double classic_dot(const double *a, const double *x, int64_t n, double *abs_sum)
{
    double s[4] = { 0.0, 0.0, 0.0, 0.0 }, t[4] = { 0.0, 0.0, 0.0, 0.0 };
    int64_t d;
    for (d = 0; d + 4 <= n; d += 4) {
        int u;
        for (u = 0; u < 4; u++) {
            const double y = a[d + u] * x[d + u];
            s[u] += y;
            t[u] += fabs(y);
        }
    }
    for (; d < n; d++) {
        const double y = a[d] * x[d];
        s[0] += y;
        t[0] += fabs(y);
    }
    *abs_sum = (t[0] + t[1]) + (t[2] + t[3]);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static int classic_family(const attn_spec *spec)
{
    return spec != NULL && (spec->family == ATTN_FAMILY_ADDITIVE || spec->family == ATTN_FAMILY_LUONG);
}

/* The score as the family and spec->score say: additive for the additive family. */
static attn_score classic_score(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_ADDITIVE ? ATTN_SCORE_ADDITIVE : spec->score;
}

int attn_reference_classic_key_visible(const attn_spec *spec, const attn_classic_args *args, int64_t b, int64_t i,
                                       int64_t j)
{
    const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
    if (!(j < lk_b))
        return 0;
    if (spec->mask == ATTN_MASK_BOOL &&
        args->mask[b * args->mask_stride[0] + i * args->mask_stride[1] + j * args->mask_stride[2]] == 0)
        return 0;
    return 1;
}

/* One pass of classic_run: the spec's constants, the widened parameters and
   the scratch of a row (the +1 of every size: never malloc 0 bytes). */
typedef struct {
    const attn_spec *spec;
    const attn_classic_args *args;
    attn_score sc;
    int tanh_score, use_u, has_b, key_proj;
    /* the width of the per-row and per-key projections: Da, or Dh for general */
    int64_t P, Ds, Dh, Lq, Lk;
    attn_dtype tq, tkv;
    /* the per-key projection's matrix [P][Dh] (none with U or for general)
       and the per-row one's [P][Ds], widened; a row of S or H, widened */
    double *wk, *wq, *xrow;
    /* q_i and sum|terms| (qa), k_j and ka, the scores e and ea, C's row
       (acc) and sum_j w_j |h_j| (hs) */
    double *q, *qa, *k, *ka, *e, *ea, *acc, *hs;
    unsigned char *vis;
    /* the row's max score, softmax sum, largest sum|terms|, whether a score is NaN */
    double m, sum, scale;
    int any_nan;
} classic_work;

static void classic_work_free(classic_work *w)
{
    free(w->q);
    free(w->qa);
    free(w->k);
    free(w->ka);
    free(w->e);
    free(w->ea);
    free(w->acc);
    free(w->hs);
    free(w->vis);
    free(w->wk);
    free(w->wq);
    free(w->xrow);
}

/* 0, or -1 when out of memory (classic_work_free frees what was made) */
static int classic_work_alloc(classic_work *w)
{
    const size_t P = (size_t)w->P, Lk = (size_t)w->Lk, Dh = (size_t)w->Dh, Ds = (size_t)w->Ds;
    const size_t Dx = Ds > Dh ? Ds : Dh;
    w->q = (double *)malloc((P + 1) * sizeof *w->q);
    w->qa = (double *)malloc((P + 1) * sizeof *w->qa);
    w->k = (double *)malloc((Lk * P + 1) * sizeof *w->k);
    w->ka = (double *)malloc((Lk * P + 1) * sizeof *w->ka);
    w->e = (double *)malloc((Lk + 1) * sizeof *w->e);
    w->ea = (double *)malloc((Lk + 1) * sizeof *w->ea);
    w->acc = (double *)malloc((Dh + 1) * sizeof *w->acc);
    w->hs = (double *)malloc((Dh + 1) * sizeof *w->hs);
    w->vis = (unsigned char *)malloc(Lk + 1);
    w->wk = (double *)malloc(((w->key_proj ? P * Dh : 0) + 1) * sizeof *w->wk);
    w->wq = (double *)malloc((P * Ds + 1) * sizeof *w->wq);
    w->xrow = (double *)malloc((Dx + 1) * sizeof *w->xrow);
    return w->q == NULL || w->qa == NULL || w->k == NULL || w->ka == NULL || w->e == NULL || w->ea == NULL ||
                   w->acc == NULL || w->hs == NULL || w->vis == NULL || w->wk == NULL || w->wq == NULL ||
                   w->xrow == NULL
               ? -1
               : 0;
}

/* additive: W_h [Da][Dh], W_s [Da][Ds]; concat: W [Da][Dh + Ds], its
   first Dh columns for keys, its last Ds for rows; general: W [Dh][Ds] */
static void classic_widen_params(classic_work *w)
{
    const attn_classic_args *args = w->args;
    const int additive = w->sc == ATTN_SCORE_ADDITIVE;
    const int64_t Ds = w->Ds, Dh = w->Dh;
    int64_t a;
    for (a = 0; a < w->P; a++) {
        if (w->key_proj)
            classic_widen(w->tkv, additive ? args->w_h : args->w, additive ? a * Dh : a * (Dh + Ds), Dh,
                          w->wk + a * Dh);
        classic_widen(w->tkv, additive ? args->w_s : args->w,
                      additive ? a * Ds : w->sc == ATTN_SCORE_CONCAT ? a * (Dh + Ds) + Dh : a * Ds, Ds,
                      w->wq + a * Ds);
    }
}

/* the per-key projections k_j of batch b (and sum|terms| of each, ka_j) */
static void classic_key_projections(classic_work *w, int64_t b)
{
    const attn_classic_args *args = w->args;
    const int64_t P = w->P, lk_b = w->spec->padding ? args->seqlens_k[b] : w->Lk;
    int64_t j, a;
    for (j = 0; j < lk_b && P > 0 && w->sc != ATTN_SCORE_GENERAL; j++) {
        if (w->key_proj)
            classic_widen(w->tkv, args->h, b * args->h_stride[0] + j * args->h_stride[1], w->Dh, w->xrow);
        for (a = 0; a < P; a++) {
            if (w->use_u) {
                w->k[j * P + a] = classic_load(w->tkv, args->u, b * args->u_stride[0] + j * args->u_stride[1] + a);
                w->ka[j * P + a] = fabs(w->k[j * P + a]);
            } else {
                w->k[j * P + a] = classic_dot(w->wk + a * w->Dh, w->xrow, w->Dh, &w->ka[j * P + a]);
            }
        }
    }
}

/* the per-row projection q_i (with the bias folded in), and sum|terms|; s0
   is the row's first element in S */
static void classic_row_projection(classic_work *w, int64_t s0)
{
    int64_t a;
    if (w->P > 0)
        classic_widen(w->tq, w->args->s, s0, w->Ds, w->xrow);
    for (a = 0; a < w->P; a++) {
        double xa;
        double x = classic_dot(w->wq + a * w->Ds, w->xrow, w->Ds, &xa);
        if (w->has_b) {
            const double bb = classic_load(w->tkv, w->args->b_attn, a);
            x += bb;
            xa += fabs(bb);
        }
        w->q[a] = x;
        w->qa[a] = xa;
    }
}

/* the score of visible key j of row i (s0 in S, h0 in H) and sum|terms| */
static double classic_score_of(const classic_work *w, int64_t j, int64_t s0, int64_t h0, double *xa)
{
    const attn_classic_args *args = w->args;
    double x = 0.0;
    int64_t a, d;
    *xa = 0.0;
    if (w->tanh_score) {
        for (a = 0; a < w->P; a++) {
            const double v = classic_load(w->tkv, args->v_attn, a);
            x += v * tanh(w->q[a] + w->k[j * w->P + a]);
            /* the term, the tanh's rounding and its argument's sum */
            *xa += fabs(v) * (1.0 + w->qa[a] + w->ka[j * w->P + a]);
        }
    } else if (w->sc == ATTN_SCORE_DOT) {
        for (d = 0; d < w->Dh; d++) {
            const double t = classic_load(w->tq, args->s, s0 + d) * classic_load(w->tkv, args->h, h0 + d);
            x += t;
            *xa += fabs(t);
        }
    } else { /* general: h_j . (W s_i), |h_j| . (|W| |s_i|) */
        for (d = 0; d < w->Dh; d++) {
            const double h = classic_load(w->tkv, args->h, h0 + d);
            x += h * w->q[d];
            *xa += fabs(h) * w->qa[d]; /* qa[d] >= |(W s_i)_d| */
        }
    }
    return x;
}

/* the scores of row i's visible keys, sum|terms| of each, and the max */
static void classic_row_scores(classic_work *w, int64_t b, int64_t i, int64_t s0)
{
    const attn_classic_args *args = w->args;
    int64_t j;
    w->m = -INFINITY;
    w->scale = 0.0;
    w->any_nan = 0;
    for (j = 0; j < w->Lk; j++) {
        double x, xa;
        w->vis[j] = (unsigned char)attn_reference_classic_key_visible(w->spec, args, b, i, j);
        if (!w->vis[j])
            continue;
        x = classic_score_of(w, j, s0, b * args->h_stride[0] + j * args->h_stride[1], &xa);
        w->e[j] = x;
        w->ea[j] = xa;
        if (isnan(x))
            w->any_nan = 1;
        else if (x > w->m)
            w->m = x;
        if (xa > w->scale)
            w->scale = xa;
    }
}

/* the softmax's weights and C's row (acc), with sum_j w_j |h_j| (hs) */
static void classic_row_context(classic_work *w, int64_t b)
{
    const attn_classic_args *args = w->args;
    int64_t j, d;
    w->sum = 0.0;
    for (d = 0; d < w->Dh; d++) {
        w->acc[d] = 0.0;
        w->hs[d] = 0.0;
    }
    if (w->any_nan) {
        /* a NaN score must not vanish behind the max: the row is NaN */
        for (d = 0; d < w->Dh; d++)
            w->acc[d] = NAN;
        return;
    }
    if (w->m == -INFINITY)
        return; /* no visible key (or every score -inf): C = 0 and A = 0 */
    for (j = 0; j < w->Lk; j++)
        if (w->vis[j])
            w->sum += exp(w->e[j] - w->m);
    for (j = 0; j < w->Lk; j++) {
        const int64_t h0 = b * args->h_stride[0] + j * args->h_stride[1];
        double wt;
        if (!w->vis[j])
            continue;
        wt = exp(w->e[j] - w->m) / w->sum;
        for (d = 0; d < w->Dh; d++) {
            const double h = classic_load(w->tkv, args->h, h0 + d);
            w->acc[d] += wt * h;
            w->hs[d] += wt * fabs(h);
        }
    }
}

/* row i's C (into c_out unless NULL), bounds (c_tol, w_rel unless NULL)
   and weights (args->weights when given) */
static void classic_row_outputs(const classic_work *w, int64_t b, int64_t i, attn_dtype c_dtype, void *c_out,
                                double *c_tol, double *w_rel)
{
    const attn_classic_args *args = w->args;
    /* the error of any score of the row */
    const double delta = ATTN_REF_TOL_SCORE * w->scale;
    int64_t j, d;
    if (c_out != NULL)
        for (d = 0; d < w->Dh; d++)
            classic_store(c_dtype, c_out, b * args->c_stride[0] + i * args->c_stride[1] + d, w->acc[d]);
    if (c_tol != NULL) {
        for (d = 0; d < w->Dh; d++)
            c_tol[(b * w->Lq + i) * w->Dh + d] =
                ATTN_REF_TOL_ABS + ATTN_REF_TOL_REL(w->spec->dtype_o) * fabs(w->acc[d]) + 2.0 * delta * w->hs[d];
        w_rel[b * w->Lq + i] = 2.0 * delta;
    }
    if (args->weights != NULL) {
        /* a_ij = exp(e_ij - max) / sum for visible keys (NaN in a NaN
           row), 0 for every other j and for a row that sees nothing */
        float *pw = args->weights + b * args->weights_stride[0] + i * args->weights_stride[1];
        for (j = 0; j < w->Lk; j++)
            pw[j * args->weights_stride[2]] = !w->vis[j]            ? 0.0f
                                              : w->any_nan          ? NAN
                                              : w->m == -INFINITY   ? 0.0f
                                                                    : (float)(exp(w->e[j] - w->m) / w->sum);
    }
}

/*
 * One pass of the reference: C into c_out (in c_dtype, args->c_stride)
 * unless NULL, A into args->weights when given, and, when c_tol is not
 * NULL, the bounds of attn_reference_classic_bounds.  The parameters the
 * projections read (W_h or W's h columns, W_s or W's s columns, general's
 * W) are widened once per call, each S and H row once where it is used.
 */
static attn_status classic_run(const attn_spec *spec, const attn_classic_args *args, attn_dtype c_dtype, void *c_out,
                               double *c_tol, double *w_rel)
{
    classic_work w;
    attn_status st = attn_check_classic_args(spec, args);
    int64_t b, i;

    if (st != ATTN_OK)
        return st;
    memset(&w, 0, sizeof w);
    w.spec = spec;
    w.args = args;
    w.sc = classic_score(spec);
    w.tanh_score = w.sc == ATTN_SCORE_ADDITIVE || w.sc == ATTN_SCORE_CONCAT;
    w.Ds = spec->query_dim;
    w.Dh = spec->key_dim;
    w.Lq = args->seq_q;
    w.Lk = args->seq_k;
    w.P = w.tanh_score ? spec->attn_dim : w.sc == ATTN_SCORE_GENERAL ? w.Dh : 0;
    w.tq = spec->dtype_q;
    w.tkv = spec->dtype_kv;
    w.use_u = w.sc == ATTN_SCORE_ADDITIVE && args->u != NULL;
    w.has_b = w.tanh_score && spec->bias;
    w.key_proj = w.P > 0 && w.sc != ATTN_SCORE_GENERAL && !w.use_u;
    if (!classic_family(spec) || (w.sc != ATTN_SCORE_ADDITIVE && w.sc != ATTN_SCORE_DOT &&
                                  w.sc != ATTN_SCORE_GENERAL && w.sc != ATTN_SCORE_CONCAT))
        return ATTN_ERR_NULL_ARG; /* not a classic spec: nothing to compute with */
    if (args->batch == 0 || w.Lq == 0)
        return ATTN_OK; /* no row to compute (Lk may be anything then) */
    if ((uint64_t)w.Lk >= SIZE_MAX / sizeof(double) / (w.P + 1) || (uint64_t)w.Lk >= SIZE_MAX / sizeof(double))
        return ATTN_ERR_NOMEM;
    if (classic_work_alloc(&w) != 0) {
        classic_work_free(&w);
        return ATTN_ERR_NOMEM;
    }
    classic_widen_params(&w);
    for (b = 0; b < args->batch; b++) {
        classic_key_projections(&w, b);
        for (i = 0; i < w.Lq; i++) {
            const int64_t s0 = b * args->s_stride[0] + i * args->s_stride[1];
            classic_row_projection(&w, s0);
            classic_row_scores(&w, b, i, s0);
            classic_row_context(&w, b);
            classic_row_outputs(&w, b, i, c_dtype, c_out, c_tol, w_rel);
        }
    }
    classic_work_free(&w);
    return ATTN_OK;
}

attn_status attn_reference_classic(const attn_spec *spec, const attn_classic_args *args)
{
    return classic_run(spec, args, spec != NULL ? spec->dtype_o : ATTN_DTYPE_F32, args != NULL ? args->c : NULL,
                       NULL, NULL);
}

attn_status attn_reference_classic_bounds(const attn_spec *spec, const attn_classic_args *args, double *c_tol,
                                          double *w_rel)
{
    if (args == NULL || c_tol == NULL || w_rel == NULL)
        return ATTN_ERR_NULL_ARG;
    return classic_run(spec, args, ATTN_DTYPE_F32, args->c, c_tol, w_rel);
}

double attn_reference_classic_flops(const attn_spec *spec, const attn_classic_args *args)
{
    const attn_score sc = spec != NULL ? classic_score(spec) : ATTN_SCORE_NONE;
    const double Ds = spec != NULL ? spec->query_dim : 0, Dh = spec != NULL ? spec->key_dim : 0;
    const double Da = spec != NULL ? spec->attn_dim : 0;
    double flops = 0.0;
    int64_t b, i, j;

    if (!classic_family(spec) || attn_check_classic_args(spec, args) != ATTN_OK)
        return -1.0;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk_b = spec->padding ? args->seqlens_k[b] : args->seq_k;
        const double lq = (double)args->seq_q;
        double pairs = 0.0;
        for (i = 0; i < args->seq_q; i++)
            for (j = 0; j < lk_b; j++)
                pairs += attn_reference_classic_key_visible(spec, args, b, i, j);
        switch (sc) {
        case ATTN_SCORE_ADDITIVE:
        case ATTN_SCORE_CONCAT:
            /* W_s s (concat: W's s half) per row, plus the bias */
            flops += lq * (2.0 * Ds * Da + (spec->bias ? Da : 0.0));
            /* W_h h (concat: W's h half) per valid key, unless U is given */
            if (sc == ATTN_SCORE_CONCAT || args->u == NULL)
                flops += (double)lk_b * 2.0 * Dh * Da;
            /* per visible pair and a: the add inside tanh, and v_a * tanh summed */
            flops += pairs * 3.0 * Da;
            break;
        case ATTN_SCORE_GENERAL:
            flops += lq * 2.0 * Ds * Dh; /* W s per row */
            flops += pairs * 2.0 * Dh;   /* h_j . (W s_i) */
            break;
        default:                         /* dot */
            flops += pairs * 2.0 * Ds;
            break;
        }
        flops += pairs * 2.0 * Dh; /* the context: sum_j a_ij h_j */
    }
    return flops;
}

/* ---- the backward pass of sdpa -------------------------------------------- */

/* x rounded to f32 when f32 is set (the plain float32 implementation), else x. */
static double bwd_round(double x, int f32)
{
    return f32 ? (double)(float)x : x;
}

/* The gradients of one query row i of head h in batch b (attn_reference_backward); with drel
   not NULL, each visible key's dS (the gradient of the score where the relative position bias
   goes in, after the softcap) added to drel[bucket(j - p)][h]. */
static void bwd_row(const attn_spec *spec, const attn_bwd_args *args, int64_t b, int h, int64_t i, double *dk,
                    double *dv, double *drel, double *dw, int f32)
{
    const attn_args *fa = &args->fwd;
    const int hk = h / (spec->heads_q / spec->heads_kv);
    const int64_t lk_b = spec->padding ? fa->seqlens_k[b] : fa->seq_k;
    const int64_t p = position(spec, i, lk_b, fa->seq_q);
    const double temp = temperature(spec, p);
    const double lse = (double)fa->lse[(b * spec->heads_q + h) * fa->seq_q + i];
    const float *q = (const float *)fa->q + b * fa->q_stride[0] + i * fa->q_stride[1] + h * fa->q_stride[2];
    const float *o = (const float *)fa->o + b * fa->o_stride[0] + i * fa->o_stride[1] + h * fa->o_stride[2];
    const float *g = (const float *)args->d_o + b * args->do_stride[0] + i * args->do_stride[1] + h * args->do_stride[2];
    float *dq = (float *)args->dq + b * args->dq_stride[0] + i * args->dq_stride[1] + h * args->dq_stride[2];
    double drow = 0.0, acc_q[512], qd[512];
    int64_t j;
    int d;

    query_row(spec, fa, q, p, qd); /* the row the scores use: rotated with rope */
    for (d = 0; d < spec->head_dim; d++)
        acc_q[d] = 0.0;
    /* D_i = dO_i . O_i */
    for (d = 0; d < spec->head_dim_v; d++)
        drow = bwd_round(drow + bwd_round((double)g[d] * (double)o[d], f32), f32);
    for (j = 0; j < fa->seq_k && lse != -INFINITY; j++) {
        const float *k = (const float *)fa->k + b * fa->k_stride[0] + j * fa->k_stride[1] + hk * fa->k_stride[2];
        const float *v = (const float *)fa->v + b * fa->v_stride[0] + j * fa->v_stride[1] + hk * fa->v_stride[2];
        double s, pw, z, dpd = 0.0, ds;
        if (!key_visible(spec, fa, b, h, i, j, lk_b, p))
            continue;
        s = bwd_round(score(spec, fa, qd, k, b, h, i, j, p, temp), f32);
        pw = bwd_round(exp(bwd_round(s - lse, f32)), f32); /* P_ij = exp(s_ij - LSE_i) */
        z = spec->dropout ? dropout_weight(spec, fa, b, h, i, j, 1.0) : 1.0; /* Z_ij / (1 - p), or 1 */
        for (d = 0; d < spec->head_dim_v; d++) {
            dpd = bwd_round(dpd + bwd_round((double)g[d] * (double)v[d], f32), f32); /* dPd_ij = dO_i . V_j */
            dv[j * spec->head_dim_v + d] =
                bwd_round(dv[j * spec->head_dim_v + d] + bwd_round(bwd_round(pw * z, f32) * (double)g[d], f32), f32);
        }
        ds = bwd_round(pw * bwd_round(bwd_round(dpd * z, f32) - drow, f32), f32); /* dS = P (dP - D_i) */
        if (drel != NULL) { /* the bias is added after the softcap: dS itself */
            double *t = &drel[attn_reference_rel_bucket(spec, j - p) * spec->heads_q + h];
            *t = bwd_round(*t + ds, f32);
        }
        if (spec->softcap > 0.0f) { /* the raw score's gradient: dS (1 - tanh^2(t)), t = scale q.k / c */
            double dot = 0.0, t;
            for (d = 0; d < spec->head_dim; d++)
                dot += qd[d] * (double)k[d];
            t = bwd_round(tanh((double)spec->scale * temp * dot / (double)spec->softcap), f32);
            ds = bwd_round(ds * bwd_round(1.0 - t * t, f32), f32);
        }
        ds = bwd_round(ds * bwd_round((double)spec->scale * temp, f32), f32);
        for (d = 0; d < spec->head_dim; d++) {
            acc_q[d] = bwd_round(acc_q[d] + bwd_round(ds * (double)k[d], f32), f32); /* dQ_i += scale dS K_j */
            dk[j * spec->head_dim + d] =
                bwd_round(dk[j * spec->head_dim + d] + bwd_round(ds * qd[d], f32), f32); /* dK_j += scale dS Q_i */
        }
    }
    attn_reference_rope(spec, fa, p, acc_q, -1); /* with rope: dQ = R^T (the rotated row's gradient) */
    if (spec->qk_norm) /* and back through the norm (dw: the weights' gradient) */
        query_row_norm_back(spec, fa->q_norm_w, q, acc_q, dw);
    for (d = 0; d < spec->head_dim; d++)
        dq[d * 1] = (float)acc_q[d];
}

/* The term of query row i of head h in batch b in the sink's gradient: -P_sink D_i, P_sink =
   exp(sinks[h] - LSE_i), D_i = dO_i . O_i (a row that sees no key has O = 0, so D_i = 0). */
static double bwd_sink_term(const attn_spec *spec, const attn_bwd_args *args, int64_t b, int h, int64_t i, int f32)
{
    const attn_args *fa = &args->fwd;
    const double lse = (double)fa->lse[(b * spec->heads_q + h) * fa->seq_q + i];
    const float *o = (const float *)fa->o + b * fa->o_stride[0] + i * fa->o_stride[1] + h * fa->o_stride[2];
    const float *g = (const float *)args->d_o + b * args->do_stride[0] + i * args->do_stride[1] + h * args->do_stride[2];
    double drow = 0.0;
    int d;
    if (lse == -INFINITY)
        return 0.0;
    for (d = 0; d < spec->head_dim_v; d++)
        drow = bwd_round(drow + bwd_round((double)g[d] * (double)o[d], f32), f32);
    return -bwd_round(bwd_round(exp(bwd_round((double)fa->sinks[h] - lse, f32)), f32) * drow, f32);
}

/* dsinks[h] (sinks, args->dsinks not NULL): the rows' terms summed over b, then i, in order. */
static void bwd_sinks(const attn_spec *spec, const attn_bwd_args *args, int f32)
{
    int64_t b, i;
    int h;
    if (!spec->sinks || args->dsinks == NULL)
        return;
    for (h = 0; h < spec->heads_q; h++) {
        double sum = 0.0;
        for (b = 0; b < args->fwd.batch; b++)
            for (i = 0; i < args->fwd.seq_q; i++)
                sum = bwd_round(sum + bwd_sink_term(spec, args, b, h, i, f32), f32);
        args->dsinks[h] = (float)sum;
    }
}

attn_status attn_reference_backward(const attn_spec *spec, const attn_bwd_args *args, int f32)
{
    const attn_args *fa;
    double *dk, *dv, *drel = NULL, dw[512]; /* dw: q_norm_w's gradient (qk_norm) */
    int64_t b, i, j;
    int h, hk, d;
    attn_status st = attn_check_bwd_args(spec, args);
    const size_t nrel = spec != NULL ? (size_t)attn_rel_rows(spec) * (size_t)spec->heads_q : 0;

    if (st != ATTN_OK)
        return st;
    if (spec->head_dim > 512)
        return ATTN_ERR_TOO_LARGE;
    fa = &args->fwd;
    for (d = 0; d < 512; d++)
        dw[d] = 0.0;
    dk = (double *)malloc(((size_t)fa->seq_k * (size_t)spec->head_dim + 1) * sizeof *dk);
    dv = (double *)malloc(((size_t)fa->seq_k * (size_t)spec->head_dim_v + 1) * sizeof *dv);
    if (nrel > 0 && args->drel_table != NULL) /* the table's gradient, summed over b, h, i and j in order */
        drel = (double *)calloc(nrel, sizeof *drel);
    if (dk == NULL || dv == NULL || (nrel > 0 && args->drel_table != NULL && drel == NULL)) {
        free(dk);
        free(dv);
        free(drel);
        return ATTN_ERR_NOMEM;
    }
    for (b = 0; b < fa->batch; b++)
        for (hk = 0; hk < spec->heads_kv; hk++) {
            const int group = spec->heads_q / spec->heads_kv;
            memset(dk, 0, ((size_t)fa->seq_k * (size_t)spec->head_dim + 1) * sizeof *dk);
            memset(dv, 0, ((size_t)fa->seq_k * (size_t)spec->head_dim_v + 1) * sizeof *dv);
            /* a kv head's dK and dV sum over its query heads, in order */
            for (h = hk * group; h < (hk + 1) * group; h++)
                for (i = 0; i < fa->seq_q; i++)
                    bwd_row(spec, args, b, h, i, dk, dv, drel, args->dq_norm_w ? dw : NULL, f32);
            for (j = 0; j < fa->seq_k; j++) {
                float *dkr = (float *)args->dk + b * args->dk_stride[0] + j * args->dk_stride[1] + hk * args->dk_stride[2];
                float *dvr = (float *)args->dv + b * args->dv_stride[0] + j * args->dv_stride[1] + hk * args->dv_stride[2];
                for (d = 0; d < spec->head_dim; d++)
                    dkr[d] = (float)dk[j * spec->head_dim + d];
                for (d = 0; d < spec->head_dim_v; d++)
                    dvr[d] = (float)dv[j * spec->head_dim_v + d];
            }
        }
    free(dk);
    free(dv);
    if (drel != NULL) {
        size_t e;
        for (e = 0; e < nrel; e++)
            args->drel_table[e] = (float)drel[e];
        free(drel);
    }
    if (spec->qk_norm && args->dq_norm_w)
        for (d = 0; d < spec->head_dim; d++)
            args->dq_norm_w[d] = (float)dw[d];
    bwd_sinks(spec, args, f32);
    return ATTN_OK;
}
