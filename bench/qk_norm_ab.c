/*
 * qk_norm_ab.c - the cost of qk_norm, by hand: a kernel (ab_base), the same
 * kernel with qk_norm = {eps = 1e-6} (ab_qkn), and a second copy of the
 * plain kernel (ab_copy, the control: how far two identical kernels differ
 * on this machine), called in turn in one process on the same inputs, one
 * thread, each kernel's first variant.  Process CPU time, so that waiting
 * for a core on a loaded machine is not counted; minimum and mean of N
 * calls each.  docs/benchmarks.md gives the commands, e.g. for the causal
 * prefill with 8 heads of 128 (the decode: llama3_8b without the --set of
 * the heads, and LQ 1):
 *
 *   S="--set heads_q=8 --set heads_kv=8 --set isa={\"avx512\"}"
 *   bin/attngen generate -q llama3_8b $S --set 'name="ab_base"' -o ab
 *   bin/attngen generate -q llama3_8b $S --set 'name="ab_copy"' -o ab
 *   bin/attngen generate -q llama3_8b $S --set 'name="ab_qkn"' --set 'qk_norm={eps=1e-6}' -o ab
 *   cc -O2 -fopenmp -Iruntime -Iab bench/qk_norm_ab.c ab/ab_base.c ab/ab_qkn.c ab/ab_copy.c \
 *       runtime/attn_runtime.c -o ab/qk_norm_ab -lm
 *   OMP_NUM_THREADS=1 ab/qk_norm_ab LQ LK N
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ab_base.h"
#include "ab_qkn.h"
#include "ab_copy.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const attn_kernel *ks[3] = { &attn_ab_base_kernel, &attn_ab_qkn_kernel, &attn_ab_copy_kernel };
    const char *name[3] = { "base", "qk_norm", "base (copy)" };
    const attn_spec *s = &attn_ab_base_kernel.spec;
    const long lq = argc == 4 ? atol(argv[1]) : 1, lk = argc == 4 ? atol(argv[2]) : 16384,
               n = argc == 4 ? atol(argv[3]) : 100;
    const size_t nq = (size_t)lq * (size_t)s->heads_q * (size_t)s->head_dim;
    const size_t nk = (size_t)lk * (size_t)s->heads_kv * (size_t)s->head_dim;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *o = malloc(nq * 4);
    float *lse = malloc((size_t)lq * (size_t)s->heads_q * 4), *w = malloc((size_t)s->head_dim * 4);
    double best[3] = { 1e30, 1e30, 1e30 }, sum[3] = { 0, 0, 0 };
    attn_args a = { 0 };
    size_t i;
    long r;
    int c;
    if (!q || !k || !v || !o || !lse || !w) return 1;
    srand(1);
    for (i = 0; i < nq; i++) q[i] = (float)rand() / RAND_MAX - 0.5f;
    for (i = 0; i < nk; i++) { k[i] = (float)rand() / RAND_MAX - 0.5f; v[i] = (float)rand() / RAND_MAX - 0.5f; }
    for (i = 0; i < (size_t)s->head_dim; i++) w[i] = 0.5f + (float)rand() / RAND_MAX;
    a.batch = 1; a.seq_q = lq; a.seq_k = lk; a.q = q; a.k = k; a.v = v; a.o = o; a.lse = lse; a.threads = 1;
    a.q_norm_w = a.k_norm_w = w;
    attn_args_set_contiguous(&a, s);
    for (c = 0; c < 3; c++) /* warm */
        if (ks[c]->variants[0].fwd(&a) != ATTN_OK) return 1;
    for (r = 0; r < n; r++)
        for (c = 0; c < 3; c++) {
            const int cc = (int)((c + r) % 3); /* rotate the order */
            double t0 = now(), t;
            if (ks[cc]->variants[0].fwd(&a) != ATTN_OK) return 1;
            t = now() - t0;
            sum[cc] += t;
            if (t < best[cc]) best[cc] = t;
        }
    for (c = 0; c < 3; c++)
        printf("Lq %ld Lk %ld %-12s (%s) min %8.3f ms  mean %8.3f ms  min/base %.4f  mean/base %.4f\n", lq, lk,
               name[c], attn_isa_name(ks[c]->variants[0].isa), 1e3 * best[c], 1e3 * sum[c] / n, best[c] / best[0],
               sum[c] / sum[0]);
    return 0;
}
