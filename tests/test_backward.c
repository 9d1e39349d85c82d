/*
 * test_backward.c - the sdpa backward pass.
 *
 * 1. The formulas: on small shapes, the float64 reference's gradients
 *    (attn_reference_backward) against central differences of the forward
 *    reference (attn_reference) of the loss L = sum dO . O, for every
 *    element of Q, K and V (and the sink logits, with sinks, and the
 *    relative position table, with rel_bias), under each mask rule and
 *    score term, with RoPE and with qk_norm (and its weights).
 * 2. Every config with backward = true (KERNEL_BWD lines of kernel_list.h):
 *    its backward variants against the reference on the quick shapes
 *    (attn_verify_bwd_case), and 1 thread and 2, 3, 4 giving the same bits.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"

/* ---- finite differences of the forward reference ------------------------ */

enum { FD_B = 2, FD_LQ = 5, FD_LK = 7, FD_HQ = 2, FD_HKV = 1, FD_D = 4, FD_DV = 3, FD_REL = 16 };

typedef struct {
    float q[FD_B * FD_LQ * FD_HQ * FD_D], k[FD_B * FD_LK * FD_HKV * FD_D], v[FD_B * FD_LK * FD_HKV * FD_DV];
    float o[FD_B * FD_LQ * FD_HQ * FD_DV], d_o[FD_B * FD_LQ * FD_HQ * FD_DV], lse[FD_B * FD_HQ * FD_LQ];
    float dq[FD_B * FD_LQ * FD_HQ * FD_D], dk[FD_B * FD_LK * FD_HKV * FD_D], dv[FD_B * FD_LK * FD_HKV * FD_DV];
    float bias[FD_B * FD_HQ * FD_LQ * FD_LK], sinks[FD_HQ], dsinks[FD_HQ], norm_w[FD_D], dnorm_w[FD_D];
    float rel[FD_REL * FD_HQ], drel[FD_REL * FD_HQ]; /* rel_table and its gradient (rel_bias: rows <= FD_REL) */
    int32_t seqlens[FD_B];
    attn_bwd_args a;
} fd_problem;

static float fd_value(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xFFFF) / 65536.0f * 2.0f - 1.0f;
}

static void fd_init(fd_problem *p, const attn_spec *s)
{
    unsigned st = 12345u;
    size_t i;
    memset(p, 0, sizeof *p);
    for (i = 0; i < sizeof p->q / sizeof p->q[0]; i++) p->q[i] = fd_value(&st);
    for (i = 0; i < sizeof p->k / sizeof p->k[0]; i++) p->k[i] = fd_value(&st);
    for (i = 0; i < sizeof p->v / sizeof p->v[0]; i++) p->v[i] = fd_value(&st);
    for (i = 0; i < sizeof p->d_o / sizeof p->d_o[0]; i++) p->d_o[i] = fd_value(&st);
    for (i = 0; i < sizeof p->bias / sizeof p->bias[0]; i++) p->bias[i] = fd_value(&st);
    for (i = 0; i < sizeof p->rel / sizeof p->rel[0]; i++) p->rel[i] = fd_value(&st);
    for (i = 0; i < FD_D; i++) p->norm_w[i] = 0.75f + 0.25f * fd_value(&st);
    p->sinks[0] = 0.5f;
    p->sinks[1] = -1.0f;
    p->seqlens[0] = FD_LK;
    p->seqlens[1] = 4;
    p->a.fwd.batch = FD_B;
    p->a.fwd.seq_q = FD_LQ;
    p->a.fwd.seq_k = FD_LK;
    attn_bwd_args_set_contiguous(&p->a, s);
    p->a.fwd.q = p->q;
    p->a.fwd.k = p->k;
    p->a.fwd.v = p->v;
    p->a.fwd.o = p->o;
    p->a.fwd.lse = p->lse;
    p->a.fwd.seqlens_k = p->seqlens;
    p->a.fwd.mask = s->mask == ATTN_MASK_BIAS ? (const void *)p->bias : NULL;
    p->a.fwd.sinks = s->sinks ? p->sinks : NULL;
    p->a.fwd.rel_table = attn_rel_rows(s) > 0 ? p->rel : NULL;
    p->a.fwd.dropout_p = s->dropout ? 0.3f : 0.0f;
    p->a.fwd.dropout_seed = 99;
    p->a.fwd.dropout_offset = 2;
    p->a.fwd.threads = 1;
    p->a.d_o = p->d_o;
    p->a.dq = p->dq;
    p->a.dk = p->dk;
    p->a.dv = p->dv;
    p->a.dsinks = s->sinks ? p->dsinks : NULL;
    p->a.drel_table = attn_rel_rows(s) > 0 ? p->drel : NULL;
    p->a.fwd.q_norm_w = p->a.fwd.k_norm_w = s->qk_norm ? p->norm_w : NULL;
    p->a.dq_norm_w = s->qk_norm ? p->dnorm_w : NULL;
}

/* L = sum dO . O of the forward reference on the problem's current inputs */
static double fd_loss(fd_problem *p, const attn_spec *s)
{
    double l = 0.0;
    size_t i;
    cr_assert_eq(attn_reference(s, &p->a.fwd), ATTN_OK);
    for (i = 0; i < sizeof p->o / sizeof p->o[0]; i++) l += (double)p->d_o[i] * (double)p->o[i];
    return l;
}

/* Each element of x (n of them) moved by +-h: (L+ - L-) / 2h against grad. */
static void fd_expect(fd_problem *p, const attn_spec *s, float *x, const float *grad, size_t n, const char *what)
{
    const float h = 1.0f / 128.0f;
    double worst = 0.0, mag = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs((double)grad[i]) > mag) mag = fabs((double)grad[i]);
    for (i = 0; i < n; i++) {
        const float x0 = x[i];
        double lp, lm, fd;
        x[i] = x0 + h;
        lp = fd_loss(p, s);
        x[i] = x0 - h;
        lm = fd_loss(p, s);
        x[i] = x0;
        fd = (lp - lm) / (2.0 * (double)h);
        if (fabs(fd - (double)grad[i]) > worst) worst = fabs(fd - (double)grad[i]);
        cr_expect(fabs(fd - (double)grad[i]) <= 2e-3 * mag + 2e-4, "%s %s[%zu]: reference %.6g, central difference %.6g",
                  s->name, what, i, (double)grad[i], fd);
    }
    cr_expect_gt(mag, 1e-3, "%s %s: the gradient is all zeros", s->name, what);
}

static void fd_check(const attn_spec *s)
{
    fd_problem *p = (fd_problem *)malloc(sizeof *p);
    cr_assert(p != NULL);
    fd_init(p, s);
    fd_loss(p, s); /* O and LSE of the forward */
    cr_assert_eq(attn_reference_backward(s, &p->a, 0), ATTN_OK);
    fd_expect(p, s, p->q, p->dq, sizeof p->q / sizeof p->q[0], "dQ");
    fd_expect(p, s, p->k, p->dk, sizeof p->k / sizeof p->k[0], "dK");
    fd_expect(p, s, p->v, p->dv, sizeof p->v / sizeof p->v[0], "dV");
    if (s->sinks) /* the sink logits' gradient: sinks[h] moved in the forward */
        fd_expect(p, s, p->sinks, p->dsinks, FD_HQ, "dsinks");
    if (attn_rel_rows(s) > 0) { /* the table's gradient: each of its entries moved in the forward */
        cr_assert_leq(attn_rel_rows(s), FD_REL);
        fd_expect(p, s, p->rel, p->drel, (size_t)attn_rel_rows(s) * FD_HQ, "drel_table");
    }
    if (s->qk_norm) /* the query norm's weights: q_norm_w moved in the forward */
        fd_expect(p, s, p->norm_w, p->dnorm_w, FD_D, "dq_norm_w");
    free(p);
}

/* the shape of every spec here: 2 query heads on 1 kv head, D 4, Dv 3 */
#define FD_SPEC(nm, left, right)                                                                                   \
    .family = ATTN_FAMILY_SDPA, .name = nm, .heads_q = FD_HQ, .heads_kv = FD_HKV, .head_dim = FD_D,              \
    .head_dim_v = FD_DV, .window_left = left, .window_right = right, .scale = 0.5f, .tile_q = 8, .tile_kv = 16,  \
    .backward = 1

Test(backward_fd, plain)
{
    const attn_spec s = { FD_SPEC("plain", -1, -1) };
    fd_check(&s);
}

Test(backward_fd, causal_padding)
{
    const attn_spec s = { FD_SPEC("causal_padding", -1, 0), .causal = 1, .padding = 1 };
    fd_check(&s);
}

Test(backward_fd, softcap_alibi_window)
{
    const attn_spec s = { FD_SPEC("softcap_alibi_window", 2, 1), .softcap = 1.5f, .alibi = 1, .global_tokens = 1 };
    fd_check(&s);
}

Test(backward_fd, bias_sinks_top_left)
{
    const attn_spec s = { FD_SPEC("bias_sinks_top_left", -1, 0), .causal = 1, .top_left = 1, .mask = ATTN_MASK_BIAS,
                          .sinks = 1 };
    fd_check(&s);
}

Test(backward_fd, dropout)
{
    const attn_spec s = { FD_SPEC("dropout", -1, -1), .dropout = 1, .chunk = 3 };
    fd_check(&s);
}

/* sinks with dropout (the same D_i) and rows that see no key (batch 1's first row, padding) */
Test(backward_fd, dropout_sinks_padding)
{
    const attn_spec s = { FD_SPEC("dropout_sinks_padding", -1, 0), .causal = 1, .padding = 1, .dropout = 1,
                          .sinks = 1 };
    fd_check(&s);
}

Test(backward_fd, temperature_sparse)
{
    const attn_spec s = { FD_SPEC("temperature_sparse", -1, 0), .causal = 1, .sparse = ATTN_SPARSE_STRIDED, .sparse_stride = 2, .temperature_scale = 0.5,
                          .temperature_floor = 2.0 };
    fd_check(&s);
}

/* RoPE: dQ is the rotated row's gradient rotated back; the angles of FD_LQ positions */
static const double fd_inv_freq[2] = { 1.0, 0.3 };

Test(backward_fd, rope_neox_softcap)
{
    const attn_spec s = { FD_SPEC("rope_neox_softcap", -1, 0), .causal = 1, .softcap = 1.5f,
                          .rope_style = ATTN_ROPE_NEOX, .rope_dim = 4, .rope_inv_freq = fd_inv_freq };
    fd_check(&s);
}

Test(backward_fd, rope_gptj_partial_top_left)
{
    const attn_spec s = { FD_SPEC("rope_gptj_partial_top_left", -1, 0), .causal = 1, .top_left = 1, .padding = 1,
                          .rope_style = ATTN_ROPE_GPTJ, .rope_dim = 2, .rope_inv_freq = fd_inv_freq };
    fd_check(&s);
}

/* qk_norm: dQ through the RMS norm (then RoPE), and the weights' gradient */
Test(backward_fd, qk_norm_rope)
{
    const attn_spec s = { FD_SPEC("qk_norm_rope", -1, 0), .causal = 1, .qk_norm = 1, .qk_norm_eps = 1e-3,
                          .rope_style = ATTN_ROPE_NEOX, .rope_dim = 4, .rope_inv_freq = fd_inv_freq };
    fd_check(&s);
}

Test(backward_fd, qk_norm_offset_softcap)
{
    const attn_spec s = { FD_SPEC("qk_norm_offset_softcap", -1, -1), .softcap = 1.5f, .qk_norm = 1,
                          .qk_norm_eps = 1e-6, .qk_norm_offset = 1 };
    fd_check(&s);
}

/* T5's buckets (both directions: 2 exact, then logarithmic to 6) after a softcap (the bias
   goes in after it, so its gradient has no softcap factor), with dropout and padding */
Test(backward_fd, rel_t5_softcap_dropout_padding)
{
    const attn_spec s = { FD_SPEC("rel_t5_softcap_dropout_padding", -1, -1), .softcap = 1.5f, .dropout = 1,
                          .padding = 1, .rel_bias = ATTN_REL_T5, .rel_buckets = 8, .rel_max_distance = 6,
                          .rel_bidirectional = 1 };
    fd_check(&s);
}

/* Shaw's clipped distances (k = 2: both ends of the table collect many pairs) under a causal
   top-left mask, a bias tensor and a temperature (which scales q.k, not the table's term) */
Test(backward_fd, rel_clipped_causal_bias_temperature)
{
    const attn_spec s = { FD_SPEC("rel_clipped_causal_bias_temperature", -1, 0), .causal = 1, .top_left = 1,
                          .mask = ATTN_MASK_BIAS, .temperature_scale = 0.5, .temperature_floor = 2.0,
                          .rel_bias = ATTN_REL_CLIPPED, .rel_buckets = 5, .rel_max_distance = 2 };
    fd_check(&s);
}

/* ---- the generated backward passes --------------------------------------- */

#define MAX_CASES 64

/* used by the KERNEL_BWD tests only: none when no config has a backward pass */
#if defined(__GNUC__)
#define BWD_TEST_UNUSED __attribute__((unused))
#else
#define BWD_TEST_UNUSED
#endif

BWD_TEST_UNUSED static void bwd_matrix(const attn_bwd_kernel *k, attn_isa isa)
{
    const attn_bwd_variant *v = NULL;
    attn_case cases[MAX_CASES];
    int n, i;
    for (i = 0; i < k->n_variants; i++)
        if (k->variants[i].isa == isa) v = &k->variants[i];
    if (!v) cr_skip_test("%s: the config does not list %s", k->fwd->spec.name, attn_isa_name(isa));
    if (!attn_isa_supported(isa)) cr_skip_test("%s: this CPU cannot run %s", k->fwd->spec.name, attn_isa_name(isa));
    n = attn_verify_default_cases(&k->fwd->spec, cases, MAX_CASES, 1);
    cr_assert_gt(n, 10, "%s: the case matrix is too small (%d)", k->fwd->spec.name, n);
    for (i = 0; i < n; i++) {
        attn_verify_result res;
        char what[96];
        const attn_status st = attn_verify_bwd_case(k, v, &cases[i], &res);
        attn_verify_case_string(&cases[i], what, sizeof what);
        cr_expect(st == ATTN_OK && res.failures == 0, "%s/%s backward, %s: %s", k->fwd->spec.name,
                  attn_isa_name(isa), what, res.first_failure);
    }
}

BWD_TEST_UNUSED static void bwd_bitwise(const attn_bwd_kernel *k)
{
    int i, t, checked = 0;
    for (i = 0; i < k->n_variants; i++) {
        const attn_bwd_variant *v = &k->variants[i];
        attn_case c;
        if (!attn_isa_supported(v->isa)) continue;
        memset(&c, 0, sizeof c);
        c.batch = 2;
        c.seq_q = 3 * k->fwd->spec.tile_q + 5;
        c.seq_k = 2 * k->fwd->spec.tile_kv + 7;
        c.ragged = k->fwd->spec.padding;
        c.seed = 11;
        if (k->fwd->spec.dropout) {
            c.dropout_p = 0.2f;
            c.dropout_seed = 0x0123456789abcdefu;
            c.dropout_offset = 5;
        }
        for (t = 2; t <= 4; t++) /* 2-4 threads: kv heads side by side, units split unevenly */
            cr_expect_eq(attn_verify_bwd_bitwise_threads(k, v, &c, 1, t), 1,
                         "%s/%s backward: 1 and %d threads differ (or a run failed)", k->fwd->spec.name,
                         attn_isa_name(v->isa), t);
        checked++;
    }
    cr_assert_gt(checked, 0, "%s: no runnable backward variant", k->fwd->spec.name);
}

#define KERNEL(name)
#define KERNEL_BWD(name)                                                                          \
    extern const attn_bwd_kernel attn_##name##_bwd_kernel;                                        \
    Test(name, bwd_avx512) { bwd_matrix(&attn_##name##_bwd_kernel, ATTN_ISA_AVX512); }            \
    Test(name, bwd_avx2) { bwd_matrix(&attn_##name##_bwd_kernel, ATTN_ISA_AVX2); }                \
    Test(name, bwd_scalar) { bwd_matrix(&attn_##name##_bwd_kernel, ATTN_ISA_SCALAR); }            \
    Test(name, bwd_threads_bitwise) { bwd_bitwise(&attn_##name##_bwd_kernel); }
#include "kernel_list.h"
#undef KERNEL
