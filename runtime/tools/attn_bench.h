/*
 * attn_bench.h - the parts of `attngen bench` (docs/architecture.md,
 * "Runtime and tools"): attn_bench_main.c (options, inputs, timing,
 * report), attn_bench_peak.c (the machine's FMA, bf16 and int8 dot peaks, timing
 * the generated probes of attn_bench_probes.c, and its read and copy bandwidths) and attn_bench_blas.c (the unfused OpenBLAS baselines,
 * linked only where OpenBLAS is: ATTN_HAVE_OPENBLAS).
 */
#ifndef ATTN_BENCH_H
#define ATTN_BENCH_H

#include <stddef.h>

#include "attn_runtime.h"

/* CLOCK_MONOTONIC, in seconds */
double attn_bench_now(void);

/* Measured f32 FMA peak of one ISA on `threads` threads, GFLOP/s (for
   avx512bf16, that of AVX-512: its f32 work runs there); 0 when the ISA has
   no peak loop here (scalar) or cannot run. */
double attn_bench_fma_peak(attn_isa isa, int threads);

/* Measured bf16 dot peak (vdpbf16ps) on `threads` threads, GFLOP/s; 0 where
   the CPU has no AVX512_BF16 (or the compiler does not know it). */
double attn_bench_bf16_dot_peak(int threads);

/* Measured int8 dot peak of one ISA's variant (the integer products of
   matmul = "int8": vpdpbusd chains where the CPU has AVX512-VNNI or AVX-VNNI,
   else vpmaddubsw) on `threads` threads, GOP/s counting a product as 2; 0
   where the variant has no such loop here (scalar, NEON) or cannot run. */
double attn_bench_int8_dot_peak(attn_isa isa, int threads);

/* The loops of the peak probes, in attn_bench_probes.c, which the build
   renders from the ISA modules (generator/probes.lua: the kernels'
   spellings of the f32 FMA, the bf16 dot and the int8 dots) into the build
   cache's runtime entry: each runs independent chains of one instruction
   for iters steps, `ops` operations a step (FLOPs; int8: a product counted
   as 2).  attn_probes ends with an entry whose loop is NULL. */
typedef enum {
    ATTN_PROBE_FMA,      /* f32 FMA, the ISA's vectors */
    ATTN_PROBE_BF16_DOT, /* vdpbf16ps (avx512bf16) */
    ATTN_PROBE_INT8_DP,  /* vpdpbusd: AVX512-VNNI's (avx512) or AVX-VNNI's (avx2) */
    ATTN_PROBE_INT8_MAD  /* vpmaddubsw, vpmaddwd, vpaddd (avx2): the form without VNNI */
} attn_probe_kind;

typedef struct {
    attn_probe_kind kind;
    attn_isa isa;
    void (*loop)(long iters);
    double ops;
} attn_probe;

extern const attn_probe attn_probes[];

/* The buffer of the read bandwidth: 1 GiB of floats, far larger than the
   caches.  Allocated once a run (faulting in 1 GiB takes seconds). */
#define READ_BW_FLOATS ((size_t)1 << 28)

/* Streaming read bandwidth on `threads` threads, GB/s, over buf
   (READ_BW_FLOATS floats). */
double attn_bench_read_bandwidth(const float *buf, int threads);

/* The copy bandwidth's buffers: two of 256 MiB, far larger than the
   last-level caches. */
#define COPY_BW_BYTES ((size_t)1 << 28)

/* Copy bandwidth on `threads` threads, GB/s of bytes moved (read plus
   written): the best of five memcpy passes of COPY_BW_BYTES from src to
   dst, each thread copying its own contiguous share. */
double attn_bench_copy_bandwidth(void *dst, const void *src, int threads);

#ifdef ATTN_HAVE_OPENBLAS
/* Whether the sdpa baseline models the spec's masks. */
int attn_bench_blas_supports(const attn_spec *s);
/* sgemm + softmax + sgemm on f32 tensors */
attn_status attn_bench_blas_attention(const attn_spec *s, const attn_args *a);
/* the same with cblas_sbgemm on bf16 Q, K, V; only when attn_bench_find_sbgemm found it */
attn_status attn_bench_blas_attention_bf16(const attn_spec *s, const attn_args *a);
/* whether the OpenBLAS this program runs with exports cblas_sbgemm */
int attn_bench_find_sbgemm(void);
/* the additive and luong families' unfused baseline */
attn_status attn_bench_blas_classic(const attn_spec *s, const attn_classic_args *a);
/* Whether the unfused backward baseline models the spec. */
int attn_bench_blas_backward_supports(const attn_spec *s);
/* the unfused backward: five sgemms (S, dV, dP, dQ, dK) with the softmax gradient between */
attn_status attn_bench_blas_backward(const attn_spec *s, const attn_bwd_args *a);
/* re-runs the program with OPENBLAS_CORETYPE set to this CPU's best core
   (unless --blas-core keep) */
void attn_bench_choose_blas_core(int argc, char **argv);
#endif

#endif /* ATTN_BENCH_H */
