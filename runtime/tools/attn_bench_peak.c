/*
 * attn_bench_peak.c - the machine's limits the bench reports a kernel
 * against (attn_bench.h): the f32 FMA peak of an ISA (independent FMA
 * chains in registers), the bf16 dot peak (chains of vdpbf16ps), the int8
 * dot peak (chains of vpdpbusd, or of vpmaddubsw where there is no VNNI) and the
 * streaming read bandwidth and the copy bandwidth (memcpy), each on the bench's number of threads.
 *
 * The probes are loops of one instruction, written with the ISA's
 * intrinsics here rather than rendered by the generator: a probe is not a
 * kernel of any config, and its only contract is to keep the units busy.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <stddef.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "attn_bench.h"

double attn_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- FMA peak ------------------------------------------------------------ */

/* Each thread runs CHAINS independent FMA chains for iters steps; the result
   feeds a volatile sink so nothing is optimized away. */
#define CHAINS 12
static volatile float peak_sink;
/* twelve named accumulators, so that they live in registers */
#define FMA12(F)                                                                    \
    a0 = F(a0); a1 = F(a1); a2 = F(a2); a3 = F(a3); a4 = F(a4); a5 = F(a5);         \
    a6 = F(a6); a7 = F(a7); a8 = F(a8); a9 = F(a9); a10 = F(a10); a11 = F(a11)

#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx512f"))) static void fma_loop_avx512(long iters)
{
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f), a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f),
        a5 = _mm512_set1_ps(5.0f), a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f), a9 = _mm512_set1_ps(9.0f),
        a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    long i;
#define STEP(x) _mm512_fmadd_ps(x, b, c)
    for (i = 0; i < iters; i++) {
        FMA12(STEP);
    }
#undef STEP
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    a0 = _mm512_add_ps(a0, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    peak_sink = _mm512_reduce_add_ps(a0);
}

__attribute__((target("avx2,fma"))) static void fma_loop_avx2(long iters)
{
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f), a2 = _mm256_set1_ps(2.0f), a3 = _mm256_set1_ps(3.0f), a4 = _mm256_set1_ps(4.0f),
        a5 = _mm256_set1_ps(5.0f), a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f), a8 = _mm256_set1_ps(8.0f), a9 = _mm256_set1_ps(9.0f),
        a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    long i;
#define STEP(x) _mm256_fmadd_ps(x, b, c)
    for (i = 0; i < iters; i++) {
        FMA12(STEP);
    }
#undef STEP
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)), _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    peak_sink = _mm_cvtss_f32(_mm256_castps256_ps128(a0));
}
#endif

#if defined(__aarch64__)
static void fma_loop_neon(long iters)
{
    const float32x4_t b = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-6f);
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(1.0f), a2 = vdupq_n_f32(2.0f), a3 = vdupq_n_f32(3.0f), a4 = vdupq_n_f32(4.0f),
        a5 = vdupq_n_f32(5.0f), a6 = vdupq_n_f32(6.0f), a7 = vdupq_n_f32(7.0f), a8 = vdupq_n_f32(8.0f), a9 = vdupq_n_f32(9.0f),
        a10 = vdupq_n_f32(10.0f), a11 = vdupq_n_f32(11.0f);
    long i;
#define STEP(x) vfmaq_f32(c, x, b)
    for (i = 0; i < iters; i++) {
        FMA12(STEP);
    }
#undef STEP
    a0 = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)), vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
    a0 = vaddq_f32(a0, vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)));
    peak_sink = vaddvq_f32(a0);
}
#endif

/* The bf16 dot peak: chains of vdpbf16ps (AVX512_BF16), each instruction
   16 lanes x 2 products, 64 FLOPs.  Its latency is longer than an FMA's, so
   it takes 16 chains to keep the units busy (12 reach about 0.93 of the rate
   on Zen 5).  Compilers that know the target: GCC 10, clang 9 and later. */
#if (defined(__x86_64__) || defined(_M_X64)) && \
    ((defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define BENCH_BF16_DOT 1
#define DOT_CHAINS 16
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void dot_loop_avx512bf16(long iters)
{
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f), a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f),
        a5 = _mm512_set1_ps(5.0f), a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f), a9 = _mm512_set1_ps(9.0f),
        a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f), a12 = _mm512_set1_ps(12.0f), a13 = _mm512_set1_ps(13.0f),
        a14 = _mm512_set1_ps(14.0f), a15 = _mm512_set1_ps(15.0f);
    long i;
    /* distinct starting values: chains the compiler could prove equal would be merged */
#define STEP(x) _mm512_dpbf16_ps(x, b, b)
    for (i = 0; i < iters; i++) {
        FMA12(STEP);
        a12 = STEP(a12); a13 = STEP(a13); a14 = STEP(a14); a15 = STEP(a15);
    }
#undef STEP
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    a8 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)), _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15)));
    peak_sink = _mm512_reduce_add_ps(_mm512_add_ps(a0, a8));
}
#endif

/* The int8 dot peak: the integer products of matmul = "int8" configs, in the
   instruction their block dots take on this CPU (attn_cpu()->int8_dot, as the
   kernels dispatch): chains of vpdpbusd on 512-bit vectors (AVX512-VNNI: 64
   u8 x s8 products an instruction) for the AVX-512 variant, on 256-bit ones
   (AVX-VNNI: 32) for the AVX2 variant, and where the CPU has neither, the
   form the kernels fall back to: vpmaddubsw, vpmaddwd by ones and vpaddd (32
   products in three instructions).  A product counts as 2 operations, as an
   FMA counts 2 FLOPs, so the rate compares with a FLOP rate.  Compilers that
   know AVX-VNNI: GCC 11, clang 12 and later. */
#if (defined(__x86_64__) || defined(_M_X64)) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define BENCH_INT8_DOT 1
static volatile int int8_sink;
/* sixteen chains of acc = STEP(acc), their sum into int8_sink (T: the vector type, ADD its add) */
#define INT8_CHAINS(T, SET1, ADD, RED)                                                                 \
    T a0 = SET1(0), a1 = SET1(1), a2 = SET1(2), a3 = SET1(3), a4 = SET1(4), a5 = SET1(5), a6 = SET1(6),  \
      a7 = SET1(7), a8 = SET1(8), a9 = SET1(9), a10 = SET1(10), a11 = SET1(11), a12 = SET1(12),          \
      a13 = SET1(13), a14 = SET1(14), a15 = SET1(15);                                                    \
    long i;                                                                                              \
    for (i = 0; i < iters; i++) {                                                                        \
        FMA12(STEP);                                                                                     \
        a12 = STEP(a12); a13 = STEP(a13); a14 = STEP(a14); a15 = STEP(a15);                              \
    }                                                                                                    \
    a0 = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                              \
    a8 = ADD(ADD(ADD(a8, a9), ADD(a10, a11)), ADD(ADD(a12, a13), ADD(a14, a15)));                        \
    int8_sink = RED(ADD(a0, a8))

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void dpbusd_loop_avx512(long iters)
{
    const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
#define STEP(x) _mm512_dpbusd_epi32(x, u, s)
    INT8_CHAINS(__m512i, _mm512_set1_epi32, _mm512_add_epi32, _mm512_reduce_add_epi32);
#undef STEP
}

/* the sum of a 256-bit vector's 8 int32 lanes */
#define HSUM256(v)                                                                                        \
    (_mm256_extract_epi32(v, 0) + _mm256_extract_epi32(v, 1) + _mm256_extract_epi32(v, 2) +              \
     _mm256_extract_epi32(v, 3) + _mm256_extract_epi32(v, 4) + _mm256_extract_epi32(v, 5) +              \
     _mm256_extract_epi32(v, 6) + _mm256_extract_epi32(v, 7))

__attribute__((target("avx2,avxvnni"))) static void dpbusd_loop_avxvnni(long iters)
{
    const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
#define STEP(x) _mm256_dpbusd_avx_epi32(x, u, s)
    INT8_CHAINS(__m256i, _mm256_set1_epi32, _mm256_add_epi32, HSUM256);
#undef STEP
}

__attribute__((target("avx2"))) static void maddubs_loop_avx2(long iters)
{
    const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
#define STEP(x) _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones))
    INT8_CHAINS(__m256i, _mm256_set1_epi32, _mm256_add_epi32, HSUM256);
#undef STEP
}
#endif

/* The best of three runs of loop(iters) on `threads` threads, GFLOP/s, for
   a loop of flops FLOPs an iteration. */
static double loop_peak(void (*loop)(long), double flops, int threads)
{
    const long iters = 4000000;
    double best = 0.0;
    int rep;
    for (rep = 0; rep < 3; rep++) {
        const double t0 = attn_bench_now();
        double dt;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
        loop(iters);
        dt = attn_bench_now() - t0;
        {
            const double gf = flops * (double)iters * threads / dt * 1e-9;
            if (gf > best) best = gf;
        }
    }
    return best;
}

/* Measured f32 FMA peak of one ISA on `threads` threads, GFLOP/s (for
   avx512bf16, that of AVX-512: its f32 work runs there); 0 when the ISA has
   no peak loop here (scalar) or cannot run. */
double attn_bench_fma_peak(attn_isa isa, int threads)
{
    void (*loop)(long) = NULL;
    int lanes = 0;
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == ATTN_ISA_AVX512 || isa == ATTN_ISA_AVX512BF16) { loop = fma_loop_avx512; lanes = 16; }
    if (isa == ATTN_ISA_AVX2) { loop = fma_loop_avx2; lanes = 8; }
#endif
#if defined(__aarch64__)
    if (isa == ATTN_ISA_NEON) { loop = fma_loop_neon; lanes = 4; }
#endif
    if (!loop || !attn_isa_supported(isa)) return 0.0;
    return loop_peak(loop, 2.0 * CHAINS * lanes, threads);
}

/* Measured bf16 dot peak (vdpbf16ps) on `threads` threads, GFLOP/s; 0 where
   the CPU has no AVX512_BF16 (or the compiler does not know it). */
double attn_bench_bf16_dot_peak(int threads)
{
#ifdef BENCH_BF16_DOT
    if (attn_isa_supported(ATTN_ISA_AVX512BF16)) return loop_peak(dot_loop_avx512bf16, 64.0 * DOT_CHAINS, threads);
#endif
    (void)threads;
    return 0.0;
}

/* Measured int8 dot peak of one ISA's variant (the integer products of
   matmul = "int8", in the form its block dots take on this CPU: see above) on
   `threads` threads, GOP/s, a product counted as 2; 0 where the variant has no
   such loop here (scalar, NEON) or cannot run. */
double attn_bench_int8_dot_peak(attn_isa isa, int threads)
{
#ifdef BENCH_INT8_DOT
    const int dot = attn_cpu()->int8_dot;
    if (!attn_isa_supported(isa)) return 0.0;
    if ((isa == ATTN_ISA_AVX512 || isa == ATTN_ISA_AVX512BF16) && (dot & ATTN_INT8_DOT_AVX512VNNI))
        return loop_peak(dpbusd_loop_avx512, 2.0 * 64 * 16, threads);
    if (isa == ATTN_ISA_AVX2 && (dot & ATTN_INT8_DOT_AVXVNNI))
        return loop_peak(dpbusd_loop_avxvnni, 2.0 * 32 * 16, threads);
    if (isa == ATTN_ISA_AVX512 || isa == ATTN_ISA_AVX512BF16 || isa == ATTN_ISA_AVX2)
        return loop_peak(maddubs_loop_avx2, 2.0 * 32 * 16, threads);
#endif
    (void)isa;
    (void)threads;
    return 0.0;
}

/* ---- read bandwidth ------------------------------------------------------ */

/* Sums of a buffer far larger than the caches, four independent chains; the
   result feeds a volatile sink. */
static volatile float read_sink;

#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx512f"))) static float read_sum_avx512(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i;
    for (i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
#endif

static float read_sum(const float *p, size_t n)
{
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    size_t i;
#if defined(__x86_64__) || defined(_M_X64)
    if (attn_isa_supported(ATTN_ISA_AVX512)) return read_sum_avx512(p, n);
#endif
    for (i = 0; i + 4 <= n; i += 4) { /* the compiler vectorizes this at -O2 and above */
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
    }
    return (a0 + a1) + (a2 + a3);
}

/* One pass of a bandwidth probe: thread t's share of the buffers (units
   of the probe's own). */
typedef void (*bw_pass)(const void *ctx, size_t t, size_t share);

/* The best rate of five passes over n units on `threads` threads (each
   thread its own contiguous share, a multiple of 64 units), GB/s counting
   `bytes` a pass. */
static double best_pass_rate(bw_pass pass, const void *ctx, size_t n, double bytes, int threads)
{
    double best = 0.0;
    int rep;
    for (rep = 0; rep < 5; rep++) {
        const double t0 = attn_bench_now();
        double dt;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
        pass(ctx, (size_t)omp_get_thread_num(), n / (size_t)omp_get_num_threads() / 64 * 64);
#else
        (void)threads;
        pass(ctx, 0, n);
#endif
        dt = attn_bench_now() - t0;
        if (bytes / dt * 1e-9 > best) best = bytes / dt * 1e-9;
    }
    return best;
}

static void read_pass(const void *ctx, size_t t, size_t share)
{
    const float x = read_sum((const float *)ctx + t * share, share);
#ifdef _OPENMP
#pragma omp critical
#endif
    read_sink += x;
}

/* Streaming read bandwidth on `threads` threads, GB/s: the best of five
   passes over buf, READ_BW_FLOATS floats (each thread reads its own
   contiguous share, as the decode kernels read their KV splits). */
double attn_bench_read_bandwidth(const float *buf, int threads)
{
    return best_pass_rate(read_pass, buf, READ_BW_FLOATS, (double)READ_BW_FLOATS * sizeof(float), threads);
}

/* The buffers of a copy pass. */
typedef struct {
    char *dst;
    const char *src;
} copy_buffers;

static void copy_pass(const void *ctx, size_t t, size_t share)
{
    const copy_buffers *c = (const copy_buffers *)ctx;
    memcpy(c->dst + t * share, c->src + t * share, share);
}

/* Copy bandwidth on `threads` threads, GB/s of bytes read plus written:
   the best of five memcpy passes of COPY_BW_BYTES (each thread its own
   contiguous share), the ceiling of a kernel that stores what it reads. */
double attn_bench_copy_bandwidth(void *dst, const void *src, int threads)
{
    copy_buffers c;
    double bw;
    c.dst = (char *)dst;
    c.src = (const char *)src;
    bw = best_pass_rate(copy_pass, &c, COPY_BW_BYTES, 2.0 * (double)COPY_BW_BYTES, threads);
    read_sink += (float)((volatile const char *)dst)[0]; /* the copy is used */
    return bw;
}
