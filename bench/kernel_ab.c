/*
 * kernel_ab.c - what an option costs, by hand: kernels generated from one
 * preset with different settings, called in turn in one process on the
 * same inputs, one thread, each kernel's first (best) variant.  The first
 * two are the base kernel and an identical copy of it under another name
 * (the control: how far two identical kernels differ on this machine).
 * Process CPU time, so that waiting for a core on a loaded machine is not
 * counted; minimum and mean of N calls each, relative to the base.
 *
 * bench/ab.sh generates the kernels, writes kernel_ab_list.h (their headers and
 * AB_KERNELS, one X(name, label) per kernel) and builds and runs this file:
 *
 *   bench/ab.sh LQ LK N PRESET [SETTINGS...]
 *
 * Inputs: uniform values in [-0.5, 0.5) stored in the base kernel's types,
 * the per-call weights of qk_norm in 0.5..1.5, the sinks 0.5 (h % 4), all
 * passed to every kernel (a kernel without the option ignores them).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "kernel_ab_list.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n uniform values in [-0.5, 0.5) stored as dtype (n a multiple of 32 for the block types) */
static void *random_tensor(attn_dtype dtype, size_t n)
{
    float *f = malloc(n * sizeof *f);
    void *t = malloc(n / (size_t)attn_dtype_values(dtype) * attn_dtype_size(dtype));
    size_t i;
    if (f == NULL || t == NULL) {
        free(f);
        free(t);
        return NULL;
    }
    for (i = 0; i < n; i++) f[i] = (float)rand() / ((float)RAND_MAX + 1.0f) - 0.5f;
    attn_f32_to_dtype_array(dtype, f, t, n);
    free(f);
    return t;
}

#define X(name, label) { &attn_##name##_kernel, label },
static const struct {
    const attn_kernel *kernel;
    const char *label;
} kernels[] = { AB_KERNELS };
#undef X
enum { NK = (int)(sizeof kernels / sizeof kernels[0]) };

int main(int argc, char **argv)
{
    const attn_spec *s = &kernels[0].kernel->spec;
    const long lq = argc == 4 ? atol(argv[1]) : 1, lk = argc == 4 ? atol(argv[2]) : 16384,
               n = argc == 4 ? atol(argv[3]) : 100;
    const size_t nq = (size_t)lq * (size_t)s->heads_q * (size_t)s->head_dim;
    const size_t nk = (size_t)lk * (size_t)s->heads_kv * (size_t)s->head_dim;
    const size_t nv = (size_t)lk * (size_t)s->heads_kv * (size_t)s->head_dim_v;
    const size_t no = (size_t)lq * (size_t)s->heads_q * (size_t)s->head_dim_v;
    void *q, *k, *v, *o;
    float *lse, *w, *sinks;
    double best[NK], sum[NK];
    attn_args a = { 0 };
    long r;
    int c;
    if (argc != 1 && argc != 4) {
        fprintf(stderr, "usage: %s [LQ LK N]\n", argv[0]);
        return 2;
    }
    srand(1);
    q = random_tensor(s->dtype_q, nq);
    k = random_tensor(s->dtype_kv, nk);
    v = random_tensor(s->dtype_kv, nv);
    o = malloc(no * attn_dtype_size(s->dtype_o));
    lse = malloc((size_t)lq * (size_t)s->heads_q * sizeof *lse);
    w = malloc((size_t)s->head_dim * sizeof *w);
    sinks = malloc((size_t)s->heads_q * sizeof *sinks);
    if (!q || !k || !v || !o || !lse || !w || !sinks) return 1;
    for (c = 0; c < s->head_dim; c++) w[c] = 0.5f + (float)rand() / (float)RAND_MAX;
    for (c = 0; c < s->heads_q; c++) sinks[c] = 0.5f * (float)(c % 4);
    a.batch = 1; a.seq_q = lq; a.seq_k = lk; a.q = q; a.k = k; a.v = v; a.o = o; a.lse = lse; a.threads = 1;
    a.q_norm_w = a.k_norm_w = w;
    a.sinks = sinks;
    attn_args_set_contiguous(&a, s);
    for (c = 0; c < NK; c++) { /* warm, and every kernel takes these arguments */
        const attn_status st = kernels[c].kernel->variants[0].fwd(&a);
        if (st != ATTN_OK) {
            fprintf(stderr, "kernel_ab: %s: %s\n", kernels[c].label, attn_status_string(st));
            return 1;
        }
        best[c] = 1e30;
        sum[c] = 0.0;
    }
    for (r = 0; r < n; r++)
        for (c = 0; c < NK; c++) {
            const int cc = (int)((c + r) % NK); /* rotate the order */
            double t0 = now(), t;
            if (kernels[cc].kernel->variants[0].fwd(&a) != ATTN_OK) return 1;
            t = now() - t0;
            sum[cc] += t;
            if (t < best[cc]) best[cc] = t;
        }
    for (c = 0; c < NK; c++)
        printf("Lq %ld Lk %ld  %-36s (%s)  min %9.3f ms  mean %9.3f ms  min/base %.4f  mean/base %.4f\n", lq, lk,
               kernels[c].label, attn_isa_name(kernels[c].kernel->variants[0].isa), 1e3 * best[c], 1e3 * sum[c] / n,
               best[c] / best[0], sum[c] / sum[0]);
    return 0;
}
