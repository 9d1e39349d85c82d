/*
 * attn_bench_blas.c - the bench's unfused baselines on OpenBLAS
 * (attn_bench.h): sgemm + softmax + sgemm for sdpa (and sbgemm on bf16
 * tensors where the OpenBLAS it runs with exports it), the projections,
 * tanhf, sgemv and softmax of the additive and luong families, and the
 * choice of OpenBLAS's core.  Compiled and linked only where OpenBLAS's
 * header is there (ATTN_HAVE_OPENBLAS).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif

#ifndef ATTN_HAVE_OPENBLAS
#error "attn_bench_blas.c is the OpenBLAS baseline: compile it with -DATTN_HAVE_OPENBLAS"
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif
#include <cblas.h>
#include <dlfcn.h>

#include "attn_bench.h"

/* ---- the unfused baseline: sgemm, softmax, sgemm ------------------------- */

/* Whether key j is visible to query position p for the masks a baseline
   supports (causal, window, padding, either alignment); the others are not
   modelled. */
int attn_bench_blas_supports(const attn_spec *s)
{
    return s->family == ATTN_FAMILY_SDPA && s->global_tokens == 0 && s->chunk == 0 && s->sparse == ATTN_SPARSE_NONE && s->mask == ATTN_MASK_NONE &&
           s->softcap == 0.0f && !s->alibi && s->rel_bias == ATTN_REL_NONE;
}

/* exp without branches or libm, so the row loop vectorizes: Cephes' expf
   polynomial after a Cody-Waite reduction (the same method as the kernels,
   so the baseline is not slowed by a scalar libm call). */
static inline float baseline_exp(float x)
{
    union { float f; int32_t i; } u;
    float n, r, y;
    x = x < -88.0f ? -88.0f : x;
    n = floorf(x * 1.44269504f + 0.5f);
    r = x - n * 0.693359375f + n * 2.12194440e-4f;
    y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
         1.6666665459e-1f) * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    u.i = ((int32_t)n + 127) << 23;
    return y * u.f;
}

/* One masked softmax row: keys [lo, hi) visible, [0, lk) written. */
#define SOFTMAX_ROW_BODY                                                         \
    {                                                                            \
        int64_t j;                                                               \
        float m = -INFINITY, sum = 0.0f, inv;                                    \
        for (j = lo; j < hi; j++) m = r[j] > m ? r[j] : m;                       \
        for (j = 0; j < lk; j++) {                                               \
            const float e = (j >= lo && j < hi) ? baseline_exp(r[j] - m) : 0.0f; \
            r[j] = e;                                                            \
            sum += e;                                                            \
        }                                                                        \
        inv = sum > 0.0f ? 1.0f / sum : 0.0f;                                    \
        for (j = 0; j < lk; j++) r[j] *= inv;                                    \
    }
static void softmax_row(float *r, int64_t lk, int64_t lo, int64_t hi) SOFTMAX_ROW_BODY
#if defined(__x86_64__) || defined(_M_X64)
/* baseline_exp on 16 floats (x >= -88 where it matters) */
__attribute__((target("avx512f"))) static __m512 baseline_exp_avx512(__m512 x)
{
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 y;
    x = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
    x = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), x);
    y = _mm512_set1_ps(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
    return _mm512_mul_ps(y, _mm512_castsi512_ps(_mm512_slli_epi32(
                                _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23)));
}

/* The same row with AVX-512 intrinsics (gcc -O2 does not vectorize the loop
   above). */
__attribute__((target("avx512f"))) static void softmax_row_avx512(float *r, int64_t lk, int64_t lo, int64_t hi)
{
    const __m512 iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512 vm = _mm512_set1_ps(-INFINITY), vsum = _mm512_setzero_ps();
    float m, inv;
    int64_t j;
    for (j = lo; j < hi; j += 16) {
        const __mmask16 k = (__mmask16)(hi - j >= 16 ? 0xFFFF : (1u << (hi - j)) - 1);
        vm = _mm512_mask_max_ps(vm, k, vm, _mm512_maskz_loadu_ps(k, r + j));
    }
    m = _mm512_reduce_max_ps(vm);
    vm = _mm512_set1_ps(m);
    for (j = 0; j < lk; j += 16) {
        const __mmask16 k = (__mmask16)(lk - j >= 16 ? 0xFFFF : (1u << (lk - j)) - 1);
        const __m512 col = _mm512_add_ps(_mm512_set1_ps((float)j), iota);
        const __mmask16 vis = _mm512_mask_cmp_ps_mask(
            _mm512_cmp_ps_mask(col, _mm512_set1_ps((float)lo), _CMP_GE_OQ), col, _mm512_set1_ps((float)hi),
            _CMP_LT_OQ);
        const __m512 x = _mm512_max_ps(_mm512_set1_ps(-88.0f), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, r + j), vm));
        const __m512 y = _mm512_maskz_mov_ps(vis, baseline_exp_avx512(x));
        _mm512_mask_storeu_ps(r + j, k, y);
        vsum = _mm512_add_ps(vsum, y);
    }
    inv = _mm512_reduce_add_ps(vsum);
    inv = inv > 0.0f ? 1.0f / inv : 0.0f;
    for (j = 0; j < lk; j += 16) {
        const __mmask16 k = (__mmask16)(lk - j >= 16 ? 0xFFFF : (1u << (lk - j)) - 1);
        _mm512_mask_storeu_ps(r + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, r + j), _mm512_set1_ps(inv)));
    }
}

/* A row of P rounded to bf16, to nearest even, as attn_f32_to_bf16 does
   for the finite values a softmax gives. */
__attribute__((target("avx512f"))) static void round_row_bf16_avx512(const float *src, uint16_t *dst, int64_t n)
{
    int64_t j;
    for (j = 0; j < n; j += 16) {
        const __mmask16 k = (__mmask16)(n - j >= 16 ? 0xFFFF : (1u << (n - j)) - 1);
        const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(k, src + j));
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
        _mm512_mask_cvtepi32_storeu_epi16(dst + j, k, _mm512_srli_epi32(r, 16));
    }
}
#else
#define softmax_row_avx512 softmax_row
#define round_row_bf16_avx512(src, dst, n) attn_f32_to_bf16_array(src, dst, (size_t)(n))
#endif

/* The keys [lo, hi) query row i (of Lq, against lk keys) sees under the masks
   the baselines model. */
static void baseline_span(const attn_spec *s, int64_t i, int64_t Lq, int64_t lk, int64_t *lo, int64_t *hi)
{
    const int64_t p = s->top_left ? i : i + lk - Lq;
    *lo = 0;
    *hi = lk;
    if (s->causal && *hi > p + 1) *hi = p + 1;
    if (s->window_right >= 0 && *hi > p + s->window_right + 1) *hi = p + s->window_right + 1;
    if (s->window_left >= 0 && *lo < p - s->window_left) *lo = p - s->window_left;
    if (*hi < *lo) *hi = *lo;
}

/* The products of an unfused baseline, row-major with an f32 C:
   C[m][n] = alpha * A B^T (trans_b) or alpha * A B, A [m][k], B [n][k] or [k][n]. */
typedef void (*blas_gemm_fn)(int trans_b, int m, int n, int k, float alpha, const void *A, int lda,
                             const void *B, int ldb, float *C, int ldc);

static void gemm_f32(int trans_b, int m, int n, int k, float alpha, const void *A, int lda, const void *B,
                     int ldb, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                (const float *)A, lda, (const float *)B, ldb, 0.0f, C, ldc);
}

/* cblas_sbgemm (bf16 A and B, as uint16_t bit patterns, f32 C), looked up
   at run time: OpenBLAS declares it in cblas.h whether or not it was built
   with bfloat16 (BUILD_BFLOAT16), and Debian's 0.3.21 was built without. */
typedef void (*blas_sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                               blasint, float, const uint16_t *, blasint, const uint16_t *, blasint, float, float *,
                               blasint);
static blas_sbgemm_fn blas_sbgemm;

/* Sets blas_sbgemm when the OpenBLAS this program runs with exports
   cblas_sbgemm; returns whether it does. */
int attn_bench_find_sbgemm(void)
{
    void *self = dlopen(NULL, RTLD_LAZY); /* this program and the libraries it loaded */
    if (self) {
        void *sym = dlsym(self, "cblas_sbgemm");
        if (sym) memcpy(&blas_sbgemm, &sym, sizeof blas_sbgemm); /* ISO C has no object-to-function cast */
        dlclose(self);
    }
    return blas_sbgemm != NULL;
}

static void gemm_bf16(int trans_b, int m, int n, int k, float alpha, const void *A, int lda, const void *B,
                      int ldb, float *C, int ldc)
{
    blas_sbgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                (const uint16_t *)A, lda, (const uint16_t *)B, ldb, 0.0f, C, ldc);
}

/* One gemm for the scores of a whole GQA group (its G heads' query rows
   stacked: each K row is read once per group, as a grouped implementation
   would), the masked row softmax in f32, one gemm for O.  Q, K and V are
   arrays of elem-byte elements, the inputs of gemm: f32 (4; P is the
   softmax's output itself) or bf16 (2; P is rounded to bf16, to nearest
   even, for the second product).  O is f32. */
static attn_status blas_unfused(const attn_spec *s, const attn_args *a, blas_gemm_fn gemm, size_t elem)
{
    const int softmax_avx512 = attn_isa_supported(ATTN_ISA_AVX512);
    const int G = s->heads_q / s->heads_kv, D = s->head_dim, Dv = s->head_dim_v;
    const int64_t Lq = a->seq_q, Lk = a->seq_k, R = G * Lq; /* row g * Lq + i */
    const int p_bf16 = elem == sizeof(uint16_t);
    float *S = (float *)malloc(sizeof(float) * (size_t)(R * Lk) + 1);
    char *Q = (char *)malloc(elem * (size_t)(R * D) + 1);
    float *O = (float *)malloc(sizeof(float) * (size_t)(R * Dv) + 1);
    uint16_t *Pb = p_bf16 ? (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(R * Lk) + 1) : NULL;
    const void *P = p_bf16 ? (const void *)Pb : (const void *)S;
    int64_t b, i, r;
    int hk, g;
    if (!S || !Q || !O || (p_bf16 && !Pb)) {
        free(S);
        free(Q);
        free(O);
        free(Pb);
        return ATTN_ERR_NOMEM;
    }
    for (b = 0; b < a->batch; b++) {
        const int64_t lk = s->padding ? a->seqlens_k[b] : Lk;
        for (hk = 0; hk < s->heads_kv; hk++) {
            const char *k = (const char *)a->k + elem * (size_t)(b * a->k_stride[0] + hk * a->k_stride[2]);
            const char *v = (const char *)a->v + elem * (size_t)(b * a->v_stride[0] + hk * a->v_stride[2]);
            for (g = 0; g < G; g++)
                for (i = 0; i < Lq; i++)
                    memcpy(Q + elem * (size_t)((g * Lq + i) * D),
                           (const char *)a->q + elem * (size_t)(b * a->q_stride[0] + i * a->q_stride[1] +
                                                                (hk * G + g) * a->q_stride[2]),
                           elem * (size_t)D);
            /* S = scale * Q K^T */
            gemm(1, (int)R, (int)lk, D, s->scale, Q, D, k, (int)a->k_stride[1], S, (int)Lk);
            /* masked row softmax (and P rounded to bf16) */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(a->threads > 0 ? a->threads : omp_get_max_threads())
#endif
            for (r = 0; r < R; r++) {
                int64_t lo, hi;
                baseline_span(s, r % Lq, Lq, lk, &lo, &hi);
                if (softmax_avx512) softmax_row_avx512(S + r * Lk, lk, lo, hi);
                else softmax_row(S + r * Lk, lk, lo, hi);
                if (p_bf16 && softmax_avx512) round_row_bf16_avx512(S + r * Lk, Pb + r * Lk, lk);
                else if (p_bf16) attn_f32_to_bf16_array(S + r * Lk, Pb + r * Lk, (size_t)lk);
            }
            /* O = P V */
            gemm(0, (int)R, Dv, (int)lk, 1.0f, P, (int)Lk, v, (int)a->v_stride[1], O, Dv);
            for (g = 0; g < G; g++)
                for (i = 0; i < Lq; i++)
                    memcpy((float *)a->o + b * a->o_stride[0] + i * a->o_stride[1] + (hk * G + g) * a->o_stride[2],
                           O + (g * Lq + i) * Dv, sizeof(float) * (size_t)Dv);
        }
    }
    free(S);
    free(Q);
    free(O);
    free(Pb);
    return ATTN_OK;
}

/* sgemm + softmax + sgemm on f32 tensors */
attn_status attn_bench_blas_attention(const attn_spec *s, const attn_args *a)
{
    return blas_unfused(s, a, gemm_f32, sizeof(float));
}

/* sbgemm + softmax + sbgemm on bf16 Q, K, V (O f32); only when find_sbgemm
   found it */
attn_status attn_bench_blas_attention_bf16(const attn_spec *s, const attn_args *a)
{
    return blas_unfused(s, a, gemm_bf16, sizeof(uint16_t));
}

/* ---- the unfused backward: five sgemms, the softmax gradient between ------ */

/* Whether the backward baseline models the spec: the forward baseline's
   masks on f32 tensors and gradients, no dropout, sinks or temperature. */
int attn_bench_blas_backward_supports(const attn_spec *s)
{
    return attn_bench_blas_supports(s) && s->dtype_q == ATTN_DTYPE_F32 && s->dtype_kv == ATTN_DTYPE_F32 &&
           s->dtype_o == ATTN_DTYPE_F32 && s->dtype_grad_q == ATTN_DTYPE_F32 && s->dtype_grad_kv == ATTN_DTYPE_F32 &&
           !s->dropout && !s->sinks && s->temperature_scale == 0.0 && !s->shared_kv && s->page == 0 && !s->rope_style;
}

/* A row of P = exp(S - lse) on the visible keys [lo, hi), 0 on the others of [0, lk). */
static void p_row(float *r, int64_t lk, int64_t lo, int64_t hi, float lse)
{
    int64_t j;
    for (j = 0; j < lk; j++) r[j] = j >= lo && j < hi && lse != -INFINITY ? baseline_exp(r[j] - lse) : 0.0f;
}

/* A row of dS = scale P (dP - di), into dP's row. */
static void ds_row(const float *p, float *dp, int64_t lk, float di, float scale)
{
    int64_t j;
    for (j = 0; j < lk; j++) dp[j] = scale * p[j] * (dp[j] - di);
}
#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx512f"))) static void p_row_avx512(float *r, int64_t lk, int64_t lo, int64_t hi, float lse)
{
    const __m512 iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int64_t j;
    if (lse == -INFINITY) hi = lo; /* a row that sees no key */
    for (j = 0; j < lk; j += 16) {
        const __mmask16 k = (__mmask16)(lk - j >= 16 ? 0xFFFF : (1u << (lk - j)) - 1);
        const __m512 col = _mm512_add_ps(_mm512_set1_ps((float)j), iota);
        const __mmask16 vis = _mm512_mask_cmp_ps_mask(
            _mm512_cmp_ps_mask(col, _mm512_set1_ps((float)lo), _CMP_GE_OQ), col, _mm512_set1_ps((float)hi),
            _CMP_LT_OQ);
        const __m512 x = _mm512_max_ps(_mm512_set1_ps(-88.0f),
                                       _mm512_sub_ps(_mm512_maskz_loadu_ps(k, r + j), _mm512_set1_ps(lse)));
        _mm512_mask_storeu_ps(r + j, k, _mm512_maskz_mov_ps(vis, baseline_exp_avx512(x)));
    }
}
__attribute__((target("avx512f"))) static void ds_row_avx512(const float *p, float *dp, int64_t lk, float di,
                                                             float scale)
{
    int64_t j;
    for (j = 0; j < lk; j += 16) {
        const __mmask16 k = (__mmask16)(lk - j >= 16 ? 0xFFFF : (1u << (lk - j)) - 1);
        const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + j), _mm512_set1_ps(di));
        _mm512_mask_storeu_ps(dp + j, k,
                              _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, p + j), d), _mm512_set1_ps(scale)));
    }
}
#else
#define p_row_avx512 p_row
#define ds_row_avx512 ds_row
#endif

/* The backward's buffers: a GQA group's rows stacked (row g * Lq + i) as
   the forward's baseline stacks them. */
typedef struct {
    float *s, *dp, *q, *d_o, *dq, *dk, *dv, *di, *lse;
} blas_bwd_buffers;

/* Copies n rows of w floats from src (row i at src + i * stride) to dst (w apart). */
static void gather_rows(float *dst, const float *src, int64_t n, int64_t stride, int w)
{
    int64_t i;
    for (i = 0; i < n; i++) memcpy(dst + i * w, src + i * stride, sizeof(float) * (size_t)w);
}

/* One (batch, kv head) of the backward: S = scale Q K^T, P from the forward's
   LSE, dV = P^T dO, dP = dO V^T, dS = scale P (dP - D_i), dQ = dS K,
   dK = dS^T Q (five sgemms over every key below lk: the masked entries are
   zeros inside them, as an unfused backward computes them). */
static void blas_bwd_head(const attn_spec *s, const attn_bwd_args *ba, int64_t b, int hk, const blas_bwd_buffers *w)
{
    const attn_args *a = &ba->fwd;
    const int G = s->heads_q / s->heads_kv, D = s->head_dim, Dv = s->head_dim_v;
    const int64_t Lq = a->seq_q, Lk = a->seq_k, R = G * Lq, lk = s->padding ? a->seqlens_k[b] : Lk;
    const int softmax_avx512 = attn_isa_supported(ATTN_ISA_AVX512);
    const float *k = (const float *)a->k + b * a->k_stride[0] + hk * a->k_stride[2];
    const float *v = (const float *)a->v + b * a->v_stride[0] + hk * a->v_stride[2];
    float *dk = (float *)ba->dk + b * ba->dk_stride[0] + hk * ba->dk_stride[2];
    float *dv = (float *)ba->dv + b * ba->dv_stride[0] + hk * ba->dv_stride[2];
    int64_t r, j;
    int g;
    for (g = 0; g < G; g++) {
        const int h = hk * G + g;
        gather_rows(w->q + g * Lq * D, (const float *)a->q + b * a->q_stride[0] + h * a->q_stride[2], Lq,
                    a->q_stride[1], D);
        gather_rows(w->d_o + g * Lq * Dv, (const float *)ba->d_o + b * ba->do_stride[0] + h * ba->do_stride[2], Lq,
                    ba->do_stride[1], Dv);
        for (r = 0; r < Lq; r++) {
            const float *o = (const float *)a->o + b * a->o_stride[0] + r * a->o_stride[1] + h * a->o_stride[2];
            float sum = 0.0f;
            int e;
            for (e = 0; e < Dv; e++) sum += w->d_o[(g * Lq + r) * Dv + e] * o[e];
            w->di[g * Lq + r] = sum;
            w->lse[g * Lq + r] = a->lse[(b * s->heads_q + h) * Lq + r];
        }
    }
    if (lk > 0 && R > 0) {
        gemm_f32(1, (int)R, (int)lk, D, s->scale, w->q, D, k, (int)a->k_stride[1], w->s, (int)Lk);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(a->threads > 0 ? a->threads : omp_get_max_threads())
#endif
        for (r = 0; r < R; r++) {
            int64_t lo, hi;
            baseline_span(s, r % Lq, Lq, lk, &lo, &hi);
            if (softmax_avx512) p_row_avx512(w->s + r * Lk, lk, lo, hi, w->lse[r]);
            else p_row(w->s + r * Lk, lk, lo, hi, w->lse[r]);
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)lk, Dv, (int)R, 1.0f, w->s, (int)Lk, w->d_o, Dv,
                    0.0f, w->dv, Dv);
        gemm_f32(1, (int)R, (int)lk, Dv, 1.0f, w->d_o, Dv, v, (int)a->v_stride[1], w->dp, (int)Lk);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(a->threads > 0 ? a->threads : omp_get_max_threads())
#endif
        for (r = 0; r < R; r++) {
            if (softmax_avx512) ds_row_avx512(w->s + r * Lk, w->dp + r * Lk, lk, w->di[r], s->scale);
            else ds_row(w->s + r * Lk, w->dp + r * Lk, lk, w->di[r], s->scale);
        }
        gemm_f32(0, (int)R, D, (int)lk, 1.0f, w->dp, (int)Lk, k, (int)a->k_stride[1], w->dq, D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)lk, D, (int)R, 1.0f, w->dp, (int)Lk, w->q, D, 0.0f,
                    w->dk, D);
    } else {
        memset(w->dq, 0, sizeof(float) * (size_t)(R * D));
    }
    for (g = 0; g < G; g++)
        for (r = 0; r < Lq; r++)
            memcpy((float *)ba->dq + b * ba->dq_stride[0] + r * ba->dq_stride[1] + (hk * G + g) * ba->dq_stride[2],
                   w->dq + (g * Lq + r) * D, sizeof(float) * (size_t)D);
    for (j = 0; j < Lk; j++) {
        float *dkr = dk + j * ba->dk_stride[1], *dvr = dv + j * ba->dv_stride[1];
        if (j < lk) {
            memcpy(dkr, w->dk + j * D, sizeof(float) * (size_t)D);
            memcpy(dvr, w->dv + j * Dv, sizeof(float) * (size_t)Dv);
        } else {
            memset(dkr, 0, sizeof(float) * (size_t)D);
            memset(dvr, 0, sizeof(float) * (size_t)Dv);
        }
    }
}

/* The unfused backward on f32 tensors (attn_bench_blas_backward_supports):
   what a user of OpenBLAS would write from the forward's O and LSE. */
attn_status attn_bench_blas_backward(const attn_spec *s, const attn_bwd_args *ba)
{
    const int G = s->heads_q / s->heads_kv, D = s->head_dim, Dv = s->head_dim_v;
    const int64_t Lq = ba->fwd.seq_q, Lk = ba->fwd.seq_k, R = G * Lq;
    blas_bwd_buffers w;
    attn_status st = ATTN_OK;
    int64_t b;
    int hk;
    w.s = (float *)malloc(sizeof(float) * (size_t)(R * Lk) + 1);
    w.dp = (float *)malloc(sizeof(float) * (size_t)(R * Lk) + 1);
    w.q = (float *)malloc(sizeof(float) * (size_t)(R * (2 * D + Dv + 2)) + 1);
    w.dk = (float *)malloc(sizeof(float) * (size_t)(Lk * (D + Dv)) + 1);
    if (!w.s || !w.dp || !w.q || !w.dk) {
        st = ATTN_ERR_NOMEM;
        goto done;
    }
    w.d_o = w.q + R * D;
    w.dq = w.d_o + R * Dv;
    w.di = w.dq + R * D;
    w.lse = w.di + R;
    w.dv = w.dk + Lk * D;
    for (b = 0; b < ba->fwd.batch; b++)
        for (hk = 0; hk < s->heads_kv; hk++) blas_bwd_head(s, ba, b, hk, &w);
done:
    free(w.s);
    free(w.dp);
    free(w.q);
    free(w.dk);
    return st;
}

/* OpenBLAS picks its kernels when it loads, from OPENBLAS_CORETYPE or its
   own CPU detection (Debian's 0.3.21 does not know Zen 5 and takes
   Haswell).  For a fair baseline we run it with the best core for this
   CPU: re-run ourselves with OPENBLAS_CORETYPE set, unless
   --blas-core keep says to leave the environment alone. */
void attn_bench_choose_blas_core(int argc, char **argv)
{
    const char *want = attn_isa_supported(ATTN_ISA_AVX512) ? "SkylakeX" : "Haswell";
    const char *have = getenv("OPENBLAS_CORETYPE");
    int i;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blas-core") && i + 1 < argc) want = argv[i + 1];
    }
    if (strcmp(want, "keep") && (!have || strcmp(have, want)) && !getenv("ATTNGEN_BENCH_REEXEC")) {
        setenv("OPENBLAS_CORETYPE", want, 1);
        setenv("ATTNGEN_BENCH_REEXEC", "1", 1);
        execv("/proc/self/exe", argv);
    }
}

/*
 * The unfused baseline, what a user of OpenBLAS would write, on f32
 * tensors, per batch entry: cblas_sgemm for the projections (additive:
 * W_s S^T, and W_h H^T unless U is given; concat: the s and h halves of W;
 * general: W S^T), then for each row the sums q_i + k_j (+ b) through tanhf
 * from libm, one element at a time, and cblas_sgemv with v for the row's
 * scores (dot and general: one cblas_sgemm for all the scores), the masked
 * row softmax of the sdpa baseline, and the context sum_j a_ij h_j:
 * cblas_sgemv for one row, cblas_sgemm for more.  The masks it models are
 * padding; a bool mask is not modelled (no baseline).
 */
attn_status attn_bench_blas_classic(const attn_spec *s, const attn_classic_args *a)
{
    const int additive = s->family == ATTN_FAMILY_ADDITIVE;
    const int concat = !additive && s->score == ATTN_SCORE_CONCAT;
    const int general = !additive && s->score == ATTN_SCORE_GENERAL;
    const int tanh_score = additive || concat;
    const int Ds = s->query_dim, Dh = s->key_dim, Da = s->attn_dim;
    const int Lq = (int)a->seq_q, Lk = (int)a->seq_k;
    const int threads = a->threads > 0 ? a->threads : 1;
    const int qd = tanh_score ? Da : Dh; /* the width of the projected rows */
    const int softmax_avx512 = attn_isa_supported(ATTN_ISA_AVX512);
    float *Q = (float *)malloc(sizeof(float) * (size_t)Lq * (size_t)qd + 1);
    float *K = tanh_score ? (float *)malloc(sizeof(float) * (size_t)Lk * (size_t)Da + 1) : NULL;
    float *T = tanh_score ? (float *)malloc(sizeof(float) * (size_t)Lk * (size_t)Da + 1) : NULL;
    float *E = (float *)malloc(sizeof(float) * (size_t)Lq * (size_t)Lk + 1);
    /* W_s and W_h and their row strides: additive's own, or the halves of concat's W [Da][Dh + Ds] */
    const float *w_s = additive ? (const float *)a->w_s : concat ? (const float *)a->w + Dh : (const float *)a->w;
    const float *w_h = additive ? (const float *)a->w_h : (const float *)a->w;
    const int ldw_s = additive ? Ds : concat ? Dh + Ds : Ds, ldw_h = additive ? Dh : Dh + Ds;
    int64_t b;
    int i, j, e;
    if (!Q || (tanh_score && (!K || !T)) || !E) {
        free(Q);
        free(K);
        free(T);
        free(E);
        return ATTN_ERR_NOMEM;
    }
    for (b = 0; b < a->batch; b++) {
        const int lk = s->padding ? (int)a->seqlens_k[b] : Lk;
        const float *S = (const float *)a->s + b * a->s_stride[0];
        const float *H = (const float *)a->h + b * a->h_stride[0];
        float *C = (float *)a->c + b * a->c_stride[0];
        const int lds = (int)a->s_stride[1], ldh = (int)a->h_stride[1], ldc = (int)a->c_stride[1];
        if (tanh_score) {
            const float *Kb = K;
            int ldk = Da;
            /* q = W_s s (+ b) for every row, k = W_h h for every key (or U) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Da, Ds, 1.0f, S, lds, w_s, ldw_s, 0.0f, Q, Da);
            if (a->b_attn)
                for (i = 0; i < Lq; i++)
                    for (e = 0; e < Da; e++) Q[(size_t)i * Da + e] += ((const float *)a->b_attn)[e];
            if (additive && a->u) {
                Kb = (const float *)a->u + b * a->u_stride[0];
                ldk = (int)a->u_stride[1];
            } else if (lk > 0) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, lk, Da, Dh, 1.0f, H, ldh, w_h, ldw_h, 0.0f, K,
                            Da);
            }
            for (i = 0; i < Lq; i++) {
                const float *q = Q + (size_t)i * Da;
                /* tanh(q_i + k_j) one element at a time, libm's tanhf */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
                for (j = 0; j < lk; j++) {
                    int x;
                    for (x = 0; x < Da; x++) T[(size_t)j * Da + x] = tanhf(q[x] + Kb[(size_t)j * ldk + x]);
                }
                if (lk > 0)
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, lk, Da, 1.0f, T, Da, (const float *)a->v_attn, 1, 0.0f,
                                E + (size_t)i * Lk, 1);
            }
        } else if (lk > 0) {
            const float *q = S;
            int ldq = lds;
            if (general) { /* q_i = W s_i, then h_j . q_i */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Dh, Ds, 1.0f, S, lds, w_s, ldw_s, 0.0f, Q,
                            Dh);
                q = Q;
                ldq = Dh;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, lk, Dh, 1.0f, q, ldq, H, ldh, 0.0f, E, Lk);
        }
        for (i = 0; i < Lq; i++) {
            if (softmax_avx512) softmax_row_avx512(E + (size_t)i * Lk, lk, 0, lk);
            else softmax_row(E + (size_t)i * Lk, lk, 0, lk);
        }
        if (lk == 0) {
            for (i = 0; i < Lq; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * (size_t)Dh);
        } else if (Lq == 1) {
            cblas_sgemv(CblasRowMajor, CblasTrans, lk, Dh, 1.0f, H, ldh, E, 1, 0.0f, C, 1);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Lq, Dh, lk, 1.0f, E, Lk, H, ldh, 0.0f, C, ldc);
        }
    }
    free(Q);
    free(K);
    free(T);
    free(E);
    return ATTN_OK;
}
