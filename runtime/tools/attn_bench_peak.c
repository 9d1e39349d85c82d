/*
 * attn_bench_peak.c - the machine's limits the bench reports a kernel
 * against (attn_bench.h): the f32 FMA peak of an ISA (independent FMA
 * chains in registers), the bf16 dot peak (chains of vdpbf16ps), the int8
 * dot peak (chains of vpdpbusd, or of vpmaddubsw where there is no VNNI) and the
 * streaming read bandwidth and the copy bandwidth (memcpy), each on the bench's number of threads.
 *
 * The probes' loops (independent chains of one instruction in registers)
 * are rendered by the generator from the ISA modules, in the spellings the
 * kernels use (generator/probes.lua, attn_bench_probes.c of the build
 * cache's runtime entry); this file times them and divides.
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

#include "attn_bench.h"

double attn_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- FMA and dot peaks --------------------------------------------------- */

/* The generated probe of that kind and ISA (attn_probes), or NULL. */
static const attn_probe *find_probe(attn_probe_kind kind, attn_isa isa)
{
    const attn_probe *p;
    for (p = attn_probes; p->loop != NULL; p++)
        if (p->kind == kind && p->isa == isa) return p;
    return NULL;
}

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

/* The best rate of a probe on `threads` threads; 0 when there is none. */
static double probe_peak(const attn_probe *p, int threads)
{
    return p ? loop_peak(p->loop, p->ops, threads) : 0.0;
}

/* Measured f32 FMA peak of one ISA on `threads` threads, GFLOP/s (for
   avx512bf16, that of AVX-512: its f32 work runs there); 0 when the ISA has
   no peak loop here (scalar) or cannot run. */
double attn_bench_fma_peak(attn_isa isa, int threads)
{
    if (!attn_isa_supported(isa)) return 0.0;
    return probe_peak(find_probe(ATTN_PROBE_FMA, isa == ATTN_ISA_AVX512BF16 ? ATTN_ISA_AVX512 : isa), threads);
}

/* Measured bf16 dot peak (vdpbf16ps) on `threads` threads, GFLOP/s; 0 where
   the CPU has no AVX512_BF16 (or the compiler does not know it). */
double attn_bench_bf16_dot_peak(int threads)
{
    if (!attn_isa_supported(ATTN_ISA_AVX512BF16)) return 0.0;
    return probe_peak(find_probe(ATTN_PROBE_BF16_DOT, ATTN_ISA_AVX512BF16), threads);
}

/* Measured int8 dot peak of one ISA's variant (the integer products of
   matmul = "int8", in the instruction its block dots take on this CPU,
   attn_cpu()->int8_dot, as the kernels dispatch: vpdpbusd on 512-bit vectors
   (AVX512-VNNI) for the AVX-512 variants, on 256-bit ones (AVX-VNNI) for the
   AVX2 variant, and where the CPU has neither, the form the kernels fall back
   to: vpmaddubsw, vpmaddwd by ones and vpaddd) on `threads` threads, GOP/s,
   a product counted as 2 (as an FMA counts 2 FLOPs); 0 where the variant has
   no such loop here (scalar, NEON) or cannot run. */
double attn_bench_int8_dot_peak(attn_isa isa, int threads)
{
    const int dot = attn_cpu()->int8_dot;
    const int avx512 = isa == ATTN_ISA_AVX512 || isa == ATTN_ISA_AVX512BF16;
    if (!attn_isa_supported(isa) || !(avx512 || isa == ATTN_ISA_AVX2)) return 0.0;
    if (avx512 && (dot & ATTN_INT8_DOT_AVX512VNNI))
        return probe_peak(find_probe(ATTN_PROBE_INT8_DP, ATTN_ISA_AVX512), threads);
    if (isa == ATTN_ISA_AVX2 && (dot & ATTN_INT8_DOT_AVXVNNI))
        return probe_peak(find_probe(ATTN_PROBE_INT8_DP, ATTN_ISA_AVX2), threads);
    return probe_peak(find_probe(ATTN_PROBE_INT8_MAD, ATTN_ISA_AVX2), threads);
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
