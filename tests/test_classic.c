/*
 * test_classic.c - the additive (Bahdanau) and luong families.
 *
 * tests/test_kernels.c skips these kernels (their entry is classic_fwd, on
 * attn_classic_args); here:
 *   - the reference on worked examples checked by hand: the tutorial's Luong
 *     dot example (scores 2 and 1) and a small Bahdanau case, and its
 *     identities (concat with W = [W_h | W_s] is additive, general with
 *     W = I is dot), and the FLOP count the bench reports; the same two
 *     examples run by the kernels, embedded in their configs' dims;
 *   - the entry point: statuses for NULL pointers, shapes, strides, seqlens_k,
 *     threads and sizes; NaN reaches only the rows that see it; rows that see
 *     no key give C = 0 and A = 0; A is exactly 0 at hidden keys; U given
 *     and W_h given agree;
 *   - every classic config (build/kernel_list.h, derived from configs/) on
 *     every ISA this CPU runs, over the matrix of attn_verify_default_cases,
 *     and 1 vs 2 threads bit for bit.
 * The bounds are ATTN_REF_TOL_SCORE's (runtime/attn_reference.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cases.h" /* the families' tensors (attngen run) */
#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"

#define KERNEL(name) extern const attn_kernel attn_##name##_kernel;
#include "kernel_list.h"
#undef KERNEL

static const attn_kernel *const all_kernels[] = {
#define KERNEL(name) &attn_##name##_kernel,
#include "kernel_list.h"
#undef KERNEL
};
#define N_ALL ((int)(sizeof all_kernels / sizeof all_kernels[0]))

static int is_classic(const attn_kernel *k)
{
    return k->spec.family == ATTN_FAMILY_ADDITIVE || k->spec.family == ATTN_FAMILY_LUONG;
}

/* additive: Ds 7, Dh 13, Da 19, bias, padding, bool mask */
#define KA (&attn_t_additive_bias_mask_kernel)
/* luong concat (Ds 10, Dh 21, Da 15, bias, padding, mask), general (Ds 24,
   Dh 17, mask), dot (Ds = Dh = 33, padding) */
#define KC (&attn_t_luong_concat_kernel)
#define KG (&attn_t_luong_general_kernel)
#define KD (&attn_t_luong_dot_kernel)

/* ---- the reference on worked examples ----------------------------------- */

/* A one-head f32 spec of a classic family, by hand. */
static attn_spec hand_spec(attn_family family, attn_score score, int ds, int dh, int da, int bias)
{
    attn_spec s;
    memset(&s, 0, sizeof s);
    s.family = family;
    s.name = "hand";
    s.score = score;
    s.heads_q = s.heads_kv = 1;
    s.query_dim = s.head_dim = ds;
    s.key_dim = s.head_dim_v = dh;
    s.attn_dim = da;
    s.bias = bias;
    return s;
}

/* The tutorial's example: one decoder state s = [1, 0] against two encoder
 * states h_1 = [2, 5] and h_2 = [1, -3]; dot scores s . h_j = 2 and 1.
 *   a = softmax(2, 1) = (e^2, e^1) / (e^2 + e^1) = (1 / (1 + e^-1), 1 / (1 + e))
 *     = (0.7310585786, 0.2689414214)
 *   c = a_1 h_1 + a_2 h_2 = (2 (0.7310585786) + 0.2689414214,
 *                            5 (0.7310585786) - 3 (0.2689414214))
 *     = (1.7310585786, 2.8484686286) */
Test(classic, reference_luong_dot_worked_example)
{
    const attn_spec spec = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_DOT, 2, 2, 0, 0);
    const float s[2] = { 1.0f, 0.0f }, h[4] = { 2.0f, 5.0f, 1.0f, -3.0f };
    float c[2] = { 42.0f, 42.0f }, a[2] = { 42.0f, 42.0f };
    attn_classic_args args;
    memset(&args, 0, sizeof args);
    args.batch = 1;
    args.seq_q = 1;
    args.seq_k = 2;
    attn_classic_args_set_contiguous(&args, &spec);
    args.s = s;
    args.h = h;
    args.c = c;
    args.weights = a;
    cr_assert_eq(attn_reference_classic(&spec, &args), ATTN_OK);
    cr_expect_float_eq(a[0], 0.7310585786f, 1e-7, "a_1 = %.9g", (double)a[0]);
    cr_expect_float_eq(a[1], 0.2689414214f, 1e-7, "a_2 = %.9g", (double)a[1]);
    cr_expect_float_eq(c[0], 1.7310585786f, 1e-6, "c_1 = %.9g", (double)c[0]);
    cr_expect_float_eq(c[1], 2.8484686286f, 1e-6, "c_2 = %.9g", (double)c[1]);
}

/* Bahdanau with Ds = Dh = Da = 2, values chosen so the tanh's are exact
 * fractions (tanh(ln 2) = 3/5, tanh(ln 3) = 4/5, tanh(0) = 0):
 *   W_s = [[1, 0], [1, -1]], s = [ln 2, ln 2]       W_s s = [ln 2, 0]
 *   b = [0, ln 3 - ln 2]
 *   W_h = [[2, 0], [0, 1]]
 *   h_1 = [0, ln 2]                                 W_h h_1 = [0, ln 2]
 *   h_2 = [(ln 3 - ln 2) / 2, -(ln 3 - ln 2)]       W_h h_2 = [ln 3 - ln 2, -(ln 3 - ln 2)]
 *   x_1 = W_s s + W_h h_1 + b = [ln 2, ln 3]        tanh = [3/5, 4/5]
 *   x_2 = W_s s + W_h h_2 + b = [ln 3, 0]           tanh = [4/5, 0]
 *   v = [2, -1]: e_1 = 6/5 - 4/5 = 0.4, e_2 = 8/5 = 1.6
 *   a_1 = 1 / (1 + e^1.2) = 1 / 4.3201169227 = 0.2314752165, a_2 = 0.7685247835
 *   c = a_1 h_1 + a_2 h_2
 *     = [0.7685247835 (0.2027325541), 0.2314752165 (0.6931471806) - 0.7685247835 (0.4054651081)]
 *     = [0.1558049922, -0.1511635907]
 * The inputs are f32 (ln 2 and ln 3 rounded), so the results hold to ~1e-7. */
Test(classic, reference_bahdanau_worked_example)
{
    const attn_spec spec = hand_spec(ATTN_FAMILY_ADDITIVE, ATTN_SCORE_ADDITIVE, 2, 2, 2, 1);
    const double l2 = log(2.0), l3 = log(3.0);
    const float w_s[4] = { 1.0f, 0.0f, 1.0f, -1.0f }, w_h[4] = { 2.0f, 0.0f, 0.0f, 1.0f };
    const float b[2] = { 0.0f, (float)(l3 - l2) }, v[2] = { 2.0f, -1.0f };
    const float s[2] = { (float)l2, (float)l2 };
    const float h[4] = { 0.0f, (float)l2, (float)((l3 - l2) / 2), (float)-(l3 - l2) };
    float c[2] = { 42.0f, 42.0f }, a[2] = { 42.0f, 42.0f }, u[4];
    attn_classic_args args;
    int j, k;
    memset(&args, 0, sizeof args);
    args.batch = 1;
    args.seq_q = 1;
    args.seq_k = 2;
    attn_classic_args_set_contiguous(&args, &spec);
    args.s = s;
    args.h = h;
    args.w_s = w_s;
    args.w_h = w_h;
    args.v_attn = v;
    args.b_attn = b;
    args.c = c;
    args.weights = a;
    cr_assert_eq(attn_reference_classic(&spec, &args), ATTN_OK);
    cr_expect_float_eq(a[0], 0.2314752165f, 1e-6, "a_1 = %.9g", (double)a[0]);
    cr_expect_float_eq(a[1], 0.7685247835f, 1e-6, "a_2 = %.9g", (double)a[1]);
    cr_expect_float_eq(c[0], 0.1558049922f, 1e-6, "c_1 = %.9g", (double)c[0]);
    cr_expect_float_eq(c[1], -0.1511635907f, 1e-6, "c_2 = %.9g", (double)c[1]);
    /* U = H W_h^T given instead of W_h: the same */
    for (j = 0; j < 2; j++)
        for (k = 0; k < 2; k++) u[j * 2 + k] = w_h[k * 2] * h[j * 2] + w_h[k * 2 + 1] * h[j * 2 + 1];
    args.u = u;
    args.w_h = NULL;
    c[0] = c[1] = 42.0f;
    cr_assert_eq(attn_reference_classic(&spec, &args), ATTN_OK);
    cr_expect_float_eq(c[0], 0.1558049922f, 1e-6, "with U: c_1 = %.9g", (double)c[0]);
    cr_expect_float_eq(c[1], -0.1511635907f, 1e-6, "with U: c_2 = %.9g", (double)c[1]);
}

/* splitmix64 -> uniform in [-1, 1) */
static float uni(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 4503599627370496.0 - 1.0);
}

/* concat with W = [W_h | W_s] (each row: W_h's, then W_s's) is additive with
 * W_s, W_h; general with W = I is dot: the same sums in the same order, so
 * the reference gives the same bits. */
Test(classic, reference_identities_between_scores)
{
    enum { B = 2, LQ = 3, LK = 5, DS = 4, DH = 3, DA = 6 };
    attn_spec add = hand_spec(ATTN_FAMILY_ADDITIVE, ATTN_SCORE_ADDITIVE, DS, DH, DA, 1);
    attn_spec cat = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_CONCAT, DS, DH, DA, 1);
    attn_spec dot = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_DOT, DH, DH, 0, 0);
    attn_spec gen = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_GENERAL, DH, DH, 0, 0);
    float s[B * LQ * DS], h[B * LK * DH], w_s[DA * DS], w_h[DA * DH], w[DA * (DH + DS)], v[DA], b[DA];
    float eye[DH * DH] = { 0 }, c1[B * LQ * DH], c2[B * LQ * DH], a1[B * LQ * LK], a2[B * LQ * LK];
    attn_classic_args args;
    uint64_t st = 3;
    int i, d;
    for (i = 0; i < B * LQ * DS; i++) s[i] = uni(&st);
    for (i = 0; i < B * LK * DH; i++) h[i] = uni(&st);
    for (i = 0; i < DA * DS; i++) w_s[i] = uni(&st);
    for (i = 0; i < DA * DH; i++) w_h[i] = uni(&st);
    for (i = 0; i < DA; i++) v[i] = uni(&st), b[i] = uni(&st);
    for (i = 0; i < DA; i++)
        for (d = 0; d < DH + DS; d++) w[i * (DH + DS) + d] = d < DH ? w_h[i * DH + d] : w_s[i * DS + d - DH];
    for (i = 0; i < DH; i++) eye[i * DH + i] = 1.0f;

    memset(&args, 0, sizeof args);
    args.batch = B;
    args.seq_q = LQ;
    args.seq_k = LK;
    attn_classic_args_set_contiguous(&args, &add);
    args.s = s;
    args.h = h;
    args.w_s = w_s;
    args.w_h = w_h;
    args.w = w;
    args.v_attn = v;
    args.b_attn = b;
    args.c = c1;
    args.weights = a1;
    cr_assert_eq(attn_reference_classic(&add, &args), ATTN_OK);
    args.c = c2;
    args.weights = a2;
    cr_assert_eq(attn_reference_classic(&cat, &args), ATTN_OK);
    cr_expect(memcmp(c1, c2, sizeof c1) == 0 && memcmp(a1, a2, sizeof a1) == 0, "concat != additive");

    /* dot and general over S of Dh columns (the first DH of each row of 4) */
    args.s_stride[1] = DS;
    args.s_stride[0] = LQ * DS;
    args.c_stride[1] = DH;
    args.c_stride[0] = LQ * DH;
    args.w = eye;
    args.c = c1;
    args.weights = a1;
    cr_assert_eq(attn_reference_classic(&dot, &args), ATTN_OK);
    args.c = c2;
    args.weights = a2;
    cr_assert_eq(attn_reference_classic(&gen, &args), ATTN_OK);
    cr_expect(memcmp(c1, c2, sizeof c1) == 0 && memcmp(a1, a2, sizeof a1) == 0, "general with W = I != dot");
}

/* The FLOPs the bench counts (attn_reference.h), on B = 1, Lq = 2, Lk = 5
 * (10 pairs), Ds = 2, Dh = 3, Da = 4:
 *   additive, bias: rows 2 (2*2*4 + 4) = 40, keys 5 (2*3*4) = 120, pairs
 *     10 (3*4) = 120, context 10 (2*3) = 60: 340; with U, 220;
 *   concat: the same 340 (U is additive's alone);
 *   general (Ds 2, Dh 3): rows 2 (2*2*3) = 24, pairs 10 (2*3) + 60: 144;
 *   dot (Ds = Dh = 3): 10 (2*3) + 60 = 120;
 *   with padding and seqlens_k = 3: additive 2*20 + 3*24 + 6*12 + 6*6 = 220. */
Test(classic, reference_flops)
{
    attn_spec add = hand_spec(ATTN_FAMILY_ADDITIVE, ATTN_SCORE_ADDITIVE, 2, 3, 4, 1);
    const attn_spec cat = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_CONCAT, 2, 3, 4, 1);
    const attn_spec gen = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_GENERAL, 2, 3, 0, 0);
    const attn_spec dot = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_DOT, 3, 3, 0, 0);
    float any[64] = { 0 };
    const int32_t seqlens[1] = { 3 };
    attn_classic_args a;
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = 2;
    a.seq_k = 5;
    attn_classic_args_set_contiguous(&a, &add);
    a.s = a.h = a.w_s = a.w_h = a.w = a.v_attn = a.b_attn = any;
    a.c = any;
    cr_expect_eq(attn_reference_classic_flops(&add, &a), 340.0);
    cr_expect_eq(attn_reference_classic_flops(&cat, &a), 340.0);
    cr_expect_eq(attn_reference_classic_flops(&gen, &a), 144.0);
    cr_expect_eq(attn_reference_classic_flops(&dot, &a), 120.0);
    a.u = any;
    cr_expect_eq(attn_reference_classic_flops(&add, &a), 220.0);
    cr_expect_eq(attn_reference_classic_flops(&cat, &a), 340.0);
    a.u = NULL;
    add.padding = 1;
    a.seqlens_k = seqlens;
    cr_expect_eq(attn_reference_classic_flops(&add, &a), 220.0);
    a.seq_q = -1;
    cr_expect_eq(attn_reference_classic_flops(&add, &a), -1.0);
    add.family = ATTN_FAMILY_SDPA;
    cr_expect_eq(attn_reference_classic_flops(&add, &a), -1.0);
}

/* ---- a problem: contiguous tensors for one kernel ------------------------ */

/* S, H and the parameters wanted as f32 values, stored in the spec's types
 * (cp_store narrows them and puts the stored values back), C in dtype_o, A,
 * the mask all ones, seqlens_k = Lk; S and H N(0,1)-ish, the parameters
 * uniform in +-1/sqrt(in_features). */
typedef struct {
    const attn_kernel *kern;
    attn_classic_args a;
    float *s, *h, *w_s, *w_h, *w, *v, *b, *wts;
    void *ss, *hs, *w_ss, *w_hs, *ws, *vs, *bs, *cs, *us;
    uint8_t *mask;
    int32_t *seqlens;
    size_t ns, nh, nw_s, nw_h, nw, nv, nc, na, nu;
} cprob;

static void *cp_alloc(size_t n, attn_dtype dt)
{
    void *p = calloc(n + 1, attn_dtype_size(dt));
    cr_assert(p != NULL);
    return p;
}

static void cp_store(cprob *p)
{
    const attn_spec *s = &p->kern->spec;
    attn_verify_store(s->dtype_q, p->s, p->ss, p->ns);
    attn_verify_store(s->dtype_kv, p->h, p->hs, p->nh);
    attn_verify_store(s->dtype_kv, p->w_s, p->w_ss, p->nw_s);
    attn_verify_store(s->dtype_kv, p->w_h, p->w_hs, p->nw_h);
    attn_verify_store(s->dtype_kv, p->w, p->ws, p->nw);
    attn_verify_store(s->dtype_kv, p->v, p->vs, p->nv);
    attn_verify_store(s->dtype_kv, p->b, p->bs, p->nv);
}

static void cp_init(cprob *p, const attn_kernel *k, int64_t B, int64_t Lq, int64_t Lk)
{
    const attn_spec *s = &k->spec;
    const int64_t ds = s->query_dim, dh = s->key_dim, da = s->attn_dim;
    const int concat = s->family == ATTN_FAMILY_LUONG && s->score == ATTN_SCORE_CONCAT;
    uint64_t st = 77;
    size_t i;
    memset(p, 0, sizeof *p);
    p->kern = k;
    p->ns = (size_t)(B * Lq * ds);
    p->nh = (size_t)(B * Lk * dh);
    p->nc = (size_t)(B * Lq * dh);
    p->na = (size_t)(B * Lq * Lk);
    p->nu = (size_t)(B * Lk * da);
    p->nw_s = (size_t)(da * ds);
    p->nw_h = (size_t)(da * dh);
    p->nw = concat ? (size_t)(da * (dh + ds)) : (size_t)(dh * ds);
    p->nv = (size_t)da;
    p->s = (float *)cp_alloc(p->ns, ATTN_DTYPE_F32);
    p->h = (float *)cp_alloc(p->nh, ATTN_DTYPE_F32);
    p->w_s = (float *)cp_alloc(p->nw_s, ATTN_DTYPE_F32);
    p->w_h = (float *)cp_alloc(p->nw_h, ATTN_DTYPE_F32);
    p->w = (float *)cp_alloc(p->nw, ATTN_DTYPE_F32);
    p->v = (float *)cp_alloc(p->nv, ATTN_DTYPE_F32);
    p->b = (float *)cp_alloc(p->nv, ATTN_DTYPE_F32);
    p->wts = (float *)cp_alloc(p->na, ATTN_DTYPE_F32);
    p->ss = cp_alloc(p->ns, s->dtype_q);
    p->hs = cp_alloc(p->nh, s->dtype_kv);
    p->w_ss = cp_alloc(p->nw_s, s->dtype_kv);
    p->w_hs = cp_alloc(p->nw_h, s->dtype_kv);
    p->ws = cp_alloc(p->nw, s->dtype_kv);
    p->vs = cp_alloc(p->nv, s->dtype_kv);
    p->bs = cp_alloc(p->nv, s->dtype_kv);
    p->us = cp_alloc(p->nu, s->dtype_kv);
    p->cs = cp_alloc(p->nc, s->dtype_o);
    p->mask = (uint8_t *)cp_alloc(p->na, ATTN_DTYPE_F32);
    p->seqlens = (int32_t *)cp_alloc((size_t)B, ATTN_DTYPE_F32);
    /* a sum of 3 uniforms in [-1, 1) has variance 1 */
    for (i = 0; i < p->ns; i++) p->s[i] = uni(&st) + uni(&st) + uni(&st);
    for (i = 0; i < p->nh; i++) p->h[i] = uni(&st) + uni(&st) + uni(&st);
    for (i = 0; i < p->nw_s; i++) p->w_s[i] = uni(&st) / (float)sqrt((double)ds);
    for (i = 0; i < p->nw_h; i++) p->w_h[i] = uni(&st) / (float)sqrt((double)dh);
    for (i = 0; i < p->nw; i++) p->w[i] = uni(&st) / (float)sqrt((double)(concat ? dh + ds : ds));
    for (i = 0; i < p->nv; i++) p->v[i] = uni(&st) / (float)sqrt((double)da);
    for (i = 0; i < p->nv; i++) p->b[i] = uni(&st) / (float)sqrt((double)ds);
    for (i = 0; i < p->na; i++) p->mask[i] = 1;
    for (i = 0; i < (size_t)B; i++) p->seqlens[i] = (int32_t)Lk;
    cp_store(p);
    p->a.batch = B;
    p->a.seq_q = Lq;
    p->a.seq_k = Lk;
    attn_classic_args_set_contiguous(&p->a, s);
    p->a.s = p->ss;
    p->a.h = p->hs;
    if (s->family == ATTN_FAMILY_ADDITIVE) {
        p->a.w_s = p->w_ss;
        p->a.w_h = p->w_hs;
    }
    if (s->family == ATTN_FAMILY_LUONG && s->score != ATTN_SCORE_DOT) p->a.w = p->ws;
    if (da > 0) {
        p->a.v_attn = p->vs;
        p->a.b_attn = s->bias ? p->bs : NULL;
    }
    p->a.c = p->cs;
    p->a.weights = p->wts;
    p->a.seqlens_k = s->padding ? p->seqlens : NULL;
    p->a.mask = s->mask == ATTN_MASK_BOOL ? p->mask : NULL;
    p->a.threads = 1;
}

/* U = H W_h^T from the stored H and W_h, in double, stored in dtype_kv;
   passed instead of W_h */
static void cp_use_u(cprob *p)
{
    const attn_spec *s = &p->kern->spec;
    const int64_t dh = s->key_dim, da = s->attn_dim, rows = (int64_t)(p->nh / (size_t)dh);
    float *u = (float *)cp_alloc(p->nu, ATTN_DTYPE_F32);
    int64_t j, k, d;
    for (j = 0; j < rows; j++)
        for (k = 0; k < da; k++) {
            double sum = 0.0;
            for (d = 0; d < dh; d++) sum += (double)p->w_h[k * dh + d] * (double)p->h[j * dh + d];
            u[j * da + k] = (float)sum;
        }
    attn_verify_narrow(s->dtype_kv, u, p->us, p->nu);
    free(u);
    p->a.u = p->us;
    p->a.w_h = NULL;
}

static float cp_c(const cprob *p, size_t i)
{
    const attn_dtype dt = p->kern->spec.dtype_o;
    float x;
    attn_verify_widen(dt, (const unsigned char *)p->cs + i * attn_dtype_size(dt), &x, 1);
    return x;
}

static void cp_fill_outputs(cprob *p, float x)
{
    size_t i;
    for (i = 0; i < p->nc; i++)
        attn_verify_narrow(p->kern->spec.dtype_o, &x, (unsigned char *)p->cs + i * attn_dtype_size(p->kern->spec.dtype_o), 1);
    for (i = 0; i < p->na; i++) p->wts[i] = x;
}

static void cp_free(cprob *p)
{
    free(p->s);
    free(p->h);
    free(p->w_s);
    free(p->w_h);
    free(p->w);
    free(p->v);
    free(p->b);
    free(p->wts);
    free(p->ss);
    free(p->hs);
    free(p->w_ss);
    free(p->w_hs);
    free(p->ws);
    free(p->vs);
    free(p->bs);
    free(p->us);
    free(p->cs);
    free(p->mask);
    free(p->seqlens);
}

/* The reference's C and A (f32, C not rounded) and C's and A's bounds,
   in new buffers. */
typedef struct {
    float *c, *a;
    double *c_tol, *w_rel;
} cref;

static void cp_reference(const cprob *p, cref *r)
{
    attn_spec spec = p->kern->spec;
    attn_classic_args ra = p->a;
    r->c = (float *)cp_alloc(p->nc, ATTN_DTYPE_F32);
    r->a = (float *)cp_alloc(p->na, ATTN_DTYPE_F32);
    r->c_tol = (double *)calloc(p->nc + 1, sizeof(double));
    r->w_rel = (double *)calloc((size_t)(p->a.batch * p->a.seq_q) + 1, sizeof(double));
    cr_assert(r->c_tol && r->w_rel);
    ra.c = r->c;
    ra.weights = r->a;
    spec.dtype_o = ATTN_DTYPE_F32;
    cr_assert_eq(attn_reference_classic(&spec, &ra), ATTN_OK);
    cr_assert_eq(attn_reference_classic_bounds(&p->kern->spec, &ra, r->c_tol, r->w_rel), ATTN_OK);
}

static void cref_free(cref *r)
{
    free(r->c);
    free(r->a);
    free(r->c_tol);
    free(r->w_rel);
}

/* The kernel's C and A against the reference within its bounds; returns the
   worst fraction of the bound. */
static double cp_expect_reference(const cprob *p, const cref *r, const char *what)
{
    const int64_t lk = p->a.seq_k;
    double worst = 0.0;
    size_t i;
    for (i = 0; i < p->nc; i++) {
        const double x = cp_c(p, i), err = fabs(x - r->c[i]);
        cr_expect(err <= r->c_tol[i], "%s: C[%zu] = %.9g, want %.9g (bound %.3g)", what, i, x, (double)r->c[i],
                  r->c_tol[i]);
        if (err / r->c_tol[i] > worst) worst = err / r->c_tol[i];
    }
    for (i = 0; i < p->na && p->a.weights != NULL; i++) {
        const double ref = r->a[i], tol = ATTN_REF_TOL_P(ref) + r->w_rel[i / (size_t)lk] * ref;
        const double err = fabs((double)p->wts[i] - ref);
        cr_expect(err <= tol && (ref != 0.0 || p->wts[i] == 0.0f), "%s: A[%zu] = %.9g, want %.9g", what, i,
                  (double)p->wts[i], ref);
        if (err / tol > worst) worst = err / tol;
    }
    return worst;
}

/* ---- the entry point ----------------------------------------------------- */

/* Each check both through attn_check_classic_args and the kernel's entry. */
#define EXPECT_STATUS(k, args, want)                                                                          \
    do {                                                                                                      \
        const attn_classic_args a_ = (args);                                                                  \
        cr_expect_eq(attn_check_classic_args(&(k)->spec, &a_), (want), "%s: check, line %d", (k)->spec.name, \
                     __LINE__);                                                                               \
        cr_expect_eq((k)->classic_fwd(&a_), (want), "%s: entry, line %d", (k)->spec.name, __LINE__);          \
    } while (0)

Test(classic, bad_arguments_give_statuses)
{
    cprob p;
    attn_classic_args a;
    cp_init(&p, KA, 2, 5, 9);
    cr_expect_eq(KA->fwd, NULL);
    cr_expect_eq(KA->classic_fwd(NULL), ATTN_ERR_NULL_ARG);
    cr_expect_eq(attn_check_classic_args(NULL, &p.a), ATTN_ERR_NULL_ARG);
    EXPECT_STATUS(KA, p.a, ATTN_OK);
    a = p.a; a.s = NULL;             EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.h = NULL;             EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.c = NULL;             EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.w_s = NULL;           EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.w_h = NULL;           EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.v_attn = NULL;        EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.b_attn = NULL;        EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.seqlens_k = NULL;     EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.mask = NULL;          EXPECT_STATUS(KA, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.weights = NULL;       EXPECT_STATUS(KA, a, ATTN_OK); /* A is optional */
    a = p.a; a.w = NULL;             EXPECT_STATUS(KA, a, ATTN_OK); /* additive reads no W */
    a = p.a; a.u = p.us; a.w_h = NULL; EXPECT_STATUS(KA, a, ATTN_OK); /* U replaces W_h */
    a = p.a; a.u = p.us; a.u_stride[1] = -1; EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.u_stride[1] = -1;     EXPECT_STATUS(KA, a, ATTN_OK); /* no U: its strides are not read */
    a = p.a; a.batch = -1;           EXPECT_STATUS(KA, a, ATTN_ERR_SHAPE);
    a = p.a; a.seq_q = -1;           EXPECT_STATUS(KA, a, ATTN_ERR_SHAPE);
    a = p.a; a.seq_k = -2;           EXPECT_STATUS(KA, a, ATTN_ERR_SHAPE);
    a = p.a; a.s_stride[1] = -1;     EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.h_stride[0] = -1;     EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.c_stride[1] = -7;     EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.weights_stride[2] = -1; EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.weights_stride[2] = -1; a.weights = NULL; EXPECT_STATUS(KA, a, ATTN_OK);
    a = p.a; a.mask_stride[0] = -1;  EXPECT_STATUS(KA, a, ATTN_ERR_STRIDE);
    a = p.a; a.threads = -1;         EXPECT_STATUS(KA, a, ATTN_ERR_THREADS);
    a = p.a; a.seq_q = ((int64_t)1 << 62) + 1; EXPECT_STATUS(KA, a, ATTN_ERR_TOO_LARGE);
    a = p.a; a.h_stride[0] = INT64_MAX / 2; EXPECT_STATUS(KA, a, ATTN_ERR_TOO_LARGE);
    a = p.a; a.weights_stride[0] = INT64_MAX / 3; EXPECT_STATUS(KA, a, ATTN_ERR_TOO_LARGE);
    p.seqlens[1] = 10;               EXPECT_STATUS(KA, p.a, ATTN_ERR_SEQLENS);
    p.seqlens[1] = -1;               EXPECT_STATUS(KA, p.a, ATTN_ERR_SEQLENS);
    p.seqlens[1] = 9;                EXPECT_STATUS(KA, p.a, ATTN_OK);
    cp_free(&p);

    /* concat reads W, v and b (bias on by default); general W only; dot none */
    cp_init(&p, KC, 1, 3, 4);
    a = p.a; a.w = NULL;             EXPECT_STATUS(KC, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.v_attn = NULL;        EXPECT_STATUS(KC, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.b_attn = NULL;        EXPECT_STATUS(KC, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.w_s = a.w_h = NULL;   EXPECT_STATUS(KC, a, ATTN_OK);
    cp_free(&p);
    cp_init(&p, KG, 1, 3, 4);
    a = p.a; a.w = NULL;             EXPECT_STATUS(KG, a, ATTN_ERR_NULL_ARG);
    a = p.a; a.v_attn = a.b_attn = NULL; a.seqlens_k = NULL; EXPECT_STATUS(KG, a, ATTN_OK);
    cp_free(&p);
    cp_init(&p, KD, 1, 3, 4);
    a = p.a; a.w = a.w_s = a.w_h = a.v_attn = a.b_attn = NULL; a.mask = NULL; EXPECT_STATUS(KD, a, ATTN_OK);
    a = p.a; a.seqlens_k = NULL;     EXPECT_STATUS(KD, a, ATTN_ERR_NULL_ARG);
    cp_free(&p);
}

Test(classic, empty_shapes_are_fine)
{
    cprob p;
    cp_init(&p, KA, 2, 4, 6);
    p.a.batch = 0;
    EXPECT_STATUS(KA, p.a, ATTN_OK);
    p.a.batch = 2;
    p.a.seq_q = 0;
    EXPECT_STATUS(KA, p.a, ATTN_OK);
    p.a.seq_q = 4;
    p.a.seq_k = 0;
    p.seqlens[0] = p.seqlens[1] = 0;
    cp_fill_outputs(&p, 42.0f);
    cr_assert_eq(KA->classic_fwd(&p.a), ATTN_OK);
    {
        size_t i;
        for (i = 0; i < p.nc; i++) cr_expect_eq(cp_c(&p, i), 0.0f, "Lk = 0: C[%zu] = %g", i, (double)cp_c(&p, i));
    }
    cp_free(&p);
}

/* On every ISA variant this CPU runs: fn(kernel, variant). */
static int for_each_variant(const attn_kernel *k, void (*fn)(const attn_kernel *, const attn_variant *))
{
    int i, ran = 0;
    for (i = 0; i < k->n_variants; i++)
        if (attn_isa_supported(k->variants[i].isa)) {
            fn(k, &k->variants[i]);
            ran++;
        }
    cr_assert_gt(ran, 0, "%s: no runnable variant", k->spec.name);
    return ran;
}

/* The worked examples above, run by the kernels: each embedded in the test
 * configs' larger dims with zeros (extra dims of s and h are 0, extra
 * attention units have zero weights, bias and v, so they add tanh(0) v = 0),
 * which leaves the scores, the weights and the first two dims of c as
 * computed by hand; every other dim of c is 0.  The kernels' tanh is a
 * rational fit (relative error below 4e-7), hence 1e-6. */
static void expect_worked(const attn_kernel *k, const attn_variant *v, const float *c, const float *a,
                          const float want_a[2], const float want_c[2])
{
    int64_t d;
    cr_expect_float_eq(a[0], want_a[0], 1e-6, "%s/%s: a_1 = %.9g", k->spec.name, attn_isa_name(v->isa), (double)a[0]);
    cr_expect_float_eq(a[1], want_a[1], 1e-6, "%s/%s: a_2 = %.9g", k->spec.name, attn_isa_name(v->isa), (double)a[1]);
    cr_expect_float_eq(c[0], want_c[0], 1e-6, "%s/%s: c_1 = %.9g", k->spec.name, attn_isa_name(v->isa), (double)c[0]);
    cr_expect_float_eq(c[1], want_c[1], 1e-6, "%s/%s: c_2 = %.9g", k->spec.name, attn_isa_name(v->isa), (double)c[1]);
    for (d = 2; d < k->spec.key_dim; d++)
        cr_expect_eq(c[d], 0.0f, "%s/%s: c[%lld] = %g", k->spec.name, attn_isa_name(v->isa), (long long)d, (double)c[d]);
}

static void dot_worked(const attn_kernel *k, const attn_variant *v)
{
    static const float want_a[2] = { 0.7310585786f, 0.2689414214f }, want_c[2] = { 1.7310585786f, 2.8484686286f };
    const int64_t ds = k->spec.query_dim, dh = k->spec.key_dim;
    float *s = calloc((size_t)ds, sizeof *s), *h = calloc((size_t)(2 * dh), sizeof *h);
    float *c = calloc((size_t)dh, sizeof *c), a[2] = { 42.0f, 42.0f };
    const int32_t seqlens[1] = { 2 };
    attn_classic_args args;
    cr_assert(s && h && c);
    s[0] = 1.0f;
    h[0] = 2.0f, h[1] = 5.0f, h[dh] = 1.0f, h[dh + 1] = -3.0f;
    memset(&args, 0, sizeof args);
    args.batch = 1;
    args.seq_q = 1;
    args.seq_k = 2;
    attn_classic_args_set_contiguous(&args, &k->spec);
    args.s = s;
    args.h = h;
    args.c = c;
    args.weights = a;
    args.seqlens_k = seqlens;
    args.threads = 1;
    cr_assert_eq(v->classic_fwd(&args), ATTN_OK);
    expect_worked(k, v, c, a, want_a, want_c);
    free(s);
    free(h);
    free(c);
}

static void bahdanau_worked(const attn_kernel *k, const attn_variant *v)
{
    static const float want_a[2] = { 0.2314752165f, 0.7685247835f }, want_c[2] = { 0.1558049922f, -0.1511635907f };
    const double l2 = log(2.0), l3 = log(3.0);
    const int64_t ds = k->spec.query_dim, dh = k->spec.key_dim, da = k->spec.attn_dim;
    float *s = calloc((size_t)ds, sizeof *s), *h = calloc((size_t)(2 * dh), sizeof *h);
    float *w_s = calloc((size_t)(da * ds), sizeof *w_s), *w_h = calloc((size_t)(da * dh), sizeof *w_h);
    float *b = calloc((size_t)da, sizeof *b), *vv = calloc((size_t)da, sizeof *vv);
    float *c = calloc((size_t)dh, sizeof *c), a[2] = { 42.0f, 42.0f };
    const int32_t seqlens[1] = { 2 };
    const uint8_t keep[2] = { 1, 1 };
    attn_classic_args args;
    cr_assert(s && h && w_s && w_h && b && vv && c);
    w_s[0] = 1.0f, w_s[ds] = 1.0f, w_s[ds + 1] = -1.0f; /* [[1, 0], [1, -1]] */
    w_h[0] = 2.0f, w_h[dh + 1] = 1.0f;                  /* [[2, 0], [0, 1]] */
    b[1] = (float)(l3 - l2);
    vv[0] = 2.0f, vv[1] = -1.0f;
    s[0] = s[1] = (float)l2;
    h[1] = (float)l2;
    h[dh] = (float)((l3 - l2) / 2), h[dh + 1] = (float)-(l3 - l2);
    memset(&args, 0, sizeof args);
    args.batch = 1;
    args.seq_q = 1;
    args.seq_k = 2;
    attn_classic_args_set_contiguous(&args, &k->spec);
    args.s = s;
    args.h = h;
    args.w_s = w_s;
    args.w_h = w_h;
    args.v_attn = vv;
    args.b_attn = b;
    args.c = c;
    args.weights = a;
    args.seqlens_k = seqlens;
    args.mask = keep;
    args.threads = 1;
    cr_assert_eq(v->classic_fwd(&args), ATTN_OK);
    expect_worked(k, v, c, a, want_a, want_c);
    free(s);
    free(h);
    free(w_s);
    free(w_h);
    free(b);
    free(vv);
    free(c);
}

Test(classic, kernels_reproduce_the_worked_examples)
{
    cr_assert_eq(KD->spec.dtype_q, ATTN_DTYPE_F32);
    cr_assert_eq(KA->spec.dtype_kv, ATTN_DTYPE_F32);
    cr_assert(KA->spec.bias && KA->spec.query_dim >= 2 && KA->spec.key_dim >= 2 && KA->spec.attn_dim >= 2);
    for_each_variant(KD, dot_worked);
    for_each_variant(KA, bahdanau_worked);
}

/* Rows that see no key (seqlens_k = 0 for batch 1, an all-false mask row in
 * batch 0) give C = 0 and A = 0 exactly; a hidden key's weight is exactly 0,
 * and each row's visible weights sum to 1. */
static void empty_and_hidden(const attn_kernel *k, const attn_variant *v)
{
    enum { B = 2, LQ = 4, LK = 6 };
    cprob p;
    cref r;
    int64_t i, j, d;
    cp_init(&p, k, B, LQ, LK);
    p.seqlens[0] = 5;
    p.seqlens[1] = 0;
    for (j = 0; j < LK; j++) p.mask[1 * LK + j] = 0;                /* b 0, row 1: nothing */
    p.mask[2 * LK + 0] = p.mask[2 * LK + 3] = p.mask[3 * LK + 4] = 0; /* b 0, rows 2, 3: some */
    for (i = 0; i < (int64_t)p.nh; i++)                              /* H past seqlens_k: NaN */
        if ((i / k->spec.key_dim) % LK >= p.seqlens[i / (k->spec.key_dim * LK)]) p.h[i] = NAN;
    cp_store(&p);
    cp_fill_outputs(&p, 42.0f);
    cr_assert_eq(v->classic_fwd(&p.a), ATTN_OK);
    for (i = 0; i < B * LQ; i++) {
        const int empty = i == 1 || i >= LQ;
        double sum = 0.0;
        for (j = 0; j < LK; j++) {
            const float w = p.wts[i * LK + j];
            const int hidden = empty || j >= 5 || (i == 2 && (j == 0 || j == 3)) || (i == 3 && j == 4);
            if (hidden)
                cr_expect_eq(w, 0.0f, "%s/%s: A[%lld][%lld] = %g at a hidden key", k->spec.name, attn_isa_name(v->isa),
                             (long long)i, (long long)j, (double)w);
            else
                cr_expect(w > 0.0f, "%s/%s: A[%lld][%lld] = %g at a visible key", k->spec.name,
                          attn_isa_name(v->isa), (long long)i, (long long)j, (double)w);
            sum += w;
        }
        cr_expect(empty ? sum == 0.0 : fabs(sum - 1.0) <= 1e-5, "%s/%s: row %lld sums to %.9g", k->spec.name,
                  attn_isa_name(v->isa), (long long)i, sum);
        for (d = 0; d < k->spec.key_dim && empty; d++)
            cr_expect_eq(cp_c(&p, (size_t)(i * k->spec.key_dim + d)), 0.0f, "%s/%s: C[%lld][%lld] of an empty row",
                         k->spec.name, attn_isa_name(v->isa), (long long)i, (long long)d);
    }
    cp_reference(&p, &r);
    cp_expect_reference(&p, &r, k->spec.name);
    cref_free(&r);
    cp_free(&p);
}

Test(classic, empty_rows_and_hidden_keys)
{
    for_each_variant(KA, empty_and_hidden);
    for_each_variant(KC, empty_and_hidden);
}

/* A NaN in H[b 0][key 2][d 0], which row 1 does not see (mask): with W_h the
 * scores of key 2 are NaN, so rows 0, 2, 3 are NaN in all of C and row 1 and
 * batch 1 stay finite; with U (finite) only C[., 0] of those rows is NaN (the
 * weight of key 2 times NaN).  A NaN in S[b 1][row 2] reaches that row alone. */
static void nan_rows(const attn_kernel *k, const attn_variant *v)
{
    enum { B = 2, LQ = 4, LK = 6 };
    const int64_t dh = k->spec.key_dim, ds = k->spec.query_dim;
    int with_u;
    for (with_u = 0; with_u < 2; with_u++) {
        cprob p;
        int64_t i, d;
        cp_init(&p, k, B, LQ, LK);
        p.mask[1 * LK + 2] = 0;
        p.h[2 * dh] = NAN;
        p.s[(1 * LQ + 2) * ds] = NAN;
        cp_store(&p);
        if (with_u) {
            p.h[2 * dh] = 0.0f; /* U from a finite H, then the NaN back in H */
            cp_store(&p);
            cp_use_u(&p);
            p.h[2 * dh] = NAN;
            cp_store(&p);
        }
        cr_assert_eq(v->classic_fwd(&p.a), ATTN_OK);
        for (i = 0; i < B * LQ; i++)
            for (d = 0; d < dh; d++) {
                const int sees = i < LQ && i != 1;
                const int want = i == LQ + 2 || (sees && (!with_u || d == 0));
                const float x = cp_c(&p, (size_t)(i * dh + d));
                cr_expect_eq(isnan(x) != 0, want, "%s/%s%s: C[row %lld][%lld] = %g", k->spec.name,
                             attn_isa_name(v->isa), with_u ? " with U" : "", (long long)i, (long long)d, (double)x);
            }
        for (d = 0; d < LK; d++)
            cr_expect(!isnan(p.wts[1 * LK + d]) && !isnan(p.wts[(LQ + 1) * LK + d]), "%s: A of a clean row is NaN",
                      k->spec.name);
        cp_free(&p);
        if (k->spec.family != ATTN_FAMILY_ADDITIVE) break;
    }
}

Test(classic, nan_reaches_only_the_rows_that_see_it)
{
    for_each_variant(KA, nan_rows);
    for_each_variant(KC, nan_rows);
}

/* U = H W_h^T given (W_h NULL) and W_h given: each within the bound of the
 * reference, and the two within twice it of each other. */
static void u_vs_w_h(const attn_kernel *k, const attn_variant *v)
{
    enum { B = 2, LQ = 9, LK = 40 };
    cprob p;
    cref r;
    float *c_w = (float *)cp_alloc((size_t)(B * LQ * k->spec.key_dim), ATTN_DTYPE_F32);
    size_t i;
    cp_init(&p, k, B, LQ, LK);
    p.seqlens[1] = 23;
    cr_assert_eq(v->classic_fwd(&p.a), ATTN_OK);
    cp_reference(&p, &r);
    cp_expect_reference(&p, &r, "W_h given");
    for (i = 0; i < p.nc; i++) c_w[i] = cp_c(&p, i);
    cref_free(&r);
    cp_use_u(&p);
    cp_fill_outputs(&p, 42.0f);
    cr_assert_eq(v->classic_fwd(&p.a), ATTN_OK);
    cp_reference(&p, &r);
    cp_expect_reference(&p, &r, "U given");
    /* (a 16-bit U is H W_h^T rounded, another input than the kernel's own
       f32 W_h h: compared with the reference alone) */
    for (i = 0; i < p.nc && k->spec.dtype_kv == ATTN_DTYPE_F32; i++)
        cr_expect(fabs((double)cp_c(&p, i) - c_w[i]) <= 2.0 * r.c_tol[i], "%s/%s: C[%zu] = %.9g with U, %.9g with W_h",
                  k->spec.name, attn_isa_name(v->isa), i, (double)cp_c(&p, i), (double)c_w[i]);
    cref_free(&r);
    free(c_w);
    cp_free(&p);
}

Test(classic, u_given_agrees_with_w_h_given)
{
    int n, ran = 0;
    for (n = 0; n < N_ALL; n++)
        if (all_kernels[n]->spec.family == ATTN_FAMILY_ADDITIVE) ran += for_each_variant(all_kernels[n], u_vs_w_h);
    cr_assert_gt(ran, 0, "no additive kernel");
}

/* ---- every classic config ------------------------------------------------ */

#define MAX_CASES 64

/* The matrix of attn_verify_default_cases for every classic kernel on every
   variant this CPU runs, each case's inputs and float64 reference built
   once for all of them; prints the worst fraction of the bound per kernel
   and variant (ATTNGEN_TEST_VERBOSE). */
Test(classic, matrix)
{
    int n, i, v, kernels = 0;
    for (n = 0; n < N_ALL; n++) {
        const attn_kernel *k = all_kernels[n];
        const attn_variant *vs[ATTN_ISA_COUNT];
        attn_verify_result res[ATTN_ISA_COUNT];
        attn_status st[ATTN_ISA_COUNT];
        double worst[ATTN_ISA_COUNT];
        attn_case cases[MAX_CASES];
        int nc, nv = 0;
        if (!is_classic(k)) continue;
        kernels++;
        for (i = 0; i < k->n_variants && nv < ATTN_ISA_COUNT; i++)
            if (attn_isa_supported(k->variants[i].isa)) {
                worst[nv] = 0.0;
                vs[nv++] = &k->variants[i];
            }
        cr_assert_gt(nv, 0, "%s: no variant this CPU runs", k->spec.name);
        nc = attn_verify_default_cases(&k->spec, cases, MAX_CASES, 1);
        cr_assert_gt(nc, 20, "%s: the case matrix is too small (%d)", k->spec.name, nc);
        for (i = 0; i < nc; i++) {
            char shape[160];
            attn_verify_case_variants(k, vs, nv, &cases[i], res, st);
            attn_verify_case_string(&cases[i], shape, sizeof shape);
            for (v = 0; v < nv; v++) {
                cr_assert_eq(st[v], ATTN_OK, "%s/%s %s: %s (%s)", k->spec.name, attn_isa_name(vs[v]->isa), shape,
                             attn_status_string(st[v]), res[v].first_failure);
                cr_expect_eq(res[v].failures, 0, "%s/%s %s: %d elements off; first: %s", k->spec.name,
                             attn_isa_name(vs[v]->isa), shape, res[v].failures, res[v].first_failure);
                if (res[v].worst_ratio > worst[v]) worst[v] = res[v].worst_ratio;
            }
        }
        if (getenv("ATTNGEN_TEST_VERBOSE") != NULL)
            for (v = 0; v < nv; v++)
                cr_log_info("%s/%s: worst error %.3g of the bound over %d cases", k->spec.name,
                            attn_isa_name(vs[v]->isa), worst[v], nc);
    }
    cr_assert_gt(kernels, 0, "no additive or luong kernel in build/kernel_list.h");
}

/* 1 and 2 threads give the same bits of C and A, on every variant. */
Test(classic, threads_bitwise)
{
    static const int64_t shapes[][3] = { { 2, 17, 113 }, { 3, 1, 300 }, { 1, 40, 7 } }; /* B, Lq, Lk */
    int n, i, s, checked = 0;
    for (n = 0; n < N_ALL; n++) {
        const attn_kernel *k = all_kernels[n];
        if (!is_classic(k)) continue;
        for (i = 0; i < k->n_variants; i++) {
            const attn_variant *v = &k->variants[i];
            if (!attn_isa_supported(v->isa)) continue;
            for (s = 0; s < 3; s++) {
                attn_case c;
                memset(&c, 0, sizeof c);
                c.batch = shapes[s][0];
                c.seq_q = shapes[s][1];
                c.seq_k = shapes[s][2];
                c.ragged = k->spec.padding;
                c.strided = s % 2;
                c.with_u = k->spec.family == ATTN_FAMILY_ADDITIVE && s == 1;
                c.seed = (uint64_t)(7 + s);
                cr_expect_eq(attn_verify_bitwise_threads(k, v, &c, 1, 2), 1,
                             "%s/%s: 1 and 2 threads differ (or a run failed) at B=%d Lq=%d Lk=%d", k->spec.name,
                             attn_isa_name(v->isa), (int)c.batch, (int)c.seq_q, (int)c.seq_k);
                checked++;
            }
        }
    }
    cr_assert_gt(checked, 0, "no classic kernel ran");
}

/* `attngen run`'s view of the families: every tensor of every table well
   formed, and the entry a spec takes picked by its condition (luong's W is
   [key_dim][query_dim] for general, [attn_dim][key_dim + query_dim] for
   concat, none for dot), with the condition's words for the messages. */
Test(classic, run_tensors_by_condition)
{
    const attn_spec add = hand_spec(ATTN_FAMILY_ADDITIVE, ATTN_SCORE_ADDITIVE, 2, 3, 4, 1);
    const attn_spec cat = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_CONCAT, 2, 3, 4, 1);
    const attn_spec gen = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_GENERAL, 2, 3, 0, 0);
    const attn_spec dot = hand_spec(ATTN_FAMILY_LUONG, ATTN_SCORE_DOT, 3, 3, 0, 0);
    attn_spec padded = add, sdpa = add;
    const attn_case_tensor *t, *w;
    char why[160];
    int f, dir, d;

    padded.padding = 1;
    sdpa.family = ATTN_FAMILY_SDPA;
    for (f = 0; f < ATTN_FAMILY_COUNT; f++)
        for (dir = 0; dir < ATTN_DIR_COUNT; dir++) {
            attn_spec s = add;
            const attn_case_ops *ops;
            s.family = (attn_family)f;
            ops = attn_case_ops_for(&s, (attn_direction)dir);
            if (ops == NULL)
                continue;
            cr_assert(ops->tensors != NULL, "%s has no tensors", ops->name);
            for (t = ops->tensors; t->opt != NULL; t++) {
                cr_expect(t->opt[0] == '-' && t->name != NULL && t->ndim >= 1 && t->ndim <= 4, "%s %s", ops->name,
                          t->opt);
                for (d = 0; d < t->ndim; d++)
                    cr_expect((int)t->dims[d] >= 0 && t->dims[d] < ATTN_DIM_COUNT, "%s %s", ops->name, t->opt);
            }
            if (dir == ATTN_DIR_FWD)
                cr_expect(attn_case_tensor_find(ops->tensors, "-o", &s)->output, "%s", ops->name);
        }
    w = attn_case_tensor_find(attn_case_ops_for(&cat, ATTN_DIR_FWD)->tensors, "--w", &cat);
    cr_assert(w != NULL);
    cr_expect_eq(attn_case_tensor_takes(w, &cat, why, sizeof why), ATTN_TAKES_REQUIRED);
    cr_expect_eq(w->dims[0], ATTN_DIM_ATTN_DIM);
    cr_expect_str_eq(attn_dim_name(w->dims[1]), "key_dim + query_dim");
    cr_expect_eq(attn_dim_value(w->dims[1], &cat, 1, 1, 1), 5);
    w = attn_case_tensor_find(attn_case_ops_for(&gen, ATTN_DIR_FWD)->tensors, "--w", &gen);
    cr_expect(w->dims[0] == ATTN_DIM_KEY_DIM && w->dims[1] == ATTN_DIM_QUERY_DIM);
    cr_expect_eq(attn_case_tensor_takes(w, &gen, why, sizeof why), ATTN_TAKES_REQUIRED);
    w = attn_case_tensor_find(attn_case_ops_for(&dot, ATTN_DIR_FWD)->tensors, "--w", &dot);
    cr_expect_eq(attn_case_tensor_takes(w, &dot, why, sizeof why), ATTN_TAKES_NOT);
    t = attn_case_tensor_find(attn_case_ops_for(&gen, ATTN_DIR_FWD)->tensors, "--b", &gen);
    cr_expect_eq(attn_case_tensor_takes(t, &gen, why, sizeof why), ATTN_TAKES_NOT);
    cr_expect_str_eq(why, "has no bias (bias = true)");
    t = attn_case_tensor_find(attn_case_ops_for(&padded, ATTN_DIR_FWD)->tensors, "--seqlens-k", &padded);
    cr_expect_eq(attn_case_tensor_takes(t, &padded, why, sizeof why), ATTN_TAKES_REQUIRED);
    cr_expect_str_eq(why, "has padding");
    cr_expect_eq(attn_case_tensor_takes(t, &add, why, sizeof why), ATTN_TAKES_NOT);
    cr_expect_str_eq(why, "has no padding");
    t = attn_case_tensor_find(attn_case_ops_for(&sdpa, ATTN_DIR_FWD)->tensors, "-o", &sdpa);
    cr_expect(t->ndim == 4 && t->dims[3] == ATTN_DIM_HEAD_DIM_V && t->store == ATTN_STORE_O);
    cr_expect_null(attn_case_tensor_find(attn_case_ops_for(&sdpa, ATTN_DIR_FWD)->tensors, "--s", &sdpa));
}
