/*
 * option_ab.c - the cost of an option on Llama-3-8B's shape, by hand: the
 * llama3_8b kernel, the same kernel with sinks, with the temperature, and a
 * second copy of the plain kernel under another name (the control: how far
 * two identical kernels differ on this machine), called in turn in one
 * process on the same inputs, one thread, the AVX-512 variant.  Process CPU
 * time, so that waiting for a core on a loaded machine is not counted;
 * minimum and mean of N calls each.  docs/benchmarks.md gives the commands:
 *
 *   bin/attngen generate -q llama3_8b -o ab
 *   bin/attngen generate -q llama3_8b --set 'name="l3_sinks"' --set sinks=true -o ab
 *   bin/attngen generate -q llama3_8b --set 'name="l3_temp"' --set 'temperature={scale=0.1,floor=8192}' -o ab
 *   bin/attngen generate -q llama3_8b --set 'name="l3_copy"' -o ab
 *   cc -O2 -fopenmp -Iruntime -Iab bench/option_ab.c ab/llama3_8b.c ab/l3_sinks.c ab/l3_temp.c ab/l3_copy.c \
 *       runtime/attn_runtime.c -o ab/option_ab -lm
 *   OMP_NUM_THREADS=1 ab/option_ab LQ LK N
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "llama3_8b.h"
#include "l3_sinks.h"
#include "l3_temp.h"
#include "l3_copy.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const long lq = argc == 4 ? atol(argv[1]) : 1, lk = argc == 4 ? atol(argv[2]) : 32768,
               n = argc == 4 ? atol(argv[3]) : 100;
    const size_t nq = (size_t)lq * 32 * 128, nk = (size_t)lk * 8 * 128;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *o = malloc(nq * 4), *lse = malloc(lq * 32 * 4);
    float sinks[32];
    if (!q || !k || !v || !o || !lse) return 1;
    double best[4] = { 1e30, 1e30, 1e30, 1e30 }, sum[4] = { 0, 0, 0, 0 };
    attn_status (*fwd[4])(const attn_args *) = { attn_llama3_8b_fwd__avx512, attn_l3_sinks_fwd__avx512, attn_l3_temp_fwd__avx512, attn_l3_copy_fwd__avx512 };
    const char *name[4] = { "base", "sinks", "temperature", "base (copy)" };
    size_t i;
    long r;
    int c;
    attn_args a = { 0 };
    srand(1);
    for (i = 0; i < nq; i++) q[i] = (float)rand() / RAND_MAX - 0.5f;
    for (i = 0; i < nk; i++) { k[i] = (float)rand() / RAND_MAX - 0.5f; v[i] = (float)rand() / RAND_MAX - 0.5f; }
    for (c = 0; c < 32; c++) sinks[c] = 0.5f * (c % 4);
    a.batch = 1; a.seq_q = lq; a.seq_k = lk; a.q = q; a.k = k; a.v = v; a.o = o; a.lse = lse; a.sinks = sinks; a.threads = 1;
    attn_args_set_contiguous(&a, &attn_llama3_8b_kernel.spec);
    for (c = 0; c < 4; c++) fwd[c](&a); /* warm */
    for (r = 0; r < n; r++)
        for (c = 0; c < 4; c++) {
            const int cc = (int)((c + r) % 4); /* rotate the order */
            double t0 = now(), t;
            if (fwd[cc](&a) != ATTN_OK) return 1;
            t = now() - t0;
            sum[cc] += t;
            if (t < best[cc]) best[cc] = t;
        }
    for (c = 0; c < 4; c++)
        printf("Lq %ld Lk %ld %-12s min %8.3f ms  mean %8.3f ms  min/base %.4f  mean/base %.4f\n", lq, lk, name[c],
               1e3 * best[c], 1e3 * sum[c] / n, best[c] / best[0], sum[c] / sum[0]);
    return 0;
}
