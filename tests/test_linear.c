/*
 * test_linear.c - the linear family (kind = "linear") beyond the matrix.
 *
 * The matrix of attn_verify_default_cases runs on every linear test config
 * and ISA from tests/test_kernels.c (build/kernel_list.h lists them); here:
 * the reference on a worked example small enough to check by hand, the
 * kernels on one (D = 16), the recurrence (one token a call, or two halves,
 * carrying the state, gives what one causal call gives), rows that see no
 * key, NaN in a key, the state of a bf16 config, the argument checks and
 * the FLOP count the bench reports.  Kernels run on every ISA this CPU runs.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"

extern const attn_kernel attn_t_linear_kernel;       /* non-causal, GQA 4/2, D 59, Dv 40, padding */
extern const attn_kernel attn_t_linear_causal_kernel; /* causal, MQA 4/1, D 64, padding, tile q 24 */
extern const attn_kernel attn_t_linear_state_kernel;  /* causal, state, 2 heads, D 16 */
extern const attn_kernel attn_t_linear_bf16_kernel;   /* all bf16, state, top_left, padding */

/* ---- a problem: contiguous tensors for one kernel ------------------------ */

/* Q, K, V wanted as f32 values (q, k, v), stored in the spec's types (qs,
   ks, vs; lin_store puts the stored values back into q, k, v), O in its
   storage type (os), the state (state specs), seqlens_k = Lk for every b. */
typedef struct {
    const attn_kernel *kern;
    attn_args a;
    float *q, *k, *v, *s, *z;
    void *qs, *ks, *vs, *os;
    int32_t *seqlens;
    size_t nq, nk, nv, no, ns, nz;
} lin;

static void lin_store(lin *p)
{
    const attn_spec *s = &p->kern->spec;
    attn_verify_store(s->dtype_q, p->q, p->qs, p->nq);
    attn_verify_store(s->dtype_kv, p->k, p->ks, p->nk);
    attn_verify_store(s->dtype_kv, p->v, p->vs, p->nv);
}

static float lin_o(const lin *p, size_t i)
{
    const attn_dtype dt = p->kern->spec.dtype_o;
    float x;
    attn_verify_widen(dt, (const unsigned char *)p->os + i * attn_dtype_size(dt), &x, 1);
    return x;
}

/* splitmix64 -> roughly N(0, 1) (a sum of 4 uniforms, scaled) */
static float lin_rand(uint64_t *st)
{
    double sum = 0.0;
    int t;
    for (t = 0; t < 4; t++) {
        uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        sum += (double)(z >> 11) / 9007199254740992.0 - 0.5;
    }
    return (float)(sum * 1.7320508);
}

static void lin_init(lin *p, const attn_kernel *kern, int64_t B, int64_t lq, int64_t lk, uint64_t seed)
{
    const attn_spec *s = &kern->spec;
    size_t i;
    memset(p, 0, sizeof *p);
    p->kern = kern;
    p->a.batch = B;
    p->a.seq_q = lq;
    p->a.seq_k = lk;
    attn_args_set_contiguous(&p->a, s);
    p->nq = (size_t)(B * lq * s->heads_q * s->head_dim);
    p->nk = (size_t)(B * lk * s->heads_kv * s->head_dim);
    p->nv = (size_t)(B * lk * s->heads_kv * s->head_dim_v);
    p->no = (size_t)(B * lq * s->heads_q * s->head_dim_v);
    p->ns = (size_t)(B * s->heads_kv * s->head_dim * s->head_dim_v);
    p->nz = (size_t)(B * s->heads_kv * s->head_dim);
    p->q = calloc(p->nq + 1, sizeof(float));
    p->k = calloc(p->nk + 1, sizeof(float));
    p->v = calloc(p->nv + 1, sizeof(float));
    p->s = calloc(p->ns + 1, sizeof(float));
    p->z = calloc(p->nz + 1, sizeof(float));
    p->qs = calloc(p->nq + 1, attn_dtype_size(s->dtype_q));
    p->ks = calloc(p->nk + 1, attn_dtype_size(s->dtype_kv));
    p->vs = calloc(p->nv + 1, attn_dtype_size(s->dtype_kv));
    p->os = calloc(p->no + 1, attn_dtype_size(s->dtype_o));
    p->seqlens = calloc((size_t)B + 1, sizeof(int32_t));
    cr_assert(p->q && p->k && p->v && p->s && p->z && p->qs && p->ks && p->vs && p->os && p->seqlens);
    for (i = 0; i < p->nq; i++) p->q[i] = lin_rand(&seed);
    for (i = 0; i < p->nk; i++) p->k[i] = lin_rand(&seed);
    for (i = 0; i < p->nv; i++) p->v[i] = lin_rand(&seed);
    lin_store(p);
    for (i = 0; i < (size_t)B; i++) p->seqlens[i] = (int32_t)lk;
    p->a.q = p->qs;
    p->a.k = p->ks;
    p->a.v = p->vs;
    p->a.o = p->os;
    p->a.seqlens_k = p->seqlens;
    p->a.state_s = p->s;
    p->a.state_z = p->z;
    p->a.threads = 1;
}

static void lin_free(lin *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->s);
    free(p->z);
    free(p->qs);
    free(p->ks);
    free(p->vs);
    free(p->os);
    free(p->seqlens);
}

/* The spec of a hand-built linear kernel (the reference only). */
static attn_spec linear_spec(int hq, int hkv, int d, int dv, int causal, int state, float eps)
{
    attn_spec s;
    memset(&s, 0, sizeof s);
    s.family = ATTN_FAMILY_LINEAR;
    s.name = "hand";
    s.heads_q = hq;
    s.heads_kv = hkv;
    s.head_dim = d;
    s.head_dim_v = dv;
    s.causal = causal;
    s.state = state;
    s.eps = eps;
    s.window_left = s.window_right = -1;
    s.tile_q = s.tile_kv = 2;
    return s;
}

/* ---- the reference: a worked example ------------------------------------ */

/* D = Dv = 1, one query row phi(1) = 2, keys phi(0) = 1 and phi(1) = 2,
   values 2 and 5: O = (2*1*2 + 2*2*5) / (2*1 + 2*2 + eps) = 24 / 6 = 4. */
Test(linear_reference, worked_example)
{
    attn_spec s = linear_spec(1, 1, 1, 1, 0, 0, 1e-6f);
    float q[2] = { 1.0f, 1.0f }, k[2] = { 0.0f, 1.0f }, v[2] = { 2.0f, 5.0f }, o[2] = { 0 };
    float S = 3.0f, z = 1.0f;
    attn_args a;
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = 1;
    a.seq_k = 2;
    a.q = q;
    a.k = k;
    a.v = v;
    a.o = o;
    attn_args_set_contiguous(&a, &s);
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_float_eq(o[0], 4.0f, 1e-5f, "non-causal: got %g, want 4", (double)o[0]);

    /* eps sits in the denominator: 24 / (6 + 1) */
    s.eps = 1.0f;
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_float_eq(o[0], 24.0f / 7.0f, 1e-6f, "eps = 1: got %g, want 24/7", (double)o[0]);
    s.eps = 1e-6f;

    /* causal, two rows at positions 0 and 1: row 0 sees key 0 only,
       (2*1*2) / (2*1) = 2; row 1 sees both, 4 */
    s.causal = 1;
    a.seq_q = 2;
    attn_args_set_contiguous(&a, &s);
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_float_eq(o[0], 2.0f, 1e-5f, "causal row 0: got %g, want 2", (double)o[0]);
    cr_expect_float_eq(o[1], 4.0f, 1e-5f, "causal row 1: got %g, want 4", (double)o[1]);

    /* with a state S = 3, z = 1 before the keys: row 0 gives
       (2*3 + 2*1*2) / (2*1 + 2*1) = 10/4, row 1 (6 + 24) / (2 + 6) = 30/8;
       then S = 3 + 1*2 + 2*5 = 15 and z = 1 + 1 + 2 = 4 */
    s.state = 1;
    a.state_s = &S;
    a.state_z = &z;
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_float_eq(o[0], 2.5f, 1e-5f, "state row 0: got %g, want 2.5", (double)o[0]);
    cr_expect_float_eq(o[1], 3.75f, 1e-5f, "state row 1: got %g, want 3.75", (double)o[1]);
    cr_expect_eq(S, 15.0f, "S after: %g, want 15", (double)S);
    cr_expect_eq(z, 4.0f, "z after: %g, want 4", (double)z);

    /* top-left, Lq 2 > Lk 1 bottom-right: row 0 at position -1 sees
       nothing, O = 0 / eps = 0 (no state) */
    s.state = 0;
    a.seq_k = 1;
    attn_args_set_contiguous(&a, &s);
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_eq(o[0], 0.0f, "empty row: got %g, want 0", (double)o[0]);
    cr_expect_float_eq(o[1], 2.0f, 1e-5f, "row 1 sees key 0: got %g", (double)o[1]);
    s.top_left = 1; /* row 0 at position 0 sees key 0 */
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_expect_float_eq(o[0], 2.0f, 1e-5f, "top-left row 0: got %g, want 2", (double)o[0]);
}

/* The counts the bench and the checks use, by hand: B 1, Hq 2, Hkv 1, D 2,
   Dv 3, Lq 4, Lk 5, chunks of T = 2 rows. */
Test(linear_reference, counts_and_flops)
{
    attn_spec s = linear_spec(2, 1, 2, 3, 0, 0, 1e-6f);
    float buf[64] = { 0 };
    attn_args a;
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = 4;
    a.seq_k = 5;
    a.q = a.k = a.v = buf;
    a.o = buf;
    attn_args_set_contiguous(&a, &s);
    /* fold: 1 kv head * 2 * 5 keys * 2 * 3 = 60; rows: 2 heads * 4 rows * 2 * 2 * 3 = 96 */
    cr_expect_eq(attn_reference_linear_flops(&s, &a), 156.0);
    cr_expect_eq(attn_reference_visible_count(&s, &a), 2 * 4 * 5);
    cr_expect_eq(attn_reference_keys_read(&s, &a), 5);
    /* causal, positions i + 1: chunk rows 0-1 (positions 1, 2) score keys
       [1, 3), rows 2-3 (positions 3, 4) keys [3, 5): 2 * 2 + 2 * 2 = 8
       (row, key) pairs per head, 2 heads * 8 * 2 * (2 + 3) = 160 more */
    s.causal = 1;
    cr_expect_eq(attn_reference_linear_flops(&s, &a), 316.0);
    cr_expect_eq(attn_reference_visible_count(&s, &a), 2 * (2 + 3 + 4 + 5));
    cr_expect_eq(attn_reference_keys_read(&s, &a), 5);
    cr_expect_eq(attn_reference_key_visible(&s, &a, 0, 0, 0, 1), 1);
    cr_expect_eq(attn_reference_key_visible(&s, &a, 0, 0, 0, 2), 0);
    /* top-left, positions i: chunk 0-1 keys [0, 2), chunk 2-3 keys [2, 4) */
    s.top_left = 1;
    cr_expect_eq(attn_reference_linear_flops(&s, &a), 156.0 + 2 * 8 * 2 * 5);
    s.family = ATTN_FAMILY_SDPA;
    cr_expect_eq(attn_reference_linear_flops(&s, &a), -1.0);
}

/* ---- the argument checks ------------------------------------------------- */

Test(linear_entry, state_pointers_are_required_and_lse_ignored)
{
    const attn_kernel *K = &attn_t_linear_state_kernel;
    lin p;
    attn_args a;
    float lse[64];
    size_t i;
    lin_init(&p, K, 1, 3, 3, 1);
    a = p.a;
    a.state_s = NULL;
    cr_expect_eq(K->fwd(&a), ATTN_ERR_NULL_ARG);
    a = p.a;
    a.state_z = NULL;
    cr_expect_eq(K->fwd(&a), ATTN_ERR_NULL_ARG);
    /* the sdpa-only fields are ignored: an LSE buffer stays untouched, a
       bad dropout_p and a missing mask are no errors */
    a = p.a;
    for (i = 0; i < 64; i++) lse[i] = 42.0f;
    a.lse = lse;
    a.dropout_p = 7.0f;
    a.mask = NULL;
    cr_expect_eq(K->fwd(&a), ATTN_OK);
    for (i = 0; i < 64; i++) cr_expect_eq(lse[i], 42.0f, "LSE[%zu] was written", i);
    /* a kernel without state does not need them */
    lin_free(&p);
    lin_init(&p, &attn_t_linear_causal_kernel, 1, 3, 3, 1);
    p.a.state_s = NULL;
    p.a.state_z = NULL;
    cr_expect_eq(attn_t_linear_causal_kernel.fwd(&p.a), ATTN_OK);
    p.a.seqlens_k = NULL;
    cr_expect_eq(attn_t_linear_causal_kernel.fwd(&p.a), ATTN_ERR_NULL_ARG);
    lin_free(&p);
}

/* ---- the kernels --------------------------------------------------------- */

/* Runs f(kernel, variant) for every variant this CPU runs. */
#define FOR_EACH_VARIANT(K, v)                                   \
    for (v = (K)->variants; v < (K)->variants + (K)->n_variants; v++) \
        if (attn_isa_supported(v->isa))

/* D = 16 (t_linear_state), q = 0 (phi = 1), keys 0 (phi = 1) and 1 (phi =
   2), values 1 and 4, zero state: row 0 sees key 0, O = 16 / 16 = 1; row 1
   sees both, (16 * 1 + 32 * 4) / (16 + 32) = 3; then z = 1 + 2 = 3 and
   S = 1 * 1 + 2 * 4 = 9 in every element. */
Test(linear_kernel, worked_example)
{
    const attn_kernel *K = &attn_t_linear_state_kernel;
    const attn_spec *s = &K->spec;
    const attn_variant *v;
    int checked = 0;
    FOR_EACH_VARIANT(K, v) {
        lin p;
        int64_t h, d;
        lin_init(&p, K, 1, 2, 2, 1);
        memset(p.q, 0, p.nq * sizeof(float));
        for (d = 0; d < (int64_t)p.nk; d++) p.k[d] = d < s->heads_kv * s->head_dim ? 0.0f : 1.0f;
        for (d = 0; d < (int64_t)p.nv; d++) p.v[d] = d < s->heads_kv * s->head_dim_v ? 1.0f : 4.0f;
        lin_store(&p);
        cr_assert_eq(v->fwd(&p.a), ATTN_OK);
        for (h = 0; h < s->heads_q; h++)
            for (d = 0; d < s->head_dim_v; d++) {
                const float o0 = lin_o(&p, (size_t)(h * s->head_dim_v + d));
                const float o1 = lin_o(&p, (size_t)((s->heads_q + h) * s->head_dim_v + d));
                cr_expect_float_eq(o0, 1.0f, 1e-5f, "%s: row 0 head %lld: %g, want 1", attn_isa_name(v->isa),
                                   (long long)h, (double)o0);
                cr_expect_float_eq(o1, 3.0f, 1e-5f, "%s: row 1 head %lld: %g, want 3", attn_isa_name(v->isa),
                                   (long long)h, (double)o1);
            }
        for (d = 0; d < (int64_t)p.nz; d++)
            cr_expect_float_eq(p.z[d], 3.0f, 1e-6f, "%s: z[%lld] = %g, want 3", attn_isa_name(v->isa),
                               (long long)d, (double)p.z[d]);
        for (d = 0; d < (int64_t)p.ns; d++)
            cr_expect_float_eq(p.s[d], 9.0f, 1e-5f, "%s: S[%lld] = %g, want 9", attn_isa_name(v->isa),
                               (long long)d, (double)p.s[d]);
        lin_free(&p);
        checked++;
    }
    cr_assert_gt(checked, 0);
}

/* A call on positions [t0, t1) of p's sequence into o_out (O of the whole
   sequence, in O's storage type), carrying p's state: Lq = Lk = t1 - t0 (so
   row i is at position i of the call, bottom-right and top-left alike),
   with seqlens_k clipped to what each batch has left. */
static attn_status call_range(const attn_variant *v, const lin *p, int64_t t0, int64_t t1, const int32_t *len)
{
    const attn_spec *s = &p->kern->spec;
    const size_t qe = attn_dtype_size(s->dtype_q), ke = attn_dtype_size(s->dtype_kv), oe = attn_dtype_size(s->dtype_o);
    int32_t sl[8];
    attn_args a = p->a;
    int64_t b;
    a.seq_q = a.seq_k = t1 - t0;
    a.q = (const unsigned char *)p->qs + (size_t)(t0 * a.q_stride[1]) * qe;
    a.k = (const unsigned char *)p->ks + (size_t)(t0 * a.k_stride[1]) * ke;
    a.v = (const unsigned char *)p->vs + (size_t)(t0 * a.v_stride[1]) * ke;
    a.o = (unsigned char *)p->os + (size_t)(t0 * a.o_stride[1]) * oe;
    for (b = 0; b < a.batch && b < 8; b++) {
        const int64_t left = len[b] - t0;
        sl[b] = (int32_t)(left < 0 ? 0 : left > t1 - t0 ? t1 - t0 : left);
    }
    a.seqlens_k = sl;
    return v->fwd(&a);
}

/* O and the state of the kernel called in pieces (cut: the lengths of the
   pieces, 0-terminated) == one call on the whole sequence, within twice
   the tolerance (each is within it of the exact result). */
static void recurrence(const attn_kernel *K, int64_t B, int64_t L, const int64_t *cut, const int32_t *len)
{
    const attn_spec *s = &K->spec;
    const attn_variant *v;
    int checked = 0;
    cr_assert(s->causal && s->state && B <= 8);
    FOR_EACH_VARIANT(K, v) {
        const int64_t *piece = cut;
        lin whole, parts;
        attn_args ra;
        double *s_abs, *z_abs;
        float *s0, *z0;
        int64_t t, b;
        size_t i;
        lin_init(&whole, K, B, L, L, 11);
        lin_init(&parts, K, B, L, L, 11);
        s0 = malloc(whole.ns * sizeof *s0 + 1);
        z0 = malloc(whole.nz * sizeof *z0 + 1);
        s_abs = malloc(whole.ns * sizeof *s_abs + 1);
        z_abs = malloc(whole.nz * sizeof *z_abs + 1);
        cr_assert(s0 && z0 && s_abs && z_abs);
        /* a state to start from: of 5 earlier keys (the reference's, on
           whole's first 5 tokens) */
        ra = whole.a;
        ra.q = whole.q;
        ra.k = whole.k;
        ra.v = whole.v;
        ra.o = malloc(whole.no * sizeof(float) + 1);
        ra.seq_q = ra.seq_k = 5;
        for (b = 0; b < B; b++) whole.seqlens[b] = 5;
        cr_assert_eq(attn_reference(s, &ra), ATTN_OK);
        free(ra.o);
        memcpy(s0, whole.s, whole.ns * sizeof *s0);
        memcpy(z0, whole.z, whole.nz * sizeof *z0);
        memcpy(parts.s, s0, whole.ns * sizeof *s0);
        memcpy(parts.z, z0, whole.nz * sizeof *z0);
        for (b = 0; b < B; b++) whole.seqlens[b] = len[b];

        cr_assert_eq(call_range(v, &whole, 0, L, len), ATTN_OK);
        for (t = 0; t < L;) {
            const int64_t n = *piece ? *piece++ : 1;
            const int64_t t1 = t + n < L ? t + n : L;
            cr_assert_eq(call_range(v, &parts, t, t1, len), ATTN_OK);
            t = t1;
        }
        for (i = 0; i < whole.no; i++) {
            const double x = lin_o(&parts, i), r = lin_o(&whole, i);
            cr_assert(fabs(x - r) <= 2 * ATTN_REF_TOL_O(s, r), "%s: O[%zu]: pieces %.9g, one call %.9g",
                      attn_isa_name(v->isa), i, x, r);
        }
        /* the state: within twice ATTN_REF_TOL_STATE of the terms' sums */
        ra = whole.a;
        ra.k = whole.k;
        ra.v = whole.v;
        cr_assert_eq(attn_reference_linear_state_bound(s, &ra, s0, z0, s_abs, z_abs), 0);
        for (i = 0; i < whole.ns; i++)
            cr_assert(fabs((double)parts.s[i] - whole.s[i]) <= 2 * ATTN_REF_TOL_STATE(s_abs[i]),
                      "%s: S[%zu]: pieces %.9g, one call %.9g", attn_isa_name(v->isa), i, (double)parts.s[i],
                      (double)whole.s[i]);
        for (i = 0; i < whole.nz; i++)
            cr_assert(fabs((double)parts.z[i] - whole.z[i]) <= 2 * ATTN_REF_TOL_STATE(z_abs[i]),
                      "%s: z[%zu]: pieces %.9g, one call %.9g", attn_isa_name(v->isa), i, (double)parts.z[i],
                      (double)whole.z[i]);
        free(s0);
        free(z0);
        free(s_abs);
        free(z_abs);
        lin_free(&whole);
        lin_free(&parts);
        checked++;
    }
    cr_assert_gt(checked, 0);
}

Test(linear_kernel, one_token_a_call_is_one_causal_call)
{
    const int64_t cut[] = { 0 }; /* pieces of 1 */
    const int32_t len[2] = { 41, 41 };
    recurrence(&attn_t_linear_state_kernel, 2, 41, cut, len);
}

Test(linear_kernel, two_halves_are_one_call)
{
    const int64_t cut[] = { 20, 21, 0 };
    const int32_t len[2] = { 41, 41 };
    recurrence(&attn_t_linear_state_kernel, 2, 41, cut, len);
}

Test(linear_kernel, odd_pieces_across_chunks_are_one_call)
{
    const int64_t cut[] = { 3, 17, 1, 33, 2, 0 }; /* then pieces of 1 */
    const int32_t len[1] = { 70 };
    recurrence(&attn_t_linear_state_kernel, 1, 70, cut, len);
}

/* bf16 storage with state, top-left positions and padding: batch 1's
   sequence ends at 13, after which its rows see only the state. */
Test(linear_kernel, bf16_state_recurrence)
{
    const int64_t cut[] = { 0 };
    const int32_t len[2] = { 29, 13 };
    recurrence(&attn_t_linear_bf16_kernel, 2, 29, cut, len);
}

Test(linear_kernel, bf16_state_two_halves)
{
    const int64_t cut[] = { 15, 14, 0 };
    const int32_t len[2] = { 29, 13 };
    recurrence(&attn_t_linear_bf16_kernel, 2, 29, cut, len);
}

/* Rows that see no key (and no state) give exactly 0, NaN-filled K/V rows
   past seqlens_k notwithstanding: causal rows before the first key (Lq >
   Lk), and every row of a batch with seqlens_k = 0. */
static void empty_rows(const attn_kernel *K)
{
    const attn_spec *s = &K->spec;
    const attn_variant *v;
    FOR_EACH_VARIANT(K, v) {
        lin p;
        const int64_t lq = 9, lk = 4;
        int64_t b, i, h, d;
        lin_init(&p, K, 2, lq, lk, 3);
        p.seqlens[1] = 0;
        for (i = 0; i < (int64_t)p.nk / 2; i++) p.k[p.nk / 2 + (size_t)i] = NAN; /* batch 1's keys */
        for (i = 0; i < (int64_t)p.nv / 2; i++) p.v[p.nv / 2 + (size_t)i] = NAN;
        lin_store(&p);
        cr_assert_eq(v->fwd(&p.a), ATTN_OK);
        for (b = 0; b < 2; b++)
            for (i = 0; i < lq; i++)
                for (h = 0; h < s->heads_q; h++)
                    for (d = 0; d < s->head_dim_v; d++) {
                        const size_t at = (size_t)(((b * lq + i) * s->heads_q + h) * s->head_dim_v + d);
                        const float x = lin_o(&p, at);
                        const int empty = b == 1 || (s->causal && i + lk - lq < 0);
                        if (empty)
                            cr_assert_eq(x, 0.0f, "%s: O[b=%lld][i=%lld][h=%lld][d=%lld] = %g, want 0",
                                         attn_isa_name(v->isa), (long long)b, (long long)i, (long long)h,
                                         (long long)d, (double)x);
                        else
                            cr_assert(isfinite(x), "%s: O[b=%lld][i=%lld] = %g", attn_isa_name(v->isa),
                                      (long long)b, (long long)i, (double)x);
                    }
        lin_free(&p);
    }
}

Test(linear_kernel, empty_rows_are_zero_causal) { empty_rows(&attn_t_linear_causal_kernel); }
Test(linear_kernel, empty_rows_are_zero_noncausal) { empty_rows(&attn_t_linear_kernel); }

/* A NaN in one element of key j reaches every row that sees key j (all of
   its O), and no other row. */
static void nan_key(const attn_kernel *K, int64_t j)
{
    const attn_spec *s = &K->spec;
    const attn_variant *v;
    FOR_EACH_VARIANT(K, v) {
        lin p;
        const int64_t lq = 53, lk = 53;
        int64_t i, h, d;
        lin_init(&p, K, 1, lq, lk, 5);
        p.k[(size_t)(j * s->heads_kv * s->head_dim + 3)] = NAN; /* key j, kv head 0, d 3 */
        lin_store(&p);
        cr_assert_eq(v->fwd(&p.a), ATTN_OK);
        for (i = 0; i < lq; i++)
            for (h = 0; h < s->heads_q; h++) {
                /* kv head 0 serves the first heads_q / heads_kv query heads */
                const int sees = h < s->heads_q / s->heads_kv && (!s->causal || j <= i + lk - lq);
                for (d = 0; d < s->head_dim_v; d++) {
                    const float x = lin_o(&p, (size_t)((i * s->heads_q + h) * s->head_dim_v + d));
                    cr_assert_eq(isnan(x) != 0, sees, "%s: O[i=%lld][h=%lld][d=%lld] = %g (NaN in key %lld)",
                                 attn_isa_name(v->isa), (long long)i, (long long)h, (long long)d, (double)x,
                                 (long long)j);
                }
            }
        if (s->state) /* z[3] and S[3][*] of kv head 0 only */
            for (d = 0; d < (int64_t)p.ns; d++) {
                const int bad = d / s->head_dim_v == 3;
                cr_assert_eq(isnan(p.s[d]) != 0, bad, "%s: S[%lld] = %g", attn_isa_name(v->isa), (long long)d,
                             (double)p.s[d]);
            }
        lin_free(&p);
    }
}

Test(linear_kernel, nan_in_a_key_causal) { nan_key(&attn_t_linear_causal_kernel, 30); }
Test(linear_kernel, nan_in_a_key_noncausal) { nan_key(&attn_t_linear_kernel, 30); }
Test(linear_kernel, nan_in_a_key_state) { nan_key(&attn_t_linear_state_kernel, 17); }
