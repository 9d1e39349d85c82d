/*
 * test_kernels.c - every generated kernel against the naive reference.
 *
 * The kernels come from configs/ (presets and configs/test/): the Makefile
 * writes build/kernel_list.h with one KERNEL(name) line per config, so this
 * file never lists them by hand.  For each kernel and each ISA this CPU
 * runs, the matrix of attn_verify_default_cases (docs/testing.md: head
 * dims of the config, sequence lengths on, below and above the tiles,
 * Lq < Lk and Lq > Lk, strided tensors with NaN-filled gaps, ragged
 * seqlens_k with NaN past them, 1 and 2 threads, every tensor against a
 * guard page, every tensor in the storage type of the config) must agree
 * with the reference, run on the stored inputs, within the tolerance of
 * O's storage type (ATTN_REF_TOL, attn_reference.h).
 * Criterion runs each test in its own process, so a guard-page fault fails
 * only that test, and ATTNGEN_ISA can be set per test.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"
#include "attn_cases_qkv.h"
#include "verify_variants.h"

#define MAX_CASES 64

static const attn_variant *find_variant(const attn_kernel *k, attn_isa isa)
{
    int i;
    for (i = 0; i < k->n_variants; i++)
        if (k->variants[i].isa == isa) return &k->variants[i];
    return NULL;
}

/* Runs the quick matrix of a kernel on the nv variants vs, the inputs and
 * the float64 reference of each case built once for all of them (a
 * reference per variant took most of the presets' time); every failure is
 * reported with the variant, the case, the element and both values. */
static void run_matrix_on(const attn_kernel *k, const attn_variant *const *vs, int nv)
{
    attn_case cases[MAX_CASES];
    int n, i;

    /* additive and luong kernels take attn_classic_args: tests/test_classic.c */
    if (k->fwd == NULL) cr_skip_test("%s: a classic kernel (tests/test_classic.c runs it)", k->spec.name);
    n = attn_verify_default_cases(&k->spec, cases, MAX_CASES, 1);
    cr_assert_gt(n, 10, "%s: the case matrix is too small (%d)", k->spec.name, n);
    for (i = 0; i < n; i++) expect_case_on_variants(k, vs, nv, &cases[i]);
}

/* The quick matrix of a kernel on one ISA. */
static void run_matrix(const attn_kernel *k, attn_isa isa)
{
    const attn_variant *v = find_variant(k, isa);
    if (!v) cr_skip_test("%s: the config does not list %s", k->spec.name, attn_isa_name(isa));
    if (!attn_isa_supported(isa)) cr_skip_test("%s: this CPU cannot run %s", k->spec.name, attn_isa_name(isa));
    run_matrix_on(k, &v, 1);
}

/* The quick matrix of a kernel on every variant this CPU runs. */
static void run_matrix_variants(const attn_kernel *k)
{
    const attn_variant *vs[MAX_VARIANTS];
    if (k->fwd == NULL) cr_skip_test("%s: a classic kernel (tests/test_classic.c runs it)", k->spec.name);
    run_matrix_on(k, vs, runnable_variants(k, vs));
}

/* 1 and 2 threads give the same bits of O as stored (docs/c-api.md): every
   variant of a test config; of a preset, the first (best) variant this CPU
   runs, unless make test-full (runs_long_cases): the split of work and the
   merge are the config's, the same code on every ISA, and a preset's scalar
   variant at its model shape would take most of this test's time. */
static void run_bitwise(const attn_kernel *k)
{
    int i, checked = 0;
    if (k->fwd == NULL) cr_skip_test("%s: a classic kernel (tests/test_classic.c runs it)", k->spec.name);
    for (i = 0; i < k->n_variants; i++) {
        const attn_variant *v = &k->variants[i];
        attn_case c;
        if (!attn_isa_supported(v->isa)) continue;
        if (checked > 0 && !runs_long_cases(&k->spec)) break;
        memset(&c, 0, sizeof c);
        c.batch = 2;
        c.seq_q = 3 * k->spec.tile_q + 5;
        c.seq_k = 2 * k->spec.tile_kv + 7;
        c.ragged = k->spec.padding;
        c.seed = 7;
        if (k->spec.dropout) {
            c.dropout_p = 0.2f;
            c.dropout_seed = 0x0123456789abcdefu;
            c.dropout_offset = 5;
        }
        cr_expect_eq(attn_verify_bitwise_threads(k, v, &c, 1, 2), 1,
                     "%s/%s: 1 and 2 threads differ (or a run failed)", k->spec.name, attn_isa_name(v->isa));
        checked++;
    }
    cr_assert_gt(checked, 0, "%s: no runnable variant", k->spec.name);
}

/* every variant this CPU runs (AVX512-BF16 for configs with matmul =
   "bf16", AVX-512, AVX2, scalar) in one test */
#define KERNEL(name)                                                   \
    extern const attn_kernel attn_##name##_kernel;                     \
    Test(name, variants) { run_matrix_variants(&attn_##name##_kernel); } \
    Test(name, threads_bitwise) { run_bitwise(&attn_##name##_kernel); }
#include "kernel_list.h"
#undef KERNEL

/* ---- behaviour of the entry point, on one small config ------------------ */

extern const attn_kernel attn_t_padding_causal_kernel;
#define K (&attn_t_padding_causal_kernel)

/* Contiguous tensors for K's spec: Q, K and V wanted as f32 values (q, k,
   v), stored in the spec's types (a.q, a.k, a.v: problem_store narrows
   them and puts the stored values back into q, k, v, so those are what
   the kernel reads), O in its storage type (a.o; o_value widens). */
typedef struct {
    attn_args a;
    float *q, *k, *v, *lse;
    void *qs, *ks, *vs, *os;
    int32_t *seqlens;
    size_t nq, nk, nv, no;
} problem;

static void problem_store(problem *p)
{
    const attn_spec *s = &K->spec;
    attn_verify_store(s->dtype_q, p->q, p->qs, p->nq);
    attn_verify_store(s->dtype_kv, p->k, p->ks, p->nk);
    attn_verify_store(s->dtype_kv, p->v, p->vs, p->nv);
}

/* O element i as f32, and element i set to x (narrowed) */
static float o_value(const problem *p, int64_t i)
{
    const attn_dtype dt = K->spec.dtype_o;
    float x;
    attn_verify_widen(dt, (const unsigned char *)p->os + (size_t)i * attn_dtype_size(dt), &x, 1);
    return x;
}

static void o_set(problem *p, int64_t i, float x)
{
    const attn_dtype dt = K->spec.dtype_o;
    attn_verify_narrow(dt, &x, (unsigned char *)p->os + (size_t)i * attn_dtype_size(dt), 1);
}

static void problem_init(problem *p, int64_t lq, int64_t lk)
{
    const attn_spec *s = &K->spec;
    size_t i;
    memset(p, 0, sizeof *p);
    p->a.batch = 2;
    p->a.seq_q = lq;
    p->a.seq_k = lk;
    attn_args_set_contiguous(&p->a, s);
    p->nq = (size_t)(2 * lq * s->heads_q * s->head_dim);
    p->nk = (size_t)(2 * lk * s->heads_kv * s->head_dim);
    p->nv = (size_t)(2 * lk * s->heads_kv * s->head_dim_v);
    p->no = (size_t)(2 * lq * s->heads_q * s->head_dim_v);
    p->q = calloc(p->nq + 1, sizeof(float));
    p->k = calloc(p->nk + 1, sizeof(float));
    p->v = calloc(p->nv + 1, sizeof(float));
    p->qs = calloc(p->nq + 1, attn_dtype_size(s->dtype_q));
    p->ks = calloc(p->nk + 1, attn_dtype_size(s->dtype_kv));
    p->vs = calloc(p->nv + 1, attn_dtype_size(s->dtype_kv));
    p->os = calloc(p->no + 1, attn_dtype_size(s->dtype_o));
    p->lse = calloc((size_t)(2 * s->heads_q * lq) + 1, sizeof(float));
    p->seqlens = calloc(2, sizeof(int32_t));
    cr_assert(p->q && p->k && p->v && p->qs && p->ks && p->vs && p->os && p->lse && p->seqlens);
    for (i = 0; i < p->nq; i++) p->q[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (i = 0; i < p->nk; i++) p->k[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    for (i = 0; i < p->nv; i++) p->v[i] = (float)((i * 3) % 17) / 17.0f - 0.5f;
    problem_store(p);
    p->seqlens[0] = (int32_t)lk;
    p->seqlens[1] = (int32_t)(lk / 2);
    p->a.q = p->qs;
    p->a.k = p->ks;
    p->a.v = p->vs;
    p->a.o = p->os;
    p->a.lse = p->lse;
    p->a.seqlens_k = p->seqlens;
}

static void problem_free(problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->qs);
    free(p->ks);
    free(p->vs);
    free(p->os);
    free(p->lse);
    free(p->seqlens);
}

Test(entry, bad_arguments_give_statuses)
{
    problem p;
    attn_args a;
    problem_init(&p, 5, 9);
    cr_expect_eq(K->fwd(NULL), ATTN_ERR_NULL_ARG);
    a = p.a; a.q = NULL;          cr_expect_eq(K->fwd(&a), ATTN_ERR_NULL_ARG);
    a = p.a; a.o = NULL;          cr_expect_eq(K->fwd(&a), ATTN_ERR_NULL_ARG);
    a = p.a; a.seqlens_k = NULL;  cr_expect_eq(K->fwd(&a), ATTN_ERR_NULL_ARG);
    a = p.a; a.seq_q = -1;        cr_expect_eq(K->fwd(&a), ATTN_ERR_SHAPE);
    a = p.a; a.batch = -3;        cr_expect_eq(K->fwd(&a), ATTN_ERR_SHAPE);
    a = p.a; a.k_stride[1] = -1;  cr_expect_eq(K->fwd(&a), ATTN_ERR_STRIDE);
    a = p.a; a.threads = -1;      cr_expect_eq(K->fwd(&a), ATTN_ERR_THREADS);
    p.seqlens[1] = 10;            cr_expect_eq(K->fwd(&p.a), ATTN_ERR_SEQLENS);
    p.seqlens[1] = -1;            cr_expect_eq(K->fwd(&p.a), ATTN_ERR_SEQLENS);
    p.seqlens[1] = 4;             cr_expect_eq(K->fwd(&p.a), ATTN_OK);
    problem_free(&p);
}

/* The weights' strides are checked like the others', only where P is written:
   a spec with weights and a non-NULL args->weights. */
extern const attn_kernel attn_t_weights_causal_gqa_kernel;
Test(entry, weights_strides_are_checked)
{
    const attn_kernel *W = &attn_t_weights_causal_gqa_kernel;
    problem p;
    attn_args a;
    float w[1];
    problem_init(&p, 5, 9);
    a = p.a;
    attn_args_set_contiguous(&a, &W->spec);
    a.weights = w;
    cr_expect_eq(attn_check_args(&W->spec, &a), ATTN_OK);
    a.weights_stride[3] = -1;
    cr_expect_eq(attn_check_args(&W->spec, &a), ATTN_ERR_STRIDE);
    cr_expect_eq(W->fwd(&a), ATTN_ERR_STRIDE);
    a.weights_stride[3] = 1;
    a.weights_stride[0] = -7;
    cr_expect_eq(W->fwd(&a), ATTN_ERR_STRIDE);
    cr_expect_eq(attn_check_args(&K->spec, &a), ATTN_OK); /* a kernel without weights ignores them */
    a.weights = NULL;
    cr_expect_eq(attn_check_args(&W->spec, &a), ATTN_OK); /* not wanted in this call */
    problem_free(&p);
}

Test(entry, empty_shapes_are_fine)
{
    problem p;
    int64_t i;
    problem_init(&p, 4, 6);
    p.a.batch = 0;
    cr_expect_eq(K->fwd(&p.a), ATTN_OK);
    p.a.batch = 2;
    p.a.seq_q = 0;
    cr_expect_eq(K->fwd(&p.a), ATTN_OK);
    /* no keys at all: every row is empty, O = 0 and LSE = -inf */
    p.a.seq_q = 4;
    p.seqlens[0] = p.seqlens[1] = 0;
    for (i = 0; i < 2 * 4 * K->spec.heads_q * K->spec.head_dim_v; i++) o_set(&p, i, 42.0f);
    cr_assert_eq(K->fwd(&p.a), ATTN_OK);
    for (i = 0; i < 2 * 4 * K->spec.heads_q * K->spec.head_dim_v; i++)
        cr_assert_eq(o_value(&p, i), 0.0f, "O[%lld] = %g, want 0", (long long)i, (double)o_value(&p, i));
    for (i = 0; i < 2 * K->spec.heads_q * 4; i++)
        cr_assert(isinf(p.lse[i]) && p.lse[i] < 0, "LSE[%lld] = %g, want -inf", (long long)i, (double)p.lse[i]);
    problem_free(&p);
}

Test(entry, attngen_isa_forces_a_variant)
{
    problem p;
    problem_init(&p, 3, 5);
    setenv("ATTNGEN_ISA", "scalar", 1);
    cr_expect_eq(K->fwd(&p.a), ATTN_OK);
    problem_free(&p);
}

Test(entry, decode_prefetch_follows_the_environment)
{
    setenv("ATTNGEN_DECODE_PREFETCH", "0", 1);
    cr_expect_eq(attn_cpu()->decode_prefetch, 0);
}

Test(entry, decode_prefetch_can_be_forced_on)
{
    setenv("ATTNGEN_DECODE_PREFETCH", "1", 1);
    cr_expect_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L1);
}

Test(entry, decode_prefetch_can_be_forced_into_l2)
{
    setenv("ATTNGEN_DECODE_PREFETCH", "2", 1);
    cr_expect_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L2);
}

/* A value that is not one of the settings leaves the CPU's default, one of them. */
Test(entry, decode_prefetch_ignores_an_unknown_level)
{
    setenv("ATTNGEN_DECODE_PREFETCH", "3", 1);
    cr_expect_geq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_NONE);
    cr_expect_leq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L2);
}

/* The streaming decode kernels of an f32 cache hold a one-key and a two-key
 * step, the runtime choosing by CPU (attn_cpu()->decode_key_pairs); the matrix of each
 * kernel runs this CPU's choice, these the other one too, on every x86 variant
 * this CPU runs, with the streaming kernel taking all the rows it holds
 * (attn_cpu()->decode_stream_rows): Llama-3-8B (4 rows a kv head) and GPT-2 (MHA: the
 * two-key step at 3 and 4 query rows). */
/* The matrices of n kernels on every x86 variant this CPU runs, one
   reference a case for all of them (skipped without one). */
static void run_on_x86(const attn_kernel *const *ks, size_t n)
{
    const attn_isa isas[] = { ATTN_ISA_AVX512, ATTN_ISA_AVX2 };
    size_t i, j;
    int ran = 0;
    for (i = 0; i < n; i++) {
        const attn_variant *vs[2];
        int nv = 0;
        for (j = 0; j < sizeof isas / sizeof *isas; j++) {
            const attn_variant *v = find_variant(ks[i], isas[j]);
            if (v && attn_isa_supported(isas[j])) vs[nv++] = v;
        }
        if (nv > 0) run_matrix_on(ks[i], vs, nv);
        ran += nv;
    }
    if (ran == 0) cr_skip_test("this CPU runs neither AVX-512 nor AVX2");
}

static void run_stream_steps(const char *pairs)
{
    const attn_kernel *ks[] = { &attn_llama3_8b_kernel, &attn_gpt2_kernel };
    setenv("ATTNGEN_DECODE_KEY_PAIRS", pairs, 1);
    setenv("ATTNGEN_DECODE_STREAM_ROWS", "4", 1); /* every row count the streaming kernel holds */
    cr_assert_eq(attn_cpu()->decode_key_pairs, atoi(pairs));
    run_on_x86(ks, sizeof ks / sizeof *ks);
}

Test(entry, streaming_decode_one_key_a_step)
{
    run_stream_steps("0");
}

Test(entry, streaming_decode_two_keys_a_step)
{
    run_stream_steps("1");
}

/* Kernels with O in whole f32 vectors store it past the caches when it is
 * large (attn_stream_output): the linear family and the sdpa prefill path.  The
 * matrix of each kernel runs the small shapes, stored through the caches;
 * these run it streamed on every x86 variant this CPU runs, then through the
 * caches whatever the size.  Linear: Dv 40 and 72 stream on AVX2 only, 64 and
 * 16 on AVX-512 too.  sdpa: Dv 16, 64 and 512 on both, 24, 40 and 72 on AVX2
 * only, 20 on neither; the kernels cover the sparse patterns' panel pass,
 * weights, dropout, chunks, windows and masks. */
extern const attn_kernel attn_t_linear_kernel, attn_t_linear_causal_kernel, attn_t_linear_state_kernel,
    attn_t_linear_f16_kernel, attn_t_sparse_strided_kernel, attn_t_sparse_fixed_kernel,
    attn_t_weights_causal_gqa_kernel, attn_t_dropout_causal_gqa_kernel, attn_t_window_right_kernel,
    attn_t_odd_dims_kernel, attn_t_dv512_kernel, attn_t_chunk_kernel, attn_t_tile48_kernel;
static const attn_kernel *const linear_output_kernels[] = {
    &attn_t_linear_kernel, &attn_t_linear_causal_kernel, &attn_t_linear_state_kernel, &attn_t_linear_f16_kernel };
static const attn_kernel *const sdpa_output_kernels[] = {
    &attn_t_sparse_strided_kernel, &attn_t_sparse_fixed_kernel, &attn_t_weights_causal_gqa_kernel,
    &attn_t_dropout_causal_gqa_kernel, &attn_t_window_right_kernel, &attn_t_odd_dims_kernel, &attn_t_dv512_kernel,
    &attn_t_chunk_kernel, &attn_t_tile48_kernel };
#define RUN_OUTPUT(ks, stream) (setenv("ATTNGEN_STREAM_OUTPUT", (stream), 1), run_on_x86((ks), sizeof(ks) / sizeof *(ks)))

Test(entry, linear_output_streamed_past_the_caches)
{
    RUN_OUTPUT(linear_output_kernels, "1");
}

Test(entry, linear_output_through_the_caches)
{
    RUN_OUTPUT(linear_output_kernels, "0");
}

Test(entry, sdpa_output_streamed_past_the_caches)
{
    RUN_OUTPUT(sdpa_output_kernels, "1");
}

Test(entry, sdpa_output_through_the_caches)
{
    RUN_OUTPUT(sdpa_output_kernels, "0");
}

/* Streaming needs O and its strides in whole vectors and, by default, an O of
 * at least ATTN_STREAM_OUTPUT_BYTES; 0 and 1 in the environment force it. */
Test(entry, output_streams_when_large_and_aligned)
{
    static float o[64] __attribute__((aligned(64)));
    const int64_t whole[3] = { 4096 * 512, 512, 64 }, odd[3] = { 4096 * 520, 520, 65 };
    cr_expect_eq(attn_stream_output(o, whole, sizeof(float), ATTN_STREAM_OUTPUT_BYTES, 64), 1);
    cr_expect_eq(attn_stream_output(o, whole, sizeof(float), ATTN_STREAM_OUTPUT_BYTES - 4, 64), 0);
    cr_expect_eq(attn_stream_output(o + 4, whole, sizeof(float), ATTN_STREAM_OUTPUT_BYTES, 64), 0);
    cr_expect_eq(attn_stream_output(o + 8, whole, sizeof(float), ATTN_STREAM_OUTPUT_BYTES, 32), 1);
    cr_expect_eq(attn_stream_output(o, odd, sizeof(float), ATTN_STREAM_OUTPUT_BYTES, 64), 0);
}

Test(entry, output_streaming_can_be_forced_either_way)
{
    static float o[64] __attribute__((aligned(64)));
    const int64_t whole[3] = { 1024, 64, 16 };
    setenv("ATTNGEN_STREAM_OUTPUT", "1", 1);
    cr_expect_eq(attn_stream_output(o, whole, sizeof(float), 256, 64), 1, "small O, forced");
    cr_expect_eq(attn_stream_output(o + 1, whole, sizeof(float), 256, 64), 0, "never where unaligned");
}

Test(entry, output_streaming_can_be_turned_off)
{
    static float o[64] __attribute__((aligned(64)));
    const int64_t whole[3] = { 4096 * 512, 512, 64 };
    setenv("ATTNGEN_STREAM_OUTPUT", "0", 1);
    cr_expect_eq(attn_stream_output(o, whole, sizeof(float), 2 * ATTN_STREAM_OUTPUT_BYTES, 64), 0);
}

/* Variant lists for the dispatch tests: only .isa matters to attn_pick_variant. */
static const attn_variant BF16_FIRST[] = { { ATTN_ISA_AVX512BF16, NULL, NULL }, { ATTN_ISA_AVX512, NULL, NULL },
                                           { ATTN_ISA_AVX2, NULL, NULL }, { ATTN_ISA_SCALAR, NULL, NULL } };
static const attn_variant BF16_ALONE[] = { { ATTN_ISA_AVX512BF16, NULL, NULL }, { ATTN_ISA_SCALAR, NULL, NULL } };

/* The first variant of the list this CPU runs: what the dispatch takes when bf16 products are preferred. */
static attn_isa first_supported(const attn_variant *v, int n)
{
    int i;
    for (i = 0; i < n && !attn_isa_supported(v[i].isa); i++) continue;
    cr_assert_lt(i, n);
    return v[i].isa;
}

Test(entry, bf16_products_can_be_passed_over)
{
    const attn_variant *v;
    setenv("ATTNGEN_BF16_DOT", "0", 1);
    cr_assert_eq(attn_cpu()->bf16_dot, 0);
    v = attn_pick_variant(BF16_FIRST, 4);
    cr_assert_not_null(v);
    /* avx512 (f32 products) wherever the CPU runs it, never avx512bf16 */
    cr_expect_neq(v->isa, ATTN_ISA_AVX512BF16);
    cr_expect_eq(v->isa, first_supported(BF16_FIRST + 1, 3), "picked %s", attn_isa_name(v->isa));
    /* without an avx512 variant to take instead, the bf16 one stays the best */
    v = attn_pick_variant(BF16_ALONE, 2);
    cr_assert_not_null(v);
    cr_expect_eq(v->isa, first_supported(BF16_ALONE, 2), "picked %s", attn_isa_name(v->isa));
}

Test(entry, bf16_products_can_be_preferred)
{
    const attn_variant *v;
    setenv("ATTNGEN_BF16_DOT", "1", 1);
    cr_assert_eq(attn_cpu()->bf16_dot, 1);
    v = attn_pick_variant(BF16_FIRST, 4);
    cr_assert_not_null(v);
    cr_expect_eq(v->isa, first_supported(BF16_FIRST, 4), "picked %s", attn_isa_name(v->isa));
}

Test(entry, attngen_isa_forces_bf16_products_still)
{
    const attn_variant *v;
    setenv("ATTNGEN_BF16_DOT", "0", 1);
    setenv("ATTNGEN_ISA", "avx512bf16", 1);
    v = attn_pick_variant(BF16_FIRST, 4);
    if (attn_isa_supported(ATTN_ISA_AVX512BF16)) {
        cr_assert_not_null(v);
        cr_expect_eq(v->isa, ATTN_ISA_AVX512BF16);
    } else {
        cr_expect_null(v); /* forced but not run here: an error, not another variant */
    }
}

/* The blocked decode kernel with each of its prefetches (the matrix of each
 * kernel runs with this CPU's default), on the best ISA of a GQA preset. */
static void run_blocked_decode(const char *prefetch)
{
    const attn_kernel *k = &attn_llama3_8b_kernel;
    int i;
    setenv("ATTNGEN_DECODE_PREFETCH", prefetch, 1);
    cr_assert_eq(attn_cpu()->decode_prefetch, atoi(prefetch));
    for (i = 0; i < k->n_variants && !attn_isa_supported(k->variants[i].isa); i++) continue;
    cr_assert_lt(i, k->n_variants);
    run_matrix(k, k->variants[i].isa);
}

Test(entry, blocked_decode_without_prefetch) /* as on Intel CPUs */
{
    run_blocked_decode("0");
}

Test(entry, blocked_decode_prefetching_into_l1)
{
    run_blocked_decode("1");
}

Test(entry, blocked_decode_prefetching_into_l2) /* as on AMD Zen 4 and 5 */
{
    run_blocked_decode("2");
}

/* The blocked decode kernel splits a kv head's rows that take two P*V calls
 * widest first or, where the runtime says so (attn_cpu()->decode_even_rows: AMD Zen
 * 4 and 5), in even halves; the matrix of each kernel runs this CPU's choice, these
 * both on every x86 variant this CPU runs: Llama-3-8B's 8 rows a kv head at
 * Lq 2 (6 + 2 or 4 + 4). */
static void run_pv_split(const char *even)
{
    const attn_kernel *ks[] = { &attn_llama3_8b_kernel };
    setenv("ATTNGEN_DECODE_EVEN_ROWS", even, 1);
    cr_assert_eq(attn_cpu()->decode_even_rows, atoi(even));
    run_on_x86(ks, sizeof ks / sizeof *ks);
}

Test(entry, blocked_decode_rows_widest_first)
{
    run_pv_split("0");
}

Test(entry, blocked_decode_rows_in_even_halves) /* as on AMD Zen 4 and 5 */
{
    run_pv_split("1");
}

Test(entry, unknown_attngen_isa_is_an_error)
{
    problem p;
    problem_init(&p, 3, 5);
    setenv("ATTNGEN_ISA", "sse9", 1);
    cr_expect_eq(K->fwd(&p.a), ATTN_ERR_ISA);
    problem_free(&p);
}

Test(entry, nan_in_a_query_reaches_only_its_row)
{
    problem p;
    const attn_spec *s = &K->spec;
    const int64_t row = s->head_dim_v * s->heads_q; /* O elements per query row */
    int64_t i;
    problem_init(&p, 6, 6);
    p.q[2 * s->heads_q * s->head_dim] = NAN; /* batch 0, row 2, head 0, d 0 */
    problem_store(&p);
    cr_assert_eq(K->fwd(&p.a), ATTN_OK);
    for (i = 0; i < 6 * row; i++) {
        const int head0_row2 = i / row == 2 && (i % row) / s->head_dim_v == 0;
        cr_expect_eq(isnan(o_value(&p, i)) != 0, head0_row2, "O[%lld] = %g", (long long)i, (double)o_value(&p, i));
    }
    problem_free(&p);
}

Test(entry, nan_in_a_visible_value_is_not_dropped)
{
    problem p;
    const attn_spec *s = &K->spec;
    problem_init(&p, 6, 6);
    p.v[0] = NAN; /* batch 0, key 0, kv head 0: every row of heads in its group sees key 0 */
    problem_store(&p);
    cr_assert_eq(K->fwd(&p.a), ATTN_OK);
    cr_expect(isnan(o_value(&p, (int64_t)5 * s->heads_q * s->head_dim_v)), "the last row of head 0 sees key 0");
    problem_free(&p);
}

/* Q x 1e4 (|Q| <= 5000: representable in every storage type, rounded to
   it); the reference on the stored values, the tolerance of O's type. */
Test(entry, large_logits_do_not_overflow)
{
    problem p;
    const attn_spec *s = &K->spec;
    attn_args ra;
    float *want;
    size_t i;
    problem_init(&p, 9, 9);
    for (i = 0; i < p.nq; i++) p.q[i] *= 1e4f;
    problem_store(&p);
    want = malloc(sizeof(float) * p.no + 1);
    cr_assert(want);
    cr_assert_eq(K->fwd(&p.a), ATTN_OK);
    ra = p.a;
    ra.q = p.q;
    ra.k = p.k;
    ra.v = p.v;
    ra.o = want;
    ra.lse = NULL;
    cr_assert_eq(attn_reference(s, &ra), ATTN_OK);
    for (i = 0; i < p.no; i++) {
        const float got = o_value(&p, (int64_t)i);
        cr_assert(!isnan(got) && !isinf(got), "O[%zu] = %g", i, (double)got);
        cr_expect(fabs((double)got - want[i]) <= ATTN_REF_TOL_O(s, want[i]), "O[%zu] (%s): got %g, want %g",
                  i, attn_dtype_name(s->dtype_o), (double)got, (double)want[i]);
    }
    free(want);
    problem_free(&p);
}

/* ---- the decode path: few query rows against long caches ---------------- */

extern const attn_kernel attn_t_everything_kernel, attn_t_d111_mqa_window_kernel, attn_t_bool_mask_kernel,
    attn_llama3_8b_kernel;

/* Each Lq of lqs against each cache of lks keys (32768 only for Lq 1 and
 * 16), ragged batches where the config pads, on every ISA this CPU runs. */
static void run_decode_shapes(const attn_kernel *k, const int64_t *lqs, int nlq, const int64_t *lks, int nlk)
{
    const attn_variant *vs[MAX_VARIANTS];
    const int nv = runnable_variants(k, vs);
    int a, b;
    for (a = 0; a < nlq; a++)
        for (b = 0; b < nlk; b++) {
            attn_case c;
            if (lks[b] == 32768 && lqs[a] != 1 && lqs[a] != 16) continue;
            memset(&c, 0, sizeof c);
            c.batch = lks[b] > 4099 ? 1 : 2;
            c.seq_q = lqs[a];
            c.seq_k = lks[b];
            c.ragged = k->spec.padding;
            c.strided = (a + b) % 2;
            c.threads = 1 + (a + b) % 2;
            c.seed = (uint64_t)(100 * a + b + 1);
            if (k->spec.dropout) {
                c.dropout_p = 0.2f;
                c.dropout_seed = c.seed * 0x9e3779b97f4a7c15u;
                c.dropout_offset = (uint32_t)(a + b);
            }
            expect_case_on_variants(k, vs, nv, &c); /* one reference for every variant */
        }
}

/* Lq in {1, 2, 3, 7, 16} against caches of {1, 17, 113, 1025, 4099} keys
 * (and 32768 for Lq 1 and 16): Lq <= 16 takes the decode path (split KV
 * merged by LSE, all query heads of a kv head together). */
static void run_decode(const attn_kernel *k)
{
    static const int64_t lqs[] = { 1, 2, 3, 7, 16 };
    static const int64_t lks[] = { 1, 17, 113, 1025, 4099, 32768 };
    run_decode_shapes(k, lqs, 5, lks, 6);
}

Test(decode, everything) { run_decode(&attn_t_everything_kernel); }
Test(decode, mqa_window) { run_decode(&attn_t_d111_mqa_window_kernel); }
Test(decode, bool_mask) { run_decode(&attn_t_bool_mask_kernel); }
Test(decode, padding_causal) { run_decode(&attn_t_padding_causal_kernel); }

/* The attention weights on the decode path: a left window of 51 keys (at 4099
   and 32768 keys almost every block is hidden, and its weights must be 0),
   and ragged padding with GQA (0 past seqlens_k). */
extern const attn_kernel attn_t_weights_decode_kernel;
Test(decode, weights_window) { run_decode(&attn_t_weights_decode_kernel); }
Test(decode, weights_padding) { run_decode(&attn_t_weights_causal_gqa_kernel); }

/* Dropout (dropout_p = 0.2) on the decode path: with the weights written,
   and with ragged padding and GQA. */
extern const attn_kernel attn_t_dropout_decode_kernel, attn_t_dropout_causal_gqa_kernel;
Test(decode, dropout_weights_window) { run_decode(&attn_t_dropout_decode_kernel); }
Test(decode, dropout_padding) { run_decode(&attn_t_dropout_causal_gqa_kernel); }

/* Attention sinks on the decode path, added once at the merge of the
   splits: with the weights, dropout and ragged padding (the blocked kernel),
   and with the temperature, a window and a bf16 cache (the streaming kernel
   where this CPU takes it; both kernels: run_decode_stream_rows below). */
extern const attn_kernel attn_t_sinks_kernel, attn_t_temperature_kernel;
Test(decode, sinks_weights_padding) { run_decode(&attn_t_sinks_kernel); }
Test(decode, temperature_sinks_window) { run_decode(&attn_t_temperature_kernel); }

/* RoPE on the decode path: Llama 3's scaled frequencies on 48 of 64 dims
   (neox pairs) with ragged padding and GQA; gptj pairs on an f16 cache
   (t_f16_cache); gptj from the caller's table at top-left positions
   (t_top_left).  At 32768 keys the last row's angles reach 32767 radians,
   where angles formed in f32 are off by ~1e-3 and fail the bound. */
extern const attn_kernel attn_t_rope_kernel;
Test(decode, rope_llama3_partial) { run_decode(&attn_t_rope_kernel); }

/* A row that sees no key gives O = 0 and LSE = the head's sink, exactly, and
   weights of 0, on the prefill path (Lq 40) and the decode path (Lq 1, 3):
   batch 0 has no valid key, and with 5 valid keys in batch 1 the first
   Lq - 5 rows sit before position 0.  Without sinks the call is refused. */
static void sinks_rows_without_keys(const attn_kernel *k, const attn_variant *v, int64_t lq)
{
    const attn_spec *s = &k->spec;
    const int64_t lk = 7, nq = 2 * lq * s->heads_q * s->head_dim, nk = 2 * lk * s->heads_kv * s->head_dim;
    const int64_t no = 2 * lq * s->heads_q * s->head_dim_v, np = 2 * s->heads_q * lq * lk;
    float *q = malloc(sizeof(float) * (size_t)nq), *kk = malloc(sizeof(float) * (size_t)nk);
    float *vv = malloc(sizeof(float) * (size_t)nk), *o = malloc(sizeof(float) * (size_t)no);
    float *lse = malloc(sizeof(float) * (size_t)(2 * s->heads_q * lq)), *p = malloc(sizeof(float) * (size_t)np);
    float sinks[16];
    int32_t seqlens[2] = { 0, 5 };
    attn_args a;
    int64_t b, h, i, d, j;
    cr_assert(q && kk && vv && o && lse && p && s->heads_q <= 16);
    for (i = 0; i < nq; i++) q[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (i = 0; i < nk; i++) kk[i] = vv[i] = (float)((i * 13) % 7) / 7.0f - 0.5f;
    for (h = 0; h < s->heads_q; h++) sinks[h] = 0.75f * (float)h - 1.5f;
    memset(&a, 0, sizeof a);
    a.batch = 2;
    a.seq_q = lq;
    a.seq_k = lk;
    attn_args_set_contiguous(&a, s);
    a.q = q;
    a.k = kk;
    a.v = vv;
    a.o = o;
    a.lse = lse;
    a.seqlens_k = seqlens;
    a.weights = p;
    a.sinks = NULL;
    a.threads = 1;
    cr_assert_eq(v->fwd(&a), ATTN_ERR_NULL_ARG, "%s: sinks NULL", attn_isa_name(v->isa));
    a.sinks = sinks;
    cr_assert_eq(v->fwd(&a), ATTN_OK);
    for (b = 0; b < 2; b++)
        for (h = 0; h < s->heads_q; h++)
            for (i = 0; i < (b == 0 ? lq : lq - 5); i++) {
                const float *orow = o + ((b * lq + i) * s->heads_q + h) * s->head_dim_v;
                const float *prow = p + ((b * s->heads_q + h) * lq + i) * lk;
                for (d = 0; d < s->head_dim_v; d++)
                    cr_expect(orow[d] == 0.0f, "%s Lq %lld: O[b=%lld][i=%lld][h=%lld][d=%lld] = %g, want 0",
                              attn_isa_name(v->isa), (long long)lq, (long long)b, (long long)i, (long long)h,
                              (long long)d, (double)orow[d]);
                cr_expect(lse[(b * s->heads_q + h) * lq + i] == sinks[h], "%s Lq %lld: LSE[b=%lld][h=%lld][i=%lld] = %g, want the sink %g",
                          attn_isa_name(v->isa), (long long)lq, (long long)b, (long long)h, (long long)i,
                          (double)lse[(b * s->heads_q + h) * lq + i], (double)sinks[h]);
                for (j = 0; j < lk; j++)
                    cr_expect(prow[j] == 0.0f, "%s: P[b=%lld][h=%lld][i=%lld][j=%lld] = %g, want 0", attn_isa_name(v->isa),
                              (long long)b, (long long)h, (long long)i, (long long)j, (double)prow[j]);
            }
    free(q);
    free(kk);
    free(vv);
    free(o);
    free(lse);
    free(p);
}

Test(sinks, a_row_without_keys_gives_zero_and_the_sink)
{
    const attn_kernel *k = &attn_t_sinks_kernel;
    int i, checked = 0;
    for (i = 0; i < k->n_variants; i++) {
        const attn_variant *v = &k->variants[i];
        if (!attn_isa_supported(v->isa)) continue;
        sinks_rows_without_keys(k, v, 40);
        sinks_rows_without_keys(k, v, 1);
        sinks_rows_without_keys(k, v, 8);
        checked++;
    }
    cr_assert_gt(checked, 0);
}

/* Chunks of 16 keys with global tokens (at 4099 and 32768 keys, most splits
   and blocks lie outside every row's chunk), and top-left positions (every
   row near the start of a long cache). */
extern const attn_kernel attn_t_chunk_kernel, attn_t_top_left_kernel;
Test(decode, chunk) { run_decode(&attn_t_chunk_kernel); }
Test(decode, top_left) { run_decode(&attn_t_top_left_kernel); }

/* Sparse patterns: strided (stride 8, 3 query heads a kv head: the streaming
   path at Lq = 1, the blocked one above) and fixed (one summary key per block
   of 16, global tokens, 2 query heads a kv head, the entropy written: the
   blocked path); every block past the first few holds single visible keys of
   each row. */
extern const attn_kernel attn_t_sparse_strided_kernel, attn_t_sparse_fixed_kernel;
Test(decode, sparse_strided) { run_decode(&attn_t_sparse_strided_kernel); }
Test(decode, sparse_fixed) { run_decode(&attn_t_sparse_fixed_kernel); }

/* Each row's entropy on the decode path: a sliding window of 37 keys (most
   splits of a long cache hidden: 0 in their mean score's weight), ragged
   padding, GQA, ALiBi and an f16 cache, the splits' sums merged by LSE. */
extern const attn_kernel attn_t_entropy_kernel;
Test(decode, entropy) { run_decode(&attn_t_entropy_kernel); }

/* 16-bit caches on the decode path: the blocked kernel's scores with a vector
   of rows a kv head widen each key's values a vector at a time (Lq 3 of the
   f16 cache's group of 4; Lq 7 of bf16's group of 2, D = 72, and Lq 16 of the
   MHA f16 config, D = 59: the last values of D in part of a vector). */
extern const attn_kernel attn_t_f16_cache_kernel, attn_t_bf16_all_kernel, attn_t_f16_odd_kernel;
Test(decode, f16_cache) { run_decode(&attn_t_f16_cache_kernel); }
Test(decode, bf16_all) { run_decode(&attn_t_bf16_all_kernel); }
Test(decode, f16_odd) { run_decode(&attn_t_f16_odd_kernel); }

/* Learned relative position biases: T5's unidirectional buckets with causal,
   GQA and ragged padding (the exact, logarithmic and last buckets within 40
   keys, the last one for every key of a long cache), and Shaw et al.'s
   clipped distances in a two-sided window behind a bias tensor, over an f16
   cache. */
extern const attn_kernel attn_t_rel_t5_kernel, attn_t_rel_clipped_kernel;
Test(decode, rel_t5) { run_decode(&attn_t_rel_t5_kernel); }
Test(decode, rel_clipped) { run_decode(&attn_t_rel_clipped_kernel); }

/* shared_kv on the decode path: V read from the first Dv values of each K
   row (args->v NULL) by the streaming and the blocked kernels, on an f32
   cache with a window, a mask and the weights, on an f16 cache, on q8_0 and
   q4_0 blocks, and at MLA's D 576 / Dv 512 with 8 query heads on one latent
   head (caches up to 4099 keys: its reference costs D + Dv a score). */
extern const attn_kernel attn_t_shared_kv_kernel, attn_t_shared_kv_q8_kernel, attn_t_shared_kv_q4_kernel,
    attn_t_mla_kernel, attn_t_shared_kv_f16_kernel;
Test(decode, shared_kv) { run_decode(&attn_t_shared_kv_kernel); }
Test(decode, shared_kv_f16) { run_decode(&attn_t_shared_kv_f16_kernel); }
Test(decode, shared_kv_q8_0) { run_decode(&attn_t_shared_kv_q8_kernel); }
Test(decode, shared_kv_q4_0) { run_decode(&attn_t_shared_kv_q4_kernel); }
Test(decode, shared_kv_mla)
{
    /* Lq 4, 7 and 16: the avx512bf16 variant's bf16 pair class on 32, 56 and 128 rows, in blocks
       of 256, 128 and 64 keys */
    static const int64_t lqs[] = { 1, 2, 4, 7, 16 };
    static const int64_t lks[] = { 1, 17, 113, 1025, 4099 };
    run_decode_shapes(&attn_t_mla_kernel, lqs, 5, lks, 5);
}

/* The decode path's class of bf16 pair products (from a panel of 32 rows a kv head, where the
   avx512bf16 variant calls the avx512 variant's decode unit; t_mla's Lq 4-16 above take it
   too): every other mask rule, and a window, global tokens, softcap, the weights, dropout and
   the entropy, which work on the f32 scores it shares with the panels, at Lq 8 and 16 of a
   group of 4 (32 and 64 rows) */
extern const attn_kernel attn_t_bf16_dot_masks_kernel, attn_t_dropout_weights_bf16_kernel;
Test(decode, bf16_pairs)
{
    static const int64_t lqs[] = { 8, 16 };
    static const int64_t lks[] = { 17, 1025, 4099 };
    run_decode_shapes(&attn_t_bf16_dot_masks_kernel, lqs, 2, lks, 3);
    run_decode_shapes(&attn_t_dropout_weights_bf16_kernel, lqs, 2, lks, 3);
}

/* uniform in [-1, 1) from a 64-bit LCG */
static float lcg_unit(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    return (float)((double)(*seed >> 40) / 8388608.0 - 1.0);
}

/* The reference with shared_kv reads V row j from the first Dv values of K
   row j: it equals the reference without it on a V tensor copied from
   there, exactly (and never reads args->v, here NULL). */
Test(shared_kv, reference_reads_v_from_the_k_rows)
{
    enum { LQ = 5, LK = 9, HQ = 4, HKV = 2, D = 12, DV = 8 };
    static float q[LQ * HQ * D], k[LK * HKV * D], v[LK * HKV * DV], o1[LQ * HQ * DV], o2[LQ * HQ * DV];
    static float lse1[HQ * LQ], lse2[HQ * LQ];
    attn_spec s;
    attn_args a;
    uint64_t seed = 99;
    int i, d;
    memset(&s, 0, sizeof s);
    s.family = ATTN_FAMILY_SDPA;
    s.name = "shared_kv_reference";
    s.heads_q = HQ;
    s.heads_kv = HKV;
    s.head_dim = D;
    s.head_dim_v = DV;
    s.causal = 1;
    s.window_left = -1;
    s.window_right = 0;
    s.scale = 0.3f;
    s.shared_kv = 1;
    for (i = 0; i < LQ * HQ * D; i++) q[i] = lcg_unit(&seed);
    for (i = 0; i < LK * HKV * D; i++) k[i] = lcg_unit(&seed);
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = LQ;
    a.seq_k = LK;
    attn_args_set_contiguous(&a, &s);
    a.q = q;
    a.k = k;
    a.v = NULL;
    a.o = o1;
    a.lse = lse1;
    a.threads = 1;
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    for (i = 0; i < LK * HKV; i++)
        for (d = 0; d < DV; d++) v[i * DV + d] = k[i * D + d];
    s.shared_kv = 0;
    attn_args_set_contiguous(&a, &s);
    a.v = v;
    a.o = o2;
    a.lse = lse2;
    cr_assert_eq(attn_reference(&s, &a), ATTN_OK);
    cr_assert(memcmp(o1, o2, sizeof o1) == 0, "O differs from the reference on V copied from K");
    cr_assert(memcmp(lse1, lse2, sizeof lse1) == 0, "LSE differs from the reference on V copied from K");
    /* and without shared_kv the V pointer is required */
    a.v = NULL;
    cr_assert_eq(attn_check_args(&s, &a), ATTN_ERR_NULL_ARG);
    s.shared_kv = 1;
    cr_assert_eq(attn_check_args(&s, &a), ATTN_OK);
}

/* The streaming kernel takes up to attn_cpu()->decode_stream_rows query rows a kv
   head (4, or 1 on AMD Zen 4, and on Zen 5 where the blocked kernel has the
   half-width pairs), the blocked kernel the rest; the matrices
   above run this CPU's choice, these the others: the blocked kernel at every
   row count (0: one row of MHA too) and the streaming kernel at all it holds
   (4), on configs with every score term, the weights, a sparse pattern, MHA
   (one row at Lq 1), a 16-bit cache, sinks with the temperature, T5's relative position bias, and
   RoPE. */
static void run_decode_stream_rows(const char *rows)
{
    const attn_kernel *ks[] = { &attn_t_everything_kernel, &attn_t_bool_mask_kernel, &attn_t_weights_decode_kernel,
                                &attn_t_sparse_strided_kernel, &attn_t_f16_cache_kernel, &attn_t_temperature_kernel,
                                &attn_t_rel_t5_kernel, &attn_t_rope_kernel };
    size_t i;
    setenv("ATTNGEN_DECODE_STREAM_ROWS", rows, 1);
    cr_assert_eq(attn_cpu()->decode_stream_rows[0], atoi(rows));
    cr_assert_eq(attn_cpu()->decode_stream_rows[1], atoi(rows));
    for (i = 0; i < sizeof ks / sizeof *ks; i++) run_decode(ks[i]);
}
Test(decode, blocked_kernel_at_every_row_count) { run_decode_stream_rows("0"); }
Test(decode, streaming_kernel_up_to_four_rows) { run_decode_stream_rows("4"); }

/* The blocked kernel scores up to a quarter of a vector of rows a kv head
   (AVX-512: 1 to 4) in pairs of D on half-width vectors where
   attn_cpu()->decode_half_pairs says so (AMD Zen 4 and 5), else by dot products; the
   matrices above run this CPU's choice, these both, with the blocked kernel
   at every row count: GQA groups of 2 and 3 (Lq 1 and 2 of t_everything, Lq 1
   of t_sparse_strided), MHA at Lq 1, 2 and 3, and Llama-3-8B's matrix (Lq 1
   against up to 113 keys) on each x86 variant with the next block prefetched
   into L2, inside the pairs kernels. */
static void run_decode_half_pairs(const char *half)
{
    const attn_kernel *ks[] = { &attn_t_everything_kernel, &attn_t_sparse_strided_kernel, &attn_t_bool_mask_kernel };
    const attn_kernel *llama[] = { &attn_llama3_8b_kernel };
    size_t i;
    setenv("ATTNGEN_DECODE_STREAM_ROWS", "0", 1);
    setenv("ATTNGEN_DECODE_HALF_PAIRS", half, 1);
    setenv("ATTNGEN_DECODE_PREFETCH", "2", 1);
    cr_assert_eq(attn_cpu()->decode_stream_rows[1], 0);
    cr_assert_eq(attn_cpu()->decode_half_pairs, atoi(half));
    cr_assert_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L2);
    for (i = 0; i < sizeof ks / sizeof *ks; i++) run_decode(ks[i]);
    run_on_x86(llama, 1);
}
Test(decode, quarter_vector_rows_by_dot_products) { run_decode_half_pairs("0"); }
Test(decode, quarter_vector_rows_in_half_width_pairs) { run_decode_half_pairs("1"); }

/* Where the cache is f32 and D = Dv is a multiple of 8 cache lines, the
   blocked kernel asks for its next block inside its kernels: the score kernels
   (every row class; panels through their own instance, qkpf) and, for one
   vector of rows a kv head in pairs of D and for panels (AVX-512), the P*V
   kernels too.  Its group of 4 at Lq 1-5, 8 and 16 covers each class (a
   quarter, half and one vector of rows, one panel and two) against blocks of
   every length and a last one cut short, with the prefetch into L2 forced
   (as on AMD Zen 4 and 5), the rows of two P*V calls in even halves and not;
   and the Gemma-2-9B preset (D = 256, 16 lines a row, a group of 2) at Lq 8
   and 16 (one vector of rows, one panel). */
extern const attn_kernel attn_t_decode_d128_kernel, attn_gemma2_9b_global_kernel;
static void run_decode_prefetch_inside(const char *even)
{
    static const int64_t lqs[] = { 1, 2, 3, 4, 5, 8, 16 }, lks[] = { 17, 113, 1025, 4099 };
    static const int64_t glqs[] = { 8, 16 }, glks[] = { 113, 1025 };
    setenv("ATTNGEN_DECODE_STREAM_ROWS", "0", 1);
    setenv("ATTNGEN_DECODE_PREFETCH", "2", 1);
    setenv("ATTNGEN_DECODE_EVEN_ROWS", even, 1);
    cr_assert_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L2);
    cr_assert_eq(attn_cpu()->decode_even_rows, atoi(even));
    run_decode_shapes(&attn_t_decode_d128_kernel, lqs, 7, lks, 4);
    run_decode_shapes(&attn_gemma2_9b_global_kernel, glqs, 2, glks, 2);
}
Test(decode, prefetch_inside_kernels_widest_first) { run_decode_prefetch_inside("0"); }
Test(decode, prefetch_inside_kernels_in_even_halves) { run_decode_prefetch_inside("1"); }

/* ---- the reference's masks against masks written out by hand ------------ */

/* One mask: the rules (a one-head spec), the shape (lk_b < 0: no padding)
   and the expected rows, '1' where query row i sees key j. */
typedef struct {
    const char *what;
    int causal, top_left, left, right, chunk, global;
    int64_t lq, lk;
    int32_t lk_b;
    const char *rows[8];
} mask_case;

/* A sparse pattern (attn_sparse_kind), its stride or block, and its summary. */
typedef struct {
    int kind, period, summary;
} sparse_rule;

typedef struct {
    mask_case m;
    sparse_rule s;
} sparse_mask_case;

/* Row i of the reference's visibility: a keep-mask that keeps only (i, j)
   makes attn_reference_visible_count 1 when the rules show key j, else 0. */
static void reference_row(const mask_case *m, const sparse_rule *sp, int64_t i, char *row)
{
    attn_spec spec;
    attn_args a;
    float q[8] = { 0 }, kv[8] = { 0 }, o[8] = { 0 };
    uint8_t keep[64];
    int32_t seqlens[1];
    int64_t j;
    memset(&spec, 0, sizeof spec);
    spec.family = ATTN_FAMILY_SDPA;
    spec.name = "mask";
    spec.heads_q = spec.heads_kv = spec.head_dim = spec.head_dim_v = 1;
    spec.causal = m->causal;
    spec.top_left = m->top_left;
    spec.window_left = m->left;
    spec.window_right = m->causal ? 0 : m->right;
    spec.chunk = m->chunk;
    if (sp) {
        spec.sparse = (attn_sparse_kind)sp->kind;
        spec.sparse_stride = sp->kind == ATTN_SPARSE_STRIDED ? sp->period : 0;
        spec.sparse_block = sp->kind == ATTN_SPARSE_FIXED ? sp->period : 0;
        spec.sparse_summary = sp->summary;
    }
    spec.global_tokens = m->global;
    spec.padding = m->lk_b >= 0;
    spec.mask = ATTN_MASK_BOOL;
    spec.scale = 1.0f;
    spec.tile_q = spec.tile_kv = 16;
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = m->lq;
    a.seq_k = m->lk;
    attn_args_set_contiguous(&a, &spec);
    a.q = q;
    a.k = kv;
    a.v = kv;
    a.o = o;
    seqlens[0] = m->lk_b;
    a.seqlens_k = seqlens;
    a.mask = keep;
    for (j = 0; j < m->lk; j++) {
        int64_t n;
        memset(keep, 0, sizeof keep);
        keep[i * m->lk + j] = 1;
        n = attn_reference_visible_count(&spec, &a);
        cr_assert(n == 0 || n == 1, "%s: visible count %lld", m->what, (long long)n);
        row[j] = n ? '1' : '0';
    }
    row[m->lk] = '\0';
}

/* PyTorch's is_causal is torch.ones(Lq, Lk).tril() (top-left); FlashAttention-2's
   causal is bottom-right; Llama 4's chunked causal mask in transformers keeps key
   k for query q when k <= q and k // C == q // C.  The Sparse Transformer's strided
   and fixed patterns (Child et al. 2019) keep key j for query i when j <= i and
   (i - j < l or (i - j) % l == 0), resp. (j // l == i // l or j % l >= l - c).  The
   rest follow docs/config.md. */
/* T5's buckets (Hugging Face's _relative_position_bucket) at distances
   rel = j - p, worked out from the formula: with n = |rel| (bidirectional,
   the side rel > 0 offset by half the buckets) or max(-rel, 0), and nb the
   buckets of a direction, max_exact = nb / 2: n below max_exact is its own
   bucket, else max_exact + trunc(ln(n / max_exact) / ln(max_distance /
   max_exact) * (nb - max_exact)), at most nb - 1.  32 buckets, 128
   (bidirectional: nb = 16, max_exact = 8; ln(n / 8) / ln(16) * 8 reaches 1
   at n = 12 (8 * 16^(1/8) = 11.3), 2 at 16, 3 at 23, 4 at 32, 5 at 46, 6 at 64,
   7 at 91); unidirectional: nb = 32, max_exact = 16, ln(n / 16) / ln(8) * 16
   reaches 1 at 19, 2 at 21, 15 at 113.  Clipped, k = 3: clamp(rel, -3, 3) + 3. */
Test(reference, rel_bias_buckets)
{
    static const struct { int64_t rel; int64_t bi, uni; } t5[] = {
        { 0, 0, 0 },      { -1, 1, 1 },     { 1, 17, 0 },      { -7, 7, 7 },      { 7, 23, 0 },
        { -8, 8, 8 },     { 8, 24, 0 },     { -11, 8, 11 },    { -12, 9, 12 },    { 12, 25, 0 },
        { -15, 9, 15 },   { -16, 10, 16 },  { 16, 26, 0 },     { -18, 10, 16 },   { -19, 10, 17 },
        { -21, 10, 18 },  { -22, 10, 18 },  { -23, 11, 18 },   { 31, 27, 0 },     { -32, 12, 21 },
        { -45, 12, 23 },  { -46, 13, 24 },  { 64, 30, 0 },     { -64, 14, 26 },   { -90, 14, 29 },
        { -91, 15, 29 },  { -112, 15, 30 }, { -113, 15, 31 },  { -127, 15, 31 },  { -128, 15, 31 },
        { 128, 31, 0 },   { -100000, 15, 31 }, { 100000, 31, 0 },
    };
    static const struct { int64_t rel, row; } clipped[] = { { -100, 0 }, { -4, 0 }, { -3, 0 }, { -1, 2 }, { 0, 3 },
                                                            { 2, 5 },    { 3, 6 },  { 4, 6 },  { 1 << 30, 6 } };
    attn_spec bi, uni, cl;
    size_t i;
    memset(&bi, 0, sizeof bi);
    bi.rel_bias = ATTN_REL_T5;
    bi.rel_buckets = 32;
    bi.rel_max_distance = 128;
    uni = bi;
    bi.rel_bidirectional = 1;
    memset(&cl, 0, sizeof cl);
    cl.rel_bias = ATTN_REL_CLIPPED;
    cl.rel_max_distance = 3;
    cl.rel_buckets = 7;
    for (i = 0; i < sizeof t5 / sizeof *t5; i++) {
        cr_expect_eq(attn_reference_rel_bucket(&bi, t5[i].rel), t5[i].bi, "bidirectional, rel %lld: got %lld, want %lld",
                     (long long)t5[i].rel, (long long)attn_reference_rel_bucket(&bi, t5[i].rel), (long long)t5[i].bi);
        cr_expect_eq(attn_reference_rel_bucket(&uni, t5[i].rel), t5[i].uni,
                     "unidirectional, rel %lld: got %lld, want %lld", (long long)t5[i].rel,
                     (long long)attn_reference_rel_bucket(&uni, t5[i].rel), (long long)t5[i].uni);
    }
    for (i = 0; i < sizeof clipped / sizeof *clipped; i++)
        cr_expect_eq(attn_reference_rel_bucket(&cl, clipped[i].rel), clipped[i].row, "clipped, rel %lld",
                     (long long)clipped[i].rel);
}

/* A config with rel_bias needs its table: NULL is ATTN_ERR_NULL_ARG. */
Test(entry, rel_table_is_required)
{
    const attn_kernel *k = &attn_t_rel_t5_kernel;
    attn_args a;
    float q[4 * 16] = { 0 }, kv[2 * 16] = { 0 }, o[4 * 16], rel[16 * 4] = { 0 };
    int32_t len = 1;
    memset(&a, 0, sizeof a);
    a.batch = a.seq_q = a.seq_k = 1;
    attn_args_set_contiguous(&a, &k->spec);
    a.q = q;
    a.k = a.v = kv;
    a.o = o;
    a.seqlens_k = &len;
    cr_expect_eq(k->fwd(&a), ATTN_ERR_NULL_ARG);
    a.rel_table = rel;
    cr_expect_eq(k->fwd(&a), ATTN_OK);
}

Test(reference, masks_written_out)
{
    static const mask_case cases[] = {
        { "top-left causal (is_causal), 3 x 5", 1, 1, -1, -1, 0, 0, 3, 5, -1, { "10000", "11000", "11100" } },
        { "bottom-right causal, 3 x 5", 1, 0, -1, -1, 0, 0, 3, 5, -1, { "11100", "11110", "11111" } },
        { "top-left causal, 3 x 5, Lk_b = 2", 1, 1, -1, -1, 0, 0, 3, 5, 2, { "10000", "11000", "11000" } },
        { "bottom-right causal, 3 x 5, Lk_b = 2", 1, 0, -1, -1, 0, 0, 3, 5, 2, { "00000", "10000", "11000" } },
        { "top-left causal, 4 x 2", 1, 1, -1, -1, 0, 0, 4, 2, -1, { "10", "11", "11", "11" } },
        { "bottom-right causal, 4 x 2", 1, 0, -1, -1, 0, 0, 4, 2, -1, { "00", "00", "10", "11" } },
        { "top-left causal, window left 1, 3 x 5", 1, 1, 1, -1, 0, 0, 3, 5, -1, { "10000", "11000", "01100" } },
        { "Llama 4 chunked causal, chunk 3, 7 x 7", 1, 0, -1, -1, 3, 0, 7, 7, -1,
          { "1000000", "1100000", "1110000", "0001000", "0001100", "0001110", "0000001" } },
        { "chunk 3, causal, 1 global token", 1, 0, -1, -1, 3, 1, 7, 7, -1,
          { "1000000", "1100000", "1110000", "1001000", "1001100", "1001110", "1000001" } },
        { "chunk 3, causal, window left 1", 1, 0, 1, -1, 3, 0, 7, 7, -1,
          { "1000000", "1100000", "0110000", "0001000", "0001100", "0000110", "0000001" } },
        { "chunk 2, top-left causal, 4 x 7", 1, 1, -1, -1, 2, 0, 4, 7, -1, { "1000000", "1100000", "0010000", "0011000" } },
        { "chunk 2, bottom-right causal, 4 x 7", 1, 0, -1, -1, 2, 0, 4, 7, -1,
          { "0011000", "0000100", "0000110", "0000001" } },
        { "chunk 2, top-left causal, 4 x 7, Lk_b = 3", 1, 1, -1, -1, 2, 0, 4, 7, 3,
          { "1000000", "1100000", "0010000", "0010000" } },
        { "chunk 2, no causal, 4 x 2 (rows before position 0)", 0, 0, -1, -1, 2, 0, 4, 2, -1, { "00", "00", "11", "11" } },
        { "chunk 2, no causal, 4 x 2, 1 global token", 0, 0, -1, -1, 2, 1, 4, 2, -1, { "10", "10", "11", "11" } },
        { "chunk 3, window left 1 right 1, no causal", 0, 0, 1, 1, 3, 0, 6, 6, -1,
          { "110000", "111000", "011000", "000110", "000111", "000011" } },
    };
    static const sparse_mask_case sparse_cases[] = {
        { { "strided 3, no causal (implied), 8 x 8", 0, 0, -1, -1, 0, 0, 8, 8, -1,
            { "10000000", "11000000", "11100000", "11110000", "01111000", "00111100", "10011110", "01001111" } },
          { ATTN_SPARSE_STRIDED, 3, 0 } },
        { { "strided 3, causal, window left 4, 8 x 8", 1, 0, 4, -1, 0, 0, 8, 8, -1,
            { "10000000", "11000000", "11100000", "11110000", "01111000", "00111100", "00011110", "00001111" } },
          { ATTN_SPARSE_STRIDED, 3, 0 } },
        { { "strided 3, top-left causal, 2 global tokens, 8 x 8", 1, 1, -1, -1, 0, 2, 8, 8, -1,
            { "10000000", "11000000", "11100000", "11110000", "11111000", "11111100", "11011110", "11001111" } },
          { ATTN_SPARSE_STRIDED, 3, 0 } },
        { { "fixed 4 summary 1, causal, 8 x 8", 1, 0, -1, -1, 0, 0, 8, 8, -1,
            { "10000000", "11000000", "11100000", "11110000", "00011000", "00011100", "00011110", "00011111" } },
          { ATTN_SPARSE_FIXED, 4, 1 } },
        { { "fixed 4 summary 2, causal, 1 global token, 4 x 8", 1, 0, -1, -1, 0, 1, 4, 8, -1,
            { "10111000", "10111100", "10111110", "10111111" } },
          { ATTN_SPARSE_FIXED, 4, 2 } },
        { { "fixed 3 summary 1, no causal (implied), 4 x 8, Lk_b = 6", 0, 0, -1, -1, 0, 0, 4, 8, 6,
            { "11100000", "00110000", "00111000", "00111100" } },
          { ATTN_SPARSE_FIXED, 3, 1 } },
    };
    size_t c;
    int64_t i;
    char row[16];
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (i = 0; i < cases[c].lq; i++) {
            reference_row(&cases[c], NULL, i, row);
            cr_expect_str_eq(row, cases[c].rows[i], "%s: row %lld", cases[c].what, (long long)i);
        }
    for (c = 0; c < sizeof sparse_cases / sizeof sparse_cases[0]; c++)
        for (i = 0; i < sparse_cases[c].m.lq; i++) {
            reference_row(&sparse_cases[c].m, &sparse_cases[c].s, i, row);
            cr_expect_str_eq(row, sparse_cases[c].m.rows[i], "%s: row %lld", sparse_cases[c].m.what, (long long)i);
        }
}

/* Split KV and its merge give the same bits for 1 and 2 threads: the blocked
   kernel (Lq = 3), and the streaming one (Lq = 1, where the CPU's profile takes
   it for 4 rows a kv head) on a cache long enough for splits of 1024 keys; and
   for 1, 2 and 3 threads on a short cache (2 splits a sequence), whose units
   take one kv head each, the streaming kernel's too. */
Test(decode, threads_bitwise)
{
    const attn_kernel *ks[] = { &attn_llama3_8b_kernel, &attn_t_everything_kernel, &attn_t_d111_mqa_window_kernel };
    const int64_t shapes[][3] = { { 3, 5000, 2 }, { 1, 20000, 2 }, { 1, 700, 2 }, { 1, 700, 3 }, { 3, 700, 3 } }; /* Lq, Lk, threads */
    int i, j, s;
    for (i = 0; i < 3; i++)
        for (j = 0; j < ks[i]->n_variants; j++)
            for (s = 0; s < 5; s++) {
                const attn_variant *v = &ks[i]->variants[j];
                attn_case c;
                if (!attn_isa_supported(v->isa)) continue;
                memset(&c, 0, sizeof c);
                c.batch = 2;
                c.seq_q = shapes[s][0];
                c.seq_k = shapes[s][1];
                c.ragged = ks[i]->spec.padding;
                c.seed = 11;
                cr_expect_eq(attn_verify_bitwise_threads(ks[i], v, &c, 1, (int)shapes[s][2]), 1,
                             "%s/%s: decode differs for 1 and %d threads at Lq=%d Lk=%d", ks[i]->spec.name,
                             attn_isa_name(v->isa), (int)shapes[s][2], (int)c.seq_q, (int)c.seq_k);
            }
}

/* The caller's workspace (args.workspace): its size is 0 where the call has
   no rows, grows with the threads, and a byte short
   of it is ATTN_ERR_WORKSPACE before anything is written; of the size (at any
   alignment) the call gives the allocator's bits for 1, 2 and 3 threads.  The
   two-thread runs of every kernel's cases use one too (attn_cases_sdpa.c). */
Test(decode, workspace)
{
    const attn_kernel *k = &attn_llama3_8b_kernel;
    const int64_t B = 1, Lq = 1, Lk = 700;
    const int64_t hq = k->spec.heads_q, hkv = k->spec.heads_kv, d = k->spec.head_dim;
    const size_t nq = (size_t)(B * Lq * hq * d), nkv = (size_t)(B * Lk * hkv * d);
    float *q = malloc(nq * sizeof(float)), *kk = malloc(nkv * sizeof(float)), *v = malloc(nkv * sizeof(float));
    float *o[4], lse[4][32];
    char *ws;
    size_t n, i;
    int t;
    attn_args a;
    cr_assert(k->workspace_size != NULL);
    cr_expect_eq(k->workspace_size(B, 0, Lk, 1), 0);
    cr_expect_gt(k->workspace_size(B, 65, Lk, 1), 0, "the prefill path (more than decode_max_q rows, 64 at most) needs one too");
    cr_expect_gt(k->workspace_size(B, Lq, Lk, 2), k->workspace_size(B, Lq, Lk, 1));
    for (i = 0; i < nq; i++) q[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    for (i = 0; i < nkv; i++) kk[i] = (float)((i * 53) % 97) / 97.0f - 0.5f, v[i] = (float)((i * 29) % 89) / 89.0f;
    for (t = 0; t < 4; t++) o[t] = malloc(nq * sizeof(float));
    memset(&a, 0, sizeof a);
    a.batch = B, a.seq_q = Lq, a.seq_k = Lk, a.q = q, a.k = kk, a.v = v;
    attn_args_set_contiguous(&a, &k->spec);
    a.o = o[0], a.lse = lse[0], a.threads = 1;
    cr_assert_eq(k->fwd(&a), ATTN_OK);
    for (t = 1; t <= 3; t++) {
        n = k->workspace_size(B, Lq, Lk, t);
        ws = malloc(n + 3);
        a.o = o[t], a.lse = lse[t], a.threads = t;
        a.workspace = ws + 3, a.workspace_bytes = n - 1;
        memset(o[t], 0, nq * sizeof(float));
        cr_expect_eq(k->fwd(&a), ATTN_ERR_WORKSPACE, "%d threads, a byte short", t);
        cr_expect_eq(o[t][0], 0.0f, "O written before the workspace was checked");
        a.workspace_bytes = n;
        cr_expect_eq(k->fwd(&a), ATTN_OK, "%d threads", t);
        cr_expect_eq(memcmp(o[t], o[0], nq * sizeof(float)), 0, "%d threads: O differs from the allocator's", t);
        cr_expect_eq(memcmp(lse[t], lse[0], (size_t)(hq * Lq) * sizeof(float)), 0, "%d threads: LSE differs", t);
        free(ws);
    }
    cr_expect_str_eq(attn_status_string(ATTN_ERR_WORKSPACE), "workspace_bytes is below the kernel's workspace size");
    for (t = 0; t < 4; t++) free(o[t]);
    free(q), free(kk), free(v);
}

/* The allocator hook of Test(prefill, workspace): every call is counted and fails. */
static int ws_hook_calls;
static void *ws_failing_alloc(size_t bytes, void *user)
{
    (void)bytes, (void)user;
    ws_hook_calls++;
    return NULL;
}
static void ws_counting_free(void *ptr, void *user)
{
    (void)user;
    if (ptr != NULL) ws_hook_calls++;
}

/* One kernel's calls on the caller's workspace (Test(prefill, workspace),
   Test(linear, workspace)): with an allocator hook that fails on every call, a
   workspace of attn_NAME_workspace_size's bytes (at an odd address) gives the
   bits of a run on the hook's memory, for 1 and 2 threads and every variant;
   half of it is ATTN_ERR_WORKSPACE before O is written, and so is a byte less
   for the variants whose block is the largest (the size is the largest block of
   the variants the CPU runs, so at least one of them has it). */
static void workspace_runs(const attn_kernel *k, int64_t lq, int64_t lk)
{
    int j, t, largest = 0; /* runs a byte short that were ATTN_ERR_WORKSPACE */
    for (j = 0; j < k->n_variants; j++)
        for (t = 1; t <= 2; t++) {
            const attn_variant *v = &k->variants[j];
            attn_qkv_case cb;
            attn_case c;
            size_t n, lse_bytes;
            char *ws, *o_hook, *o_reset, *lse_hook;
            attn_status short_st, edge_st, st;
            if (!attn_isa_supported(v->isa)) continue;
            memset(&cb, 0, sizeof cb);
            memset(&c, 0, sizeof c);
            c.batch = 2, c.seq_q = lq, c.seq_k = lk, c.ragged = k->spec.padding, c.seed = 5;
            c.threads = t;
            cr_assert_eq(attn_qkv_build(&cb, &k->spec, &c), ATTN_OK);
            cb.args.threads = t;
            n = k->workspace_size(c.batch, c.seq_q, c.seq_k, t);
            cr_assert(n > 0 && n != SIZE_MAX, "%s: workspace_size %zu", k->spec.name, n);
            cr_assert_eq(v->fwd(&cb.args), ATTN_OK);
            lse_bytes = cb.lse_count * sizeof(float); /* 0: the family writes no LSE */
            o_hook = malloc(cb.o.bytes), o_reset = malloc(cb.o.bytes);
            lse_hook = malloc(lse_bytes + 1);
            ws = malloc(n + 5);
            cr_assert(o_hook && o_reset && lse_hook && ws);
            memcpy(o_hook, cb.o.ptr, cb.o.bytes);
            if (lse_bytes) memcpy(lse_hook, cb.lse.ptr, lse_bytes);
            attn_qkv_reset(&cb);
            memcpy(o_reset, cb.o.ptr, cb.o.bytes);
            cb.args.workspace = ws + 5, cb.args.workspace_bytes = n / 2;
            ws_hook_calls = 0;
            attn_set_allocator(ws_failing_alloc, ws_counting_free, NULL);
            short_st = v->fwd(&cb.args);
            cr_expect_eq(memcmp(cb.o.ptr, o_reset, cb.o.bytes), 0, "%s/%s: O written before the workspace was checked",
                         k->spec.name, attn_isa_name(v->isa));
            cb.args.workspace_bytes = n - 1;
            edge_st = v->fwd(&cb.args);
            if (edge_st == ATTN_ERR_WORKSPACE) {
                largest++;
                cr_expect_eq(memcmp(cb.o.ptr, o_reset, cb.o.bytes), 0, "%s/%s: O written a byte short",
                             k->spec.name, attn_isa_name(v->isa));
            }
            attn_qkv_reset(&cb);
            cb.args.workspace_bytes = n;
            st = v->fwd(&cb.args);
            attn_set_allocator(NULL, NULL, NULL);
            cr_expect_eq(short_st, ATTN_ERR_WORKSPACE, "%s/%s, %d threads: half the size", k->spec.name,
                         attn_isa_name(v->isa), t);
            cr_expect(edge_st == ATTN_ERR_WORKSPACE || edge_st == ATTN_OK, "%s/%s, %d threads: a byte short: %s",
                      k->spec.name, attn_isa_name(v->isa), t, attn_status_string(edge_st));
            cr_expect_eq(st, ATTN_OK, "%s/%s, %d threads: %s", k->spec.name, attn_isa_name(v->isa), t,
                         attn_status_string(st));
            cr_expect_eq(ws_hook_calls, 0, "%s/%s, %d threads: %d calls of the allocator hook", k->spec.name,
                         attn_isa_name(v->isa), t, ws_hook_calls);
            cr_expect_eq(memcmp(cb.o.ptr, o_hook, cb.o.bytes), 0, "%s/%s, %d threads: O differs from the hook's run",
                         k->spec.name, attn_isa_name(v->isa), t);
            if (lse_bytes)
                cr_expect_eq(memcmp(cb.lse.ptr, lse_hook, lse_bytes), 0, "%s/%s, %d threads: LSE differs",
                             k->spec.name, attn_isa_name(v->isa), t);
            cb.args.workspace = NULL, cb.args.workspace_bytes = 0;
            attn_qkv_free(&cb);
            free(o_hook), free(o_reset), free(lse_hook), free(ws);
        }
    cr_expect_gt(largest, 0, "%s: no variant needs all of workspace_size", k->spec.name);
}

/* The prefill path takes all its memory from the caller's workspace
   (workspace_runs): on Llama-3-8B's shape run in chunks (8300 keys: 2048 at a
   time past 8192, the rows' sums carried) and in one, a config's prefill_chunk
   (t_everything), and both gathered passes of the sparse patterns (the summary
   keys' panel, each thread's residue panel). */
Test(prefill, workspace)
{
    workspace_runs(&attn_llama3_8b_kernel, 65, 8300);
    workspace_runs(&attn_llama3_8b_kernel, 100, 300);
    workspace_runs(&attn_t_everything_kernel, 70, 400);
    workspace_runs(&attn_t_sparse_fixed_kernel, 70, 200);
    workspace_runs(&attn_t_sparse_strided_kernel, 70, 200);
}

/* A linear call's every thread's scratch comes from the caller's workspace
   (workspace_runs), causal or not, with a running state; the size grows with the
   threads and not with the keys. */
Test(linear, workspace)
{
    const attn_kernel *k = &attn_t_linear_causal_kernel;
    cr_assert(k->workspace_size != NULL);
    cr_expect_eq(k->workspace_size(1, 0, 64, 1), 0);
    cr_expect_gt(attn_t_linear_state_kernel.workspace_size(1, 0, 64, 1), 0, "the keys of a call go into the state");
    cr_expect_gt(k->workspace_size(2, 40, 64, 2), k->workspace_size(2, 40, 64, 1));
    cr_expect_eq(k->workspace_size(1, 40, 64, 1), k->workspace_size(1, 40, 6400, 1));
    workspace_runs(&attn_t_linear_kernel, 40, 90);
    workspace_runs(k, 70, 70);
    workspace_runs(&attn_t_linear_state_kernel, 33, 50);
}

/* A call with fewer than DECODE_HEAD_SPLIT splits gives each kv head a unit of its
   own (the threads share a short cache); with more, a unit takes every kv head.
   A row's arithmetic is the same either way: one sequence alone (split by kv
   heads) and the same sequence as the first of 8 (not split) give the same bits,
   on every variant, for one query row and for three, one split and two. */
Test(decode, kv_head_units_same_bits)
{
    const attn_kernel *k = &attn_llama3_8b_kernel;
    const int64_t hq = k->spec.heads_q, hkv = k->spec.heads_kv, d = k->spec.head_dim;
    const int64_t shapes[][2] = { { 1, 100 }, { 3, 100 }, { 1, 700 }, { 3, 700 } }; /* Lq, Lk */
    enum { NB = 8 };
    int j, s;
    for (s = 0; s < 4; s++) {
        const int64_t Lq = shapes[s][0], Lk = shapes[s][1];
        const size_t nq = (size_t)(Lq * hq * d), nkv = (size_t)(Lk * hkv * d);
        float *q = malloc(NB * nq * sizeof(float)), *kk = malloc(NB * nkv * sizeof(float));
        float *v = malloc(NB * nkv * sizeof(float)), *o1 = malloc(nq * sizeof(float));
        float *o8 = malloc(NB * nq * sizeof(float));
        size_t i;
        int b;
        cr_assert(q && kk && v && o1 && o8);
        for (i = 0; i < nq; i++) q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        for (i = 0; i < nkv; i++) kk[i] = (float)((i * 53) % 97) / 48.0f - 1.0f, v[i] = (float)((i * 29) % 89) / 89.0f;
        for (b = 1; b < NB; b++) { /* every sequence the same as the first */
            memcpy(q + b * nq, q, nq * sizeof(float));
            memcpy(kk + b * nkv, kk, nkv * sizeof(float));
            memcpy(v + b * nkv, v, nkv * sizeof(float));
        }
        for (j = 0; j < k->n_variants; j++) {
            const attn_variant *var = &k->variants[j];
            attn_args a;
            if (!attn_isa_supported(var->isa)) continue;
            memset(&a, 0, sizeof a);
            a.seq_q = Lq, a.seq_k = Lk, a.q = q, a.k = kk, a.v = v, a.threads = 2;
            a.batch = 1, a.o = o1;
            attn_args_set_contiguous(&a, &k->spec);
            cr_assert_eq(var->fwd(&a), ATTN_OK);
            a.batch = NB, a.o = o8;
            attn_args_set_contiguous(&a, &k->spec);
            cr_assert_eq(var->fwd(&a), ATTN_OK);
            cr_expect_eq(memcmp(o1, o8, nq * sizeof(float)), 0, "%s: Lq=%d Lk=%d: split by kv heads differs",
                         attn_isa_name(var->isa), (int)Lq, (int)Lk);
        }
        free(q), free(kk), free(v), free(o1), free(o8);
    }
}

/* ---- dropout ------------------------------------------------------------ */

extern const attn_kernel attn_t_dropout_weights_bf16_kernel, attn_t_weights_bf16_window_kernel,
    attn_t_weights_decode_kernel;

/* Philox4x32-10's known-answer vectors (Random123's kat_vectors). */
Test(dropout, philox_known_answers)
{
    static const uint32_t ctr[3][4] = { { 0, 0, 0, 0 },
                                        { 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu },
                                        { 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u } };
    static const uint32_t key[3][2] = { { 0, 0 }, { 0xffffffffu, 0xffffffffu }, { 0xa4093822u, 0x299f31d0u } };
    static const uint32_t want[3][4] = { { 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u },
                                         { 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu },
                                         { 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u } };
    int t, w;
    for (t = 0; t < 3; t++) {
        uint32_t out[4];
        attn_philox4x32_10(ctr[t], key[t], out);
        for (w = 0; w < 4; w++)
            cr_expect_eq(out[w], want[t][w], "vector %d word %d: got %08x, want %08x", t, w, out[w], want[t][w]);
    }
    cr_expect_eq(attn_dropout_threshold(0.0f), 0u);
    cr_expect_eq(attn_dropout_threshold(0.5f), 0x80000000u);
    cr_expect_eq(attn_dropout_threshold(0.25f), 0x40000000u);
}

/* One call's tensors for kernel k, contiguous, random N(0,1)-like inputs
   stored in k's types; seqlens all Lk; P when k has weights. */
typedef struct {
    attn_args a;
    void *q, *k, *v, *o;
    float *lse, *p;
    int32_t *seqlens;
    void *mask;
    size_t no, np, nlse;
} dcall;

static void dcall_init(dcall *d, const attn_kernel *k, int64_t B, int64_t Lq, int64_t Lk)
{
    const attn_spec *s = &k->spec;
    const size_t nq = (size_t)(B * Lq * s->heads_q * s->head_dim), nk = (size_t)(B * Lk * s->heads_kv * s->head_dim);
    const size_t nv = (size_t)(B * Lk * s->heads_kv * s->head_dim_v);
    float *tmp = (float *)malloc(sizeof(float) * (nq > nk ? (nq > nv ? nq : nv) : (nk > nv ? nk : nv)) + 1);
    unsigned long x = 12345;
    size_t i;
    int64_t b;
    memset(d, 0, sizeof *d);
    d->no = (size_t)(B * Lq * s->heads_q * s->head_dim_v);
    d->nlse = (size_t)(B * s->heads_q * Lq);
    d->np = s->weights ? (size_t)(B * s->heads_q * Lq * Lk) : 0;
    d->q = malloc(nq * 4 + 1);
    d->k = malloc(nk * 4 + 1);
    d->v = malloc(nv * 4 + 1);
    d->o = malloc(d->no * 4 + 1);
    d->lse = (float *)malloc(d->nlse * 4 + 1);
    d->p = s->weights ? (float *)malloc(d->np * 4 + 1) : NULL;
    d->seqlens = (int32_t *)malloc(sizeof(int32_t) * (size_t)B + 1);
    cr_assert(tmp && d->q && d->k && d->v && d->o && d->lse && d->seqlens && (!s->weights || d->p));
#define FILL(n, dt, dst)                                                          \
    for (i = 0; i < (n); i++) {                                                   \
        x = x * 6364136223846793005ul + 1442695040888963407ul;                  \
        tmp[i] = (float)((double)((x >> 33) & 0xffffff) / 16777216.0 * 3.0 - 1.5); \
    }                                                                             \
    attn_verify_narrow((dt), tmp, (dst), (n));
    FILL(nq, s->dtype_q, d->q)
    FILL(nk, s->dtype_kv, d->k)
    FILL(nv, s->dtype_kv, d->v)
#undef FILL
    free(tmp);
    for (b = 0; b < B; b++) d->seqlens[b] = (int32_t)Lk;
    if (s->mask != ATTN_MASK_NONE) {
        d->mask = malloc((size_t)(Lq * Lk) * 4 + 1);
        cr_assert(d->mask != NULL);
        for (i = 0; i < (size_t)(Lq * Lk); i++) {
            x = x * 6364136223846793005ul + 1442695040888963407ul;
            if (s->mask == ATTN_MASK_BIAS)
                ((float *)d->mask)[i] = (float)((x >> 40) % 100) * 0.01f - 0.5f;
            else
                ((uint8_t *)d->mask)[i] = (uint8_t)((x >> 40) % 8 != 0);
        }
    }
    d->a.batch = B;
    d->a.seq_q = Lq;
    d->a.seq_k = Lk;
    attn_args_set_contiguous(&d->a, s);
    d->a.q = d->q;
    d->a.k = d->k;
    d->a.v = d->v;
    d->a.o = d->o;
    d->a.lse = d->lse;
    d->a.weights = d->p;
    d->a.seqlens_k = d->seqlens;
    d->a.mask = d->mask;
    d->a.mask_stride[0] = d->a.mask_stride[1] = 0; /* one [Lq][Lk] mask for every batch and head */
    d->a.threads = 1;
}

static void dcall_free(dcall *d)
{
    free(d->q);
    free(d->k);
    free(d->v);
    free(d->o);
    free(d->lse);
    free(d->p);
    free(d->seqlens);
    free(d->mask);
}

/* The bytes of O (as stored), LSE and P of a run, in a new buffer. */
static unsigned char *dcall_run(const attn_kernel *k, dcall *d, size_t *bytes)
{
    const size_t ob = d->no * attn_dtype_size(k->spec.dtype_o);
    unsigned char *out;
    *bytes = ob + d->nlse * 4 + d->np * 4;
    out = (unsigned char *)malloc(*bytes + 1);
    cr_assert(out != NULL);
    cr_assert_eq(k->fwd(&d->a), ATTN_OK, "%s: the call failed", k->spec.name);
    memcpy(out, d->o, ob);
    memcpy(out + ob, d->lse, d->nlse * 4);
    if (d->np) memcpy(out + ob + d->nlse * 4, d->p, d->np * 4);
    return out;
}

/* dropout_p = 0 gives the bits of the same config without dropout: O, LSE
   and P, on the prefill path (Lq 100) and the decode path (Lq 3). */
static void dropout_zero_is_identity(const attn_kernel *kd, const attn_kernel *k0, int64_t Lq, int64_t Lk)
{
    dcall d0, d1;
    size_t n0, n1;
    unsigned char *a, *b;
    dcall_init(&d0, k0, 2, Lq, Lk);
    dcall_init(&d1, kd, 2, Lq, Lk);
    d1.a.dropout_p = 0.0f;
    d1.a.dropout_seed = 99;
    d1.a.dropout_offset = 7;
    a = dcall_run(k0, &d0, &n0);
    b = dcall_run(kd, &d1, &n1);
    /* O and LSE come first: with P only on one side, those */
    cr_expect(memcmp(a, b, n0 < n1 ? n0 : n1) == 0, "%s at dropout_p = 0 differs from %s (Lq %lld)", kd->spec.name, k0->spec.name,
              (long long)Lq);
    free(a);
    free(b);
    dcall_free(&d0);
    dcall_free(&d1);
}

Test(dropout, zero_p_is_the_kernel_without_dropout)
{
    dropout_zero_is_identity(&attn_t_dropout_weights_bf16_kernel, &attn_t_weights_bf16_window_kernel, 100, 130);
    dropout_zero_is_identity(&attn_t_dropout_weights_bf16_kernel, &attn_t_weights_bf16_window_kernel, 3, 130);
    dropout_zero_is_identity(&attn_t_dropout_decode_kernel, &attn_t_weights_decode_kernel, 5, 300);
    dropout_zero_is_identity(&attn_t_dropout_decode_kernel, &attn_t_weights_decode_kernel, 70, 90);
    dropout_zero_is_identity(&attn_t_dropout_causal_gqa_kernel, &attn_t_weights_causal_gqa_kernel, 77, 120);
    dropout_zero_is_identity(&attn_t_dropout_causal_gqa_kernel, &attn_t_weights_causal_gqa_kernel, 2, 120);
}

/* The same seed and offset give the same bits (also on another thread
   count); another offset, or another seed, another mask. */
Test(dropout, seed_and_offset_pick_the_mask)
{
    const attn_kernel *k = &attn_t_dropout_weights_bf16_kernel;
    dcall d;
    size_t n, n2, n3, n4, j, differ = 0;
    unsigned char *a, *b, *c, *e;
    dcall_init(&d, k, 1, 64, 96);
    d.a.dropout_p = 0.3f;
    d.a.dropout_seed = 0xfeedface12345678u;
    d.a.dropout_offset = 11;
    a = dcall_run(k, &d, &n);
    d.a.threads = 2;
    b = dcall_run(k, &d, &n2);
    cr_expect(memcmp(a, b, n) == 0, "the same seed and offset gave different bits");
    d.a.dropout_offset = 12;
    c = dcall_run(k, &d, &n3);
    /* P: the zero pattern (the mask) differs */
    {
        const size_t off = n - d.np * 4;
        const float *pa = (const float *)(a + off), *pc = (const float *)(c + off);
        for (j = 0; j < d.np; j++) differ += (pa[j] == 0.0f) != (pc[j] == 0.0f);
    }
    cr_expect_gt(differ, d.np / 20, "offset 12 dropped almost the same keys as offset 11 (%zu of %zu differ)", differ,
                 d.np);
    d.a.dropout_offset = 11;
    d.a.dropout_seed ^= 1;
    e = dcall_run(k, &d, &n4);
    cr_expect(memcmp(a, e, n) != 0, "another seed gave the same output");
    free(a);
    free(b);
    free(c);
    free(e);
    dcall_free(&d);
}

/* The kept fraction: of the weights nonzero at dropout_p = 0, the share
   still nonzero at dropout_p = 0.2 is 0.8 within 5 sigma of a binomial; and
   the same of the mask itself over 2^22 draws (the reference's function). */
Test(dropout, kept_fraction_is_one_minus_p)
{
    const attn_kernel *k = &attn_t_dropout_weights_bf16_kernel;
    const double p = 0.2;
    dcall d;
    size_t n, j, n0 = 0, n1 = 0, both = 0;
    unsigned char *a, *b;
    const float *pa, *pb;
    double mean, sd;
    attn_args ra;
    int64_t i, jj, kept = 0, total = 0;

    dcall_init(&d, k, 2, 512, 512);
    a = dcall_run(k, &d, &n);
    d.a.dropout_p = (float)p;
    d.a.dropout_seed = 2024;
    d.a.dropout_offset = 3;
    b = dcall_run(k, &d, &n);
    pa = (const float *)(a + n - d.np * 4);
    pb = (const float *)(b + n - d.np * 4);
    for (j = 0; j < d.np; j++) {
        n0 += pa[j] != 0.0f;
        n1 += pb[j] != 0.0f;
        both += pa[j] != 0.0f && pb[j] != 0.0f;
    }
    cr_expect_eq(both, n1, "a weight hidden without dropout is nonzero with it");
    mean = (1.0 - p) * (double)n0;
    sd = sqrt((double)n0 * p * (1.0 - p));
    cr_expect(fabs((double)n1 - mean) <= 5.0 * sd, "kept %zu of %zu visible weights, want %.0f +- %.0f", n1, n0, mean,
              5.0 * sd);
    cr_expect_gt(n0, 100000u);
    free(a);
    free(b);
    dcall_free(&d);

    memset(&ra, 0, sizeof ra);
    ra.dropout_p = (float)p;
    ra.dropout_seed = 0x0123456789abcdefu;
    ra.dropout_offset = 77;
    for (i = 0; i < 1024; i++)
        for (jj = 0; jj < 4096; jj++, total++) kept += attn_reference_dropout_kept(&k->spec, &ra, 1, 2, i, jj);
    mean = (1.0 - p) * (double)total;
    sd = sqrt((double)total * p * (1.0 - p));
    cr_expect(fabs((double)kept - mean) <= 5.0 * sd, "the mask kept %lld of %lld draws, want %.0f +- %.0f",
              (long long)kept, (long long)total, mean, 5.0 * sd);
}

/* dropout_p outside [0, 1), NaN included, is ATTN_ERR_DROPOUT; a kernel
   without dropout does not read it. */
Test(dropout, bad_p_is_an_error)
{
    const attn_kernel *k = &attn_t_dropout_causal_gqa_kernel;
    static const float bad[] = { -0.1f, 1.0f, 1.5f, INFINITY, -INFINITY };
    dcall d;
    int t;
    dcall_init(&d, k, 1, 20, 20);
    for (t = 0; t < 5; t++) {
        d.a.dropout_p = bad[t];
        cr_expect_eq(k->fwd(&d.a), ATTN_ERR_DROPOUT, "dropout_p = %g", (double)bad[t]);
    }
    d.a.dropout_p = NAN;
    cr_expect_eq(k->fwd(&d.a), ATTN_ERR_DROPOUT, "dropout_p = NaN");
    cr_expect_eq(attn_check_args(&attn_t_weights_causal_gqa_kernel.spec, &d.a), ATTN_OK);
    d.a.dropout_p = 0.999f;
    cr_expect_eq(k->fwd(&d.a), ATTN_OK);
    cr_expect_str_eq(attn_status_string(ATTN_ERR_DROPOUT), "dropout_p is outside [0, 1)");
    dcall_free(&d);
}

/* ---- RoPE ------------------------------------------------------------------ */

/* rope table = true: without rope_cos / rope_sin the call is ATTN_ERR_NULL_ARG;
   a table of fewer rows than the last position (top-left: Lq - 1) is
   ATTN_ERR_ROPE, and O is not written; a table of Lq rows runs. */
Test(rope, table_position_outside_is_an_error)
{
    const attn_kernel *k = &attn_t_top_left_kernel;
    const int64_t Lq = 20, half = k->spec.rope_dim / 2;
    float *cs = (float *)calloc((size_t)(2 * Lq * half), sizeof(float));
    unsigned char *o0;
    size_t ob;
    dcall d;
    cr_assert(cs != NULL);
    dcall_init(&d, k, 2, Lq, 24);
    cr_expect_eq(k->fwd(&d.a), ATTN_ERR_NULL_ARG);
    d.a.rope_cos = cs;
    d.a.rope_sin = cs + Lq * half;
    d.a.rope_rows = Lq - 1;
    ob = d.no * attn_dtype_size(k->spec.dtype_o);
    memset(d.o, 0x5a, ob);
    o0 = (unsigned char *)malloc(ob + 1);
    cr_assert(o0 != NULL);
    memcpy(o0, d.o, ob);
    cr_expect_eq(k->fwd(&d.a), ATTN_ERR_ROPE);
    cr_expect(memcmp(o0, d.o, ob) == 0, "O was written by a refused call");
    d.a.rope_rows = -1;
    cr_expect_eq(k->fwd(&d.a), ATTN_ERR_SHAPE);
    d.a.rope_rows = Lq;
    cr_expect_eq(k->fwd(&d.a), ATTN_OK);
    cr_expect_str_eq(attn_status_string(ATTN_ERR_ROPE),
                     "a query row's position is outside the RoPE table (0..rope_rows-1)");
    free(o0);
    free(cs);
    dcall_free(&d);
}

/* ---- the entropy --------------------------------------------------------- */

/* With Q = 0 every score of a row is 0 (no ALiBi or softcap in
   t_sparse_fixed): its weights are uniform over its n visible keys and
   E = ln n = LSE, on the decode (Lq 3) and prefill (Lq 70) paths of every
   variant, and 0 in a row that sees no key (a batch of length 0); O is the
   same bits whether E is written or not (args->entropy NULL). */
static void entropy_of_uniform_rows(const attn_kernel *k, const attn_variant *v, int64_t Lq, int64_t Lk)
{
    const attn_spec *s = &k->spec;
    const int64_t B = 2, D = s->head_dim, nq = B * Lq * s->heads_q;
    const int64_t nk = B * Lk * s->heads_kv * D;
    float *q = calloc((size_t)(nq * D), sizeof(float)), *kv = malloc((size_t)nk * sizeof(float));
    float *o = malloc((size_t)(nq * D) * sizeof(float)), *o2 = malloc((size_t)(nq * D) * sizeof(float));
    float *lse = malloc((size_t)nq * sizeof(float)), *e = malloc((size_t)nq * sizeof(float));
    int32_t seqlens[2];
    attn_args a;
    int64_t i;
    cr_assert(q && kv && o && o2 && lse && e);
    for (i = 0; i < nk; i++) kv[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    seqlens[0] = (int32_t)Lk;
    seqlens[1] = 0;
    memset(&a, 0, sizeof a);
    a.batch = B;
    a.seq_q = Lq;
    a.seq_k = Lk;
    a.q = q;
    a.k = kv;
    a.v = kv;
    a.o = o;
    a.lse = lse;
    a.entropy = e;
    a.seqlens_k = seqlens;
    a.threads = 2;
    attn_args_set_contiguous(&a, s);
    cr_assert_eq(v->fwd(&a), ATTN_OK);
    for (i = 0; i < nq; i++) {
        if (i >= nq / 2) { /* batch 1: no key */
            cr_expect_eq(e[i], 0.0f, "%s: E[%lld] = %g, want 0", attn_isa_name(v->isa), (long long)i, (double)e[i]);
            continue;
        }
        cr_expect(fabs((double)e[i] - (double)lse[i]) <= ATTN_REF_TOL_E(lse[i]), "%s Lq %lld: E[%lld] = %.7g, LSE %.7g",
                  attn_isa_name(v->isa), (long long)Lq, (long long)i, (double)e[i], (double)lse[i]);
    }
    a.entropy = NULL;
    a.o = o2;
    cr_assert_eq(v->fwd(&a), ATTN_OK);
    cr_expect(memcmp(o, o2, (size_t)(nq * D) * sizeof(float)) == 0, "%s: O differs without E", attn_isa_name(v->isa));
    free(q);
    free(kv);
    free(o);
    free(o2);
    free(lse);
    free(e);
}

Test(entropy, uniform_rows_give_ln_n)
{
    const attn_kernel *k = &attn_t_sparse_fixed_kernel;
    int i, ran = 0;
    for (i = 0; i < k->n_variants; i++) {
        if (!attn_isa_supported(k->variants[i].isa)) continue;
        entropy_of_uniform_rows(k, &k->variants[i], 3, 200);
        entropy_of_uniform_rows(k, &k->variants[i], 70, 90);
        ran++;
    }
    cr_assert_gt(ran, 0);
}

/* Paged K/V: the block table's entries are checked before anything is
   written.  t_paged_p3: pages of 3 keys, causal, a window of 40 keys (left
   39) and 4 global keys; one query row (at position Lk_b - 1) a sequence. */
extern const attn_kernel attn_t_paged_p3_kernel;
Test(paged, block_table_entries_are_checked)
{
    const attn_kernel *P = &attn_t_paged_p3_kernel;
    const attn_spec *s = &P->spec;
    const int64_t lk = 100, per = (lk + 2) / 3;
    const size_t nq = (size_t)(2 * s->heads_q * s->head_dim), nk = (size_t)(2 * lk * s->heads_kv * s->head_dim);
    float *q = calloc(nq, sizeof(float)), *k = calloc(nk, sizeof(float)), *v = calloc(nk, sizeof(float));
    float *o = calloc(nq, sizeof(float)), *o_full = calloc(nq, sizeof(float)), *o_before = calloc(nq, sizeof(float));
    int32_t *table = calloc((size_t)(2 * per), sizeof(int32_t)), seqlens[2] = { 100, 50 };
    attn_args a, b;
    size_t i;
    int64_t e;
    cr_assert(q && k && v && o && o_full && o_before && table);
    for (i = 0; i < nq; i++) q[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (i = 0; i < nk; i++) k[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    for (i = 0; i < nk; i++) v[i] = (float)((i * 3) % 17) / 17.0f - 0.5f;
    memset(&a, 0, sizeof a);
    a.batch = 2;
    a.seq_q = 1;
    a.seq_k = lk;
    attn_args_set_contiguous(&a, s);
    cr_assert_eq(attn_args_set_contiguous_pages(&a, s, table), ATTN_OK);
    a.q = q;
    a.k = k;
    a.v = v;
    a.o = o_full;
    a.seqlens_k = seqlens;
    cr_assert_eq(P->fwd(&a), ATTN_OK);
    a.o = o;
    for (i = 0; i < nq; i++) o[i] = 1234.5f;
    memcpy(o_before, o, nq * sizeof(float));

    b = a; b.block_table = NULL;          cr_expect_eq(P->fwd(&b), ATTN_ERR_NULL_ARG);
    b = a; b.seqlens_k = NULL;            cr_expect_eq(P->fwd(&b), ATTN_ERR_NULL_ARG);
    b = a; b.num_pages = -1;              cr_expect_eq(P->fwd(&b), ATTN_ERR_SHAPE);
    b = a; b.block_table_stride = -1;     cr_expect_eq(P->fwd(&b), ATTN_ERR_STRIDE);
    /* entries outside the pools, or -1 where a row sees a key of the page */
    table[4] = (int32_t)a.num_pages;      cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "an entry past the pools");
    table[4] = -2;                        cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "-2");
    table[4] = 12;
    table[per - 1] = -1;                  cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "-1 on the last page (seen)");
    table[per - 1] = 99;
    table[0] = -1;                        cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "-1 on the global keys' page");
    table[0] = 0;
    table[20] = -1;                       cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "-1 on keys 60..62 (in the window)");
    table[20] = 60;
    table[per + 16] = -1;                 cr_expect_eq(P->fwd(&a), ATTN_ERR_PAGE, "-1 on batch 1's last page");
    table[per + 16] = (int32_t)(lk + 48);
    cr_expect(memcmp(o, o_before, nq * sizeof(float)) == 0, "O written by a call with a bad table");
    cr_expect_str_eq(attn_status_string(ATTN_ERR_PAGE),
                     "a block-table entry names no page of the K/V pools, or -1 where a row sees the page");

    /* -1 on pages before every row's window (keys 6..59 of batch 0), and no
       entry read past a sequence's last page (batch 1's pages from key 51) */
    for (e = 2; e < 20; e++) table[e] = -1;
    for (e = 17; e < per; e++) table[per + e] = INT32_MAX;
    cr_expect_eq(P->fwd(&a), ATTN_OK);
    cr_expect(memcmp(o, o_full, nq * sizeof(float)) == 0, "O differs with evicted pages no row sees");
    free(q);
    free(k);
    free(v);
    free(o);
    free(o_full);
    free(o_before);
    free(table);
}

/* ---- appending ------------------------------------------------------------ */

extern const attn_kernel attn_t_q8_0_kernel, attn_t_q4_0_kernel, attn_t_paged_p3_kernel, attn_t_paged_q8_kernel,
    attn_t_shared_kv_q4_kernel;
attn_status attn_t_paged_p3_append(const attn_args *args);
attn_status attn_t_paged_q8_append(const attn_args *args);
attn_status attn_t_shared_kv_q4_append(const attn_args *args);
attn_status attn_t_rope_append(const attn_args *args);
attn_status attn_t_f16_cache_append(const attn_args *args);
attn_status attn_t_top_left_append(const attn_args *args);
attn_status attn_t_q8_0_append(const attn_args *args);
attn_status attn_t_q4_0_append(const attn_args *args);

/* Row x (n values) of a new key normed with qk_norm (attn_reference_qk_norm,
   in double, rounded to f32), then rotated as the reference rotates Q
   (docs/config.md, "rope"), at position pos, in double, rounded to f32. */
static void rope_row_want(const attn_spec *s, const attn_args *a, int64_t pos, float *x)
{
    const int half = s->rope_dim / 2;
    int m;
    if (s->qk_norm) {
        double row[1024];
        int d;
        cr_assert(s->head_dim <= 1024);
        for (d = 0; d < s->head_dim; d++) row[d] = x[d];
        attn_reference_qk_norm(s, a->k_norm_w, row);
        for (d = 0; d < s->head_dim; d++) x[d] = (float)row[d];
    }
    if (s->rope_style == ATTN_ROPE_NONE) return;
    for (m = 0; m < half; m++) {
        const int ia = s->rope_style == ATTN_ROPE_GPTJ ? 2 * m : m, ib = s->rope_style == ATTN_ROPE_GPTJ ? 2 * m + 1 : m + half;
        const double c = s->rope_table ? a->rope_cos[pos * half + m] : cos((double)pos * s->rope_inv_freq[m]);
        const double sn = s->rope_table ? a->rope_sin[pos * half + m] : sin((double)pos * s->rope_inv_freq[m]);
        const double xa = x[ia], xb = x[ib];
        x[ia] = (float)(xa * c - xb * sn);
        x[ib] = (float)(xa * sn + xb * c);
    }
}

static float rnd_unit(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)((*x >> 33) & 0xffffff) / 16777216.0 * 3.0 - 1.5);
}

/* The new rows of K and V at key j (new row t of batch b, kv head h), stored
   at kr and vr: K rotated as the reference rotates (in double) and both
   rounded to the cache's type, within a rounding of it (a quantization step
   for blocks).  row and tmp: scratch. */
static void check_new_rows(const attn_spec *s, const attn_args *a, const unsigned char *kr, const unsigned char *vr,
                           int64_t b, int64_t t, int64_t j, int64_t h, int64_t Ln, float *row, float *tmp)
{
    const int64_t kvv = attn_dtype_values(s->dtype_kv), Hkv = s->heads_kv;
    const size_t qsz = attn_dtype_size(s->dtype_q);
    int64_t d;
    int pass;
    for (pass = 0; pass < (s->shared_kv ? 1 : 2); pass++) {
        const int64_t n = pass ? s->head_dim_v : s->head_dim;
        const void *src = (const unsigned char *)(pass ? a->v_new : a->k_new) + (size_t)(((b * Ln + t) * Hkv + h) * n) * qsz;
        float *want = row, *got = row + n;
        double vmax = 0.0;
        attn_dtype_to_f32_array(s->dtype_q, src, want, (size_t)n);
        if (!pass) rope_row_want(s, a, j, want);
        attn_f32_to_dtype_array(s->dtype_kv, want, tmp, (size_t)n);
        attn_dtype_to_f32_array(s->dtype_kv, tmp, want, (size_t)n);
        attn_dtype_to_f32_array(s->dtype_kv, pass ? vr : kr, got, (size_t)n);
        for (d = 0; d < n; d++) vmax = fabs(want[d]) > vmax ? fabs(want[d]) : vmax;
        for (d = 0; d < n; d++) {
            const double tol = kvv > 1 ? vmax / 6.0 : 1e-7 + fabs(want[d]) *
                (s->dtype_kv == ATTN_DTYPE_F32 ? 1e-6 : s->dtype_kv == ATTN_DTYPE_F16 ? 2e-3 : 1e-2);
            cr_assert(fabs((double)got[d] - want[d]) <= tol, "%s: new %s row b=%lld j=%lld h=%lld d=%lld: %.9g, want %.9g",
                      s->name, pass ? "V" : "K", (long long)b, (long long)j, (long long)h, (long long)d,
                      (double)got[d], (double)want[d]);
        }
    }
}

/* What the phases of append_case share: the cache (kc, vc; k0, v0 its
   bytes before the call, k1, v1 the call's), the call's inputs and args. */
typedef struct {
    const attn_kernel *k;
    attn_status (*append)(const attn_args *);
    const attn_spec *s;
    const int32_t *lens;
    int64_t B, Lk, Ln, Lq, Hkv, D, Dv, kvv, ksz;
    size_t kbytes, vbytes, qsz, osz, nq, no, nkn, nvn;
    unsigned char *kc, *vc, *k0, *v0, *k1, *v1;
    void *q, *o, *o2, *kn, *vn;
    float *row, *tmp, *cs;
    float nw[2 * 512]; /* qk_norm: q_norm_w, k_norm_w */
    int32_t bad[8];
    int32_t *table; /* paged configs: the cache read through a table of its rows */
    /* the cache's own layout [B][Lk][Hkv][D] (in blocks for a block type), whatever the kernel's view */
    int64_t ks[3], vs[3];
    int shared; /* V is the first Dv values of each K row: no V of its own */
    uint64_t x; /* the random draws, in order: the cache, Q, the new K and V rows, qk_norm's weights */
    attn_args a;
} append_run;

/* The sizes, the buffers (the cache all ones: NaN in every type, a block's
   scale included) and the args' shape, strides and block table. */
static void append_alloc(append_run *c, const attn_kernel *k, attn_status (*append)(const attn_args *),
                         const int32_t *lens, int64_t B, int64_t Lk, int64_t Ln)
{
    const attn_spec *s = &k->spec;
    const int64_t Lq = 2, Hkv = s->heads_kv, D = s->head_dim, Dv = s->head_dim_v;
    const int64_t kvv = attn_dtype_values(s->dtype_kv), ksz = (int64_t)attn_dtype_size(s->dtype_kv);
    size_t nq, nkn, nvn;

    memset(c, 0, sizeof *c);
    c->k = k;
    c->append = append;
    c->s = s;
    c->lens = lens;
    c->B = B;
    c->Lk = Lk;
    c->Ln = Ln;
    c->Lq = Lq;
    c->Hkv = Hkv;
    c->D = D;
    c->Dv = Dv;
    c->kvv = kvv;
    c->ksz = ksz;
    c->kbytes = (size_t)(B * Lk * Hkv * D / kvv * ksz);
    c->vbytes = (size_t)(B * Lk * Hkv * Dv / kvv * ksz);
    c->qsz = attn_dtype_size(s->dtype_q);
    c->osz = attn_dtype_size(s->dtype_o);
    c->nq = nq = (size_t)(B * Lq * s->heads_q * D);
    c->no = (size_t)(B * Lq * s->heads_q * Dv);
    c->nkn = nkn = (size_t)(B * Ln * Hkv * D);
    c->nvn = nvn = (size_t)(B * Ln * Hkv * Dv);
    c->kc = malloc(c->kbytes + 1);
    c->vc = malloc(c->vbytes + 1);
    c->k0 = malloc(c->kbytes + 1);
    c->v0 = malloc(c->vbytes + 1);
    c->k1 = malloc(c->kbytes + 1);
    c->v1 = malloc(c->vbytes + 1);
    c->q = malloc(nq * c->qsz + 1);
    c->o = malloc(c->no * c->osz + 1);
    c->o2 = malloc(c->no * c->osz + 1);
    c->kn = malloc(nkn * c->qsz + 1);
    c->vn = malloc(nvn * c->qsz + 1);
    c->row = malloc(sizeof(float) * (size_t)(D > Dv ? D : Dv) * 2 + 1);
    c->ks[0] = Lk * Hkv * (D / kvv);
    c->ks[1] = Hkv * (D / kvv);
    c->ks[2] = D / kvv;
    c->vs[0] = Lk * Hkv * (Dv / kvv);
    c->vs[1] = Hkv * (Dv / kvv);
    c->vs[2] = Dv / kvv;
    c->shared = s->shared_kv;
    c->x = 99;

    cr_assert(c->kc && c->vc && c->k0 && c->v0 && c->k1 && c->v1 && c->q && c->o && c->o2 && c->kn && c->vn &&
              c->row && B <= 8);
    c->tmp = malloc(sizeof(float) * (nq > nkn ? (nq > nvn ? nq : nvn) : (nkn > nvn ? nkn : nvn)) + 1);
    cr_assert(c->tmp != NULL);
    memset(c->kc, 0xff, c->kbytes); /* NaN in every type, a block's scale included */
    memset(c->vc, 0xff, c->vbytes);
    c->a.batch = B;
    c->a.seq_q = Lq;
    c->a.seq_k = Lk;
    attn_args_set_contiguous(&c->a, s);
    if (s->page > 0) {
        c->table = malloc(sizeof(int32_t) * (size_t)(B * ((Lk + s->page - 1) / s->page)) + 1);
        cr_assert(c->table != NULL);
        cr_assert_eq(attn_args_set_contiguous_pages(&c->a, s, c->table), ATTN_OK);
    }
}

/* The cache's first lens[b] keys, Q and the new rows, random in +-1.5;
   k0 and v0 the cache before the call. */
static void append_draw(append_run *c)
{
    const attn_spec *s = c->s;
    const int64_t Hkv = c->Hkv, D = c->D, Dv = c->Dv, ksz = c->ksz;
    const int64_t *ks = c->ks, *vs = c->vs;
    float *row = c->row, *tmp = c->tmp;
    int64_t b, j, h, d;
    size_t i;

    for (b = 0; b < c->B; b++)
        for (j = 0; j < c->lens[b]; j++)
            for (h = 0; h < Hkv; h++) {
                for (d = 0; d < D; d++) row[d] = rnd_unit(&c->x);
                attn_f32_to_dtype_array(s->dtype_kv, row, c->kc + (size_t)((b * ks[0] + j * ks[1] + h * ks[2]) * ksz),
                                        (size_t)D);
                for (d = 0; d < Dv; d++) row[d] = rnd_unit(&c->x);
                attn_f32_to_dtype_array(s->dtype_kv, row, c->vc + (size_t)((b * vs[0] + j * vs[1] + h * vs[2]) * ksz),
                                        (size_t)Dv);
            }
    for (i = 0; i < c->nq; i++) tmp[i] = rnd_unit(&c->x);
    attn_f32_to_dtype_array(s->dtype_q, tmp, c->q, c->nq);
    for (i = 0; i < c->nkn; i++) tmp[i] = rnd_unit(&c->x);
    attn_f32_to_dtype_array(s->dtype_q, tmp, c->kn, c->nkn);
    for (i = 0; i < c->nvn; i++) tmp[i] = rnd_unit(&c->x);
    attn_f32_to_dtype_array(s->dtype_q, tmp, c->vn, c->nvn);
    memcpy(c->k0, c->kc, c->kbytes);
    memcpy(c->v0, c->vc, c->vbytes);
}

/* The call's tensors: Q, the cache, O, the RoPE table, qk_norm's weights
   and the new rows (contiguous). */
static void append_args(append_run *c)
{
    const attn_spec *s = c->s;
    const int64_t Lq = c->Lq, Lk = c->Lk, Ln = c->Ln, Hkv = c->Hkv, D = c->D, Dv = c->Dv;
    attn_args *a = &c->a;
    int64_t d;

    a->q = c->q;
    a->k = c->kc;
    a->v = c->shared ? NULL : c->vc;
    a->o = c->o;
    a->seqlens_k = c->lens;
    a->threads = 2;
    if (s->rope_table) { /* cos, sin of the angles p / 100^(2m / dim) */
        const int64_t half = s->rope_dim / 2, rows = Lk + Lq;
        int64_t p, m;
        c->cs = malloc(sizeof(float) * (size_t)(2 * rows * half) + 1);
        cr_assert(c->cs != NULL);
        for (p = 0; p < rows; p++)
            for (m = 0; m < half; m++) {
                c->cs[p * half + m] = (float)cos((double)p * pow(100.0, -2.0 * (double)m / s->rope_dim));
                c->cs[(rows + p) * half + m] = (float)sin((double)p * pow(100.0, -2.0 * (double)m / s->rope_dim));
            }
        a->rope_cos = c->cs;
        a->rope_sin = c->cs + rows * half;
        a->rope_rows = rows;
    }
    if (s->qk_norm) { /* qk_norm's weights: factors (offset + w) in 0.5..1.5 */
        for (d = 0; d < 2 * D; d++) c->nw[d] = (s->qk_norm_offset ? 0.0f : 1.0f) + rnd_unit(&c->x) / 3.0f;
        a->q_norm_w = c->nw;
        a->k_norm_w = c->nw + D;
    }
    a->k_new = c->kn;
    a->v_new = c->shared ? NULL : c->vn;
    a->seq_new = Ln;
    a->kn_stride[2] = D;
    a->kn_stride[1] = Hkv * D;
    a->kn_stride[0] = Ln * Hkv * D;
    a->vn_stride[2] = Dv;
    a->vn_stride[1] = Hkv * Dv;
    a->vn_stride[0] = Ln * Hkv * Dv;
}

/* The call with k_new: the new rows stored, no other row of the cache
   changed, O the bits of a call over lens[b] + Ln keys; append alone
   stores the same bytes. */
static void append_check_stored(append_run *c)
{
    const attn_spec *s = c->s;
    const int64_t B = c->B, Lk = c->Lk, Ln = c->Ln, Hkv = c->Hkv, D = c->D, Dv = c->Dv, kvv = c->kvv, ksz = c->ksz;
    const int64_t *ks = c->ks, *vs = c->vs;
    const attn_kernel *k = c->k;
    attn_status (*append)(const attn_args *) = c->append;
    const int32_t *lens = c->lens;
    unsigned char *kc = c->kc, *vc = c->vc;
    int32_t lens2[8];
    attn_args a = c->a, a2;
    int64_t b, j, h;

    cr_assert_eq(k->fwd(&a), ATTN_OK, "%s: the call with k_new failed", s->name);
    for (b = 0; b < B; b++)
        for (j = 0; j < Lk; j++)
            for (h = 0; h < Hkv; h++) {
                const size_t ko = (size_t)((b * ks[0] + j * ks[1] + h * ks[2]) * ksz);
                const size_t vo = (size_t)((b * vs[0] + j * vs[1] + h * vs[2]) * ksz);
                const int64_t t = j - lens[b];
                if (t < 0 || t >= Ln) {
                    cr_assert(memcmp(kc + ko, c->k0 + ko, (size_t)(D / kvv * ksz)) == 0 &&
                                  memcmp(vc + vo, c->v0 + vo, (size_t)(Dv / kvv * ksz)) == 0,
                              "%s: row b=%lld j=%lld h=%lld of the cache changed", s->name, (long long)b, (long long)j,
                              (long long)h);
                    continue;
                }
                check_new_rows(s, &a, kc + ko, vc + vo, b, t, j, h, Ln, c->row, c->tmp);
            }
    /* the attention: the bits of a call over lens[b] + Ln keys */
    for (b = 0; b < B; b++) lens2[b] = lens[b] + (int32_t)Ln;
    a2 = a;
    a2.k_new = a2.v_new = NULL;
    a2.seqlens_k = lens2;
    a2.o = c->o2;
    cr_assert_eq(k->fwd(&a2), ATTN_OK);
    cr_expect(memcmp(c->o, c->o2, c->no * c->osz) == 0, "%s: O with k_new differs from O over the stored cache", s->name);
    /* append alone: the same bytes */
    memcpy(c->k1, kc, c->kbytes);
    memcpy(c->v1, vc, c->vbytes);
    memcpy(kc, c->k0, c->kbytes);
    memcpy(vc, c->v0, c->vbytes);
    cr_assert_eq(append(&a), ATTN_OK);
    cr_expect(memcmp(kc, c->k1, c->kbytes) == 0 && memcmp(vc, c->v1, c->vbytes) == 0, "%s: append stored other bytes",
              s->name);
}

/* Refused calls write nothing: a sequence past the capacity
   (ATTN_ERR_CAPACITY), qk_norm without a weight (ATTN_ERR_NULL_ARG), a
   sequence left short of seq_k without padding (ATTN_ERR_SEQLENS). */
static void append_check_refused(append_run *c)
{
    const attn_spec *s = c->s;
    const attn_kernel *k = c->k;
    attn_status (*append)(const attn_args *) = c->append;
    const int64_t B = c->B, Lk = c->Lk, Ln = c->Ln, D = c->D;
    const int32_t *lens = c->lens;
    const size_t kbytes = c->kbytes, vbytes = c->vbytes, no = c->no, osz = c->osz;
    unsigned char *kc = c->kc, *vc = c->vc, *k0 = c->k0, *v0 = c->v0;
    void *o = c->o, *o2 = c->o2;
    int32_t *bad = c->bad;
    attn_args a = c->a; /* written back at the end */
    int64_t b;

    /* past the capacity: nothing written */
    memcpy(kc, k0, kbytes);
    memcpy(vc, v0, vbytes);
    for (b = 0; b < B; b++) bad[b] = lens[b];
    bad[B - 1] = (int32_t)(Lk - Ln + 1);
    a.seqlens_k = bad;
    memset(o, 0x5a, no * osz);
    memcpy(o2, o, no * osz);
    cr_expect_eq(k->fwd(&a), ATTN_ERR_CAPACITY);
    cr_expect_eq(append(&a), ATTN_ERR_CAPACITY);
    cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0 && memcmp(o, o2, no * osz) == 0,
              "%s: a refused call wrote", s->name);
    if (s->qk_norm) { /* qk_norm without a weight: ATTN_ERR_NULL_ARG, nothing written */
        a.seqlens_k = lens;
        a.k_norm_w = NULL;
        cr_expect_eq(k->fwd(&a), ATTN_ERR_NULL_ARG, "%s: k_new without k_norm_w", s->name);
        cr_expect_eq(append(&a), ATTN_ERR_NULL_ARG, "%s: append without k_norm_w", s->name);
        a.k_norm_w = c->nw + D;
        a.q_norm_w = NULL;
        cr_expect_eq(k->fwd(&a), ATTN_ERR_NULL_ARG, "%s: a call without q_norm_w", s->name);
        cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0 && memcmp(o, o2, no * osz) == 0,
                  "%s: a refused call wrote", s->name);
        a.q_norm_w = c->nw;
        a.seqlens_k = bad;
    }
    if (!s->padding) { /* a sequence left short of seq_k */
        bad[B - 1] = lens[B - 1] - 1;
        cr_expect_eq(k->fwd(&a), ATTN_ERR_SEQLENS);
        cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0, "%s: a refused call wrote", s->name);
        cr_expect_eq(append(&a), ATTN_OK); /* the store alone has no such rule */
    }
    c->a = a;
}

/* Refused calls write nothing: a new row on an evicted page or one past
   the pools (ATTN_ERR_PAGE), a stride past the index type
   (ATTN_ERR_TOO_LARGE). */
static void append_check_out_of_range(append_run *c)
{
    const attn_spec *s = c->s;
    const attn_kernel *k = c->k;
    attn_status (*append)(const attn_args *) = c->append;
    const int32_t *lens = c->lens;
    const size_t kbytes = c->kbytes, vbytes = c->vbytes, no = c->no, osz = c->osz;
    unsigned char *kc = c->kc, *vc = c->vc, *k0 = c->k0, *v0 = c->v0;
    void *o = c->o, *o2 = c->o2;
    int32_t *table = c->table;
    attn_args a = c->a; /* written back at the end */

    if (table != NULL) { /* a new row on an evicted page: ATTN_ERR_PAGE, nothing written */
        const int64_t per = a.block_table_stride, e = lens[0] / s->page;
        const int32_t keep = table[e];
        a.seqlens_k = lens;
        table[e] = -1;
        cr_expect_eq(k->fwd(&a), ATTN_ERR_PAGE, "%s: a new row on an evicted page", s->name);
        cr_expect_eq(append(&a), ATTN_ERR_PAGE);
        cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0 && memcmp(o, o2, no * osz) == 0,
                  "%s: a refused call wrote", s->name);
        table[e] = (int32_t)a.num_pages; /* and one naming no page of the pools */
        cr_expect_eq(k->fwd(&a), ATTN_ERR_PAGE, "%s: a new row on a page past the pools", s->name);
        cr_expect_eq(append(&a), ATTN_ERR_PAGE);
        cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0 && memcmp(o, o2, no * osz) == 0,
                  "%s: a refused call wrote", s->name);
        table[e] = keep;
        (void)per;
    }
    { /* a new rows' or a cache's stride past the index type: ATTN_ERR_TOO_LARGE, nothing written */
        int64_t *const strides[2] = { &a.kn_stride[0], &a.k_stride[0] };
        int t;
        a.seqlens_k = lens;
        memcpy(kc, k0, kbytes); /* (the store above, without padding, wrote) */
        memcpy(vc, v0, vbytes);
        for (t = 0; t < 2; t++) {
            const int64_t keep = *strides[t];
            *strides[t] = INT64_MAX / 2;
            cr_expect_eq(k->fwd(&a), ATTN_ERR_TOO_LARGE, "%s: stride %d past the index type", s->name, t);
            cr_expect_eq(append(&a), ATTN_ERR_TOO_LARGE, "%s: append, stride %d past the index type", s->name, t);
            cr_expect(memcmp(kc, k0, kbytes) == 0 && memcmp(vc, v0, vbytes) == 0 && memcmp(o, o2, no * osz) == 0,
                      "%s: a refused call wrote", s->name);
            *strides[t] = keep;
        }
    }
    c->a = a;
}

/* The buffers append_alloc and append_args took. */
static void append_free(append_run *c)
{
    free(c->kc); free(c->vc); free(c->k0); free(c->v0); free(c->k1); free(c->v1);
    free(c->q); free(c->o); free(c->o2); free(c->kn); free(c->vn); free(c->row); free(c->tmp); free(c->cs);
    free(c->table);
}

/* One cache of B sequences (lens[b] keys of capacity Lk, the rest NaN
   bits), Ln new rows each: attn_<name>_fwd with k_new stores them, as the
   reference rotation and the cache's rounding say, writes no other byte of
   the cache, and gives the bits of a call without k_new over lens[b] + Ln
   keys; attn_<name>_append stores the same bytes; a sequence past the
   capacity is ATTN_ERR_CAPACITY with nothing written. */
static void append_case(const attn_kernel *k, attn_status (*append)(const attn_args *), const int32_t *lens, int64_t B,
                        int64_t Lk, int64_t Ln)
{
    append_run c;
    append_alloc(&c, k, append, lens, B, Lk, Ln);
    append_draw(&c);
    append_args(&c);
    append_check_stored(&c);
    append_check_refused(&c);
    append_check_out_of_range(&c);
    cr_expect_str_eq(attn_status_string(ATTN_ERR_CAPACITY),
                     "appending: seqlens_k[b] + seq_new is past the cache's seq_k");
    append_free(&c);
}

Test(append, rope_f32_cache)
{
    static const int32_t lens[] = { 5, 17, 0 };
    append_case(&attn_t_rope_kernel, attn_t_rope_append, lens, 3, 40, 3);
}
Test(append, rope_gptj_f16_cache) { static const int32_t lens[] = { 30, 1 }; append_case(&attn_t_f16_cache_kernel, attn_t_f16_cache_append, lens, 2, 150, 7); }
Test(append, rope_table_top_left) { static const int32_t lens[] = { 3, 9 }; append_case(&attn_t_top_left_kernel, attn_t_top_left_append, lens, 2, 20, 4); }
Test(append, q4_0_cache) { static const int32_t lens[] = { 2, 11 }; append_case(&attn_t_q4_0_kernel, attn_t_q4_0_append, lens, 2, 16, 1); }
/* paged caches: the new rows land on their pages (3 keys a page, NHD; 16, HND, q8_0 blocks) */
Test(append, paged_pages_of_3) { static const int32_t lens[] = { 4, 0, 8 }; append_case(&attn_t_paged_p3_kernel, attn_t_paged_p3_append, lens, 3, 15, 5); }
Test(append, paged_q8_0_hnd) { static const int32_t lens[] = { 20, 31 }; append_case(&attn_t_paged_q8_kernel, attn_t_paged_q8_append, lens, 2, 48, 2); }
/* shared_kv on pages: the latent row alone (no v_new), V its first blocks */
Test(append, paged_shared_kv_q4_0) { static const int32_t lens[] = { 7, 2 }; append_case(&attn_t_shared_kv_q4_kernel, attn_t_shared_kv_q4_append, lens, 2, 20, 3); }

/* Without padding every sequence attends over seq_k keys: the new rows must
   fill the cache to seq_k (ATTN_ERR_SEQLENS otherwise, append_case). */
Test(append, q8_0_cache_without_padding)
{
    static const int32_t lens[] = { 29, 29 };
    append_case(&attn_t_q8_0_kernel, attn_t_q8_0_append, lens, 2, 32, 3);
}
