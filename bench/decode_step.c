/*
 * bench/decode_step.c - one decode step of a small inference program: one
 * sequence, one query row, a cache of 16 or 64 keys (the first tokens), one
 * and two threads, against a plain scalar loop over the same keys in the same
 * run.  `make bench` builds it with two kernels generated from the llama3_8b
 * preset (32 query heads, 8 kv heads, D 128) and with its shape changed to 16
 * query heads, 4 kv heads, D 64 (bench/decode_step.sh), and runs it.
 *
 * Each (kernel, keys, threads) row times the kernel (through its entry point,
 * with a workspace of the caller's, as a program calls it once a layer a
 * token) and the scalar loop alternately, ROUNDS rounds of REPS calls each,
 * and reports each one's best round and median round (microseconds a call)
 * and the ratio of the best rounds.
 * The scalar loop is what a program would write without the kernel: for each
 * query head, the scores against its kv head's keys, their softmax and the
 * weighted sum of the value rows, one thread, f32, compiled with the same
 * flags.  The kernel holds its target where it is no slower (ratio <= 1).
 * Prints one line a row; exits 1 when a kernel call fails or its output is
 * not the scalar loop's (within 1e-4).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_runtime.h"

extern const attn_kernel attn_step_llama3_8b_kernel, attn_step_16_4_64_kernel;

/* many short rounds: on a shared machine most rounds lose the CPU at some point, the
   best one shows the call itself */
enum { ROUNDS = 300, REPS = 10, MAX_KEYS = 64 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The plain loop: q [Hq][D], k and v [Lk][Hkv][D], o [Hq][D]. */
static void scalar_step(const float *q, const float *k, const float *v, float *o, int hq, int hkv, int d, int lk,
                        float scale)
{
    float s[MAX_KEYS];
    int h, j, c;
    for (h = 0; h < hq; h++) {
        const int g = h / (hq / hkv);
        const float *qh = q + (size_t)h * d;
        float mx = -INFINITY, sum = 0.0f;
        float *oh = o + (size_t)h * d;
        for (j = 0; j < lk; j++) {
            const float *kj = k + ((size_t)j * hkv + g) * d;
            float acc = 0.0f;
            for (c = 0; c < d; c++) acc += qh[c] * kj[c];
            s[j] = acc * scale;
            if (s[j] > mx) mx = s[j];
        }
        for (c = 0; c < d; c++) oh[c] = 0.0f;
        for (j = 0; j < lk; j++) {
            const float *vj = v + ((size_t)j * hkv + g) * d;
            const float p = expf(s[j] - mx);
            sum += p;
            for (c = 0; c < d; c++) oh[c] += p * vj[c];
        }
        for (c = 0; c < d; c++) oh[c] /= sum;
    }
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int row(const attn_kernel *kern, const char *what, int lk, int threads)
{
    const attn_spec *sp = &kern->spec;
    const int hq = sp->heads_q, hkv = sp->heads_kv, d = sp->head_dim;
    const size_t nq = (size_t)hq * d, nkv = (size_t)lk * hkv * d;
    float *q = malloc(nq * sizeof(float)), *k = malloc(nkv * sizeof(float)), *v = malloc(nkv * sizeof(float));
    float *o = malloc(nq * sizeof(float)), *ref = malloc(nq * sizeof(float));
    size_t n, i;
    void *ws;
    attn_args a;
    static double tk[ROUNDS], ts[ROUNDS];
    double best_k = 1e30, best_s = 1e30, err = 0.0;
    int r, rep, ok = 1;
    srand(7);
    for (i = 0; i < nq; i++) q[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (i = 0; i < nkv; i++) k[i] = (float)rand() / (float)RAND_MAX - 0.5f, v[i] = (float)rand() / (float)RAND_MAX;
    memset(&a, 0, sizeof a);
    a.batch = 1, a.seq_q = 1, a.seq_k = lk, a.q = q, a.k = k, a.v = v, a.o = o, a.threads = threads;
    attn_args_set_contiguous(&a, sp);
#ifndef STEP_NO_WORKSPACE
    n = kern->workspace_size(1, 1, lk, threads);
    ws = malloc(n);
    a.workspace = ws, a.workspace_bytes = n;
#else /* a kernel from before args.workspace (to compare) */
    n = 0, ws = NULL;
    (void)n;
#endif
    for (r = 0; r < ROUNDS; r++) {
        double t0 = now(), t1;
        for (rep = 0; rep < REPS; rep++)
            if (kern->fwd(&a) != ATTN_OK) ok = 0;
        t1 = now();
        tk[r] = t1 - t0;
        if (t1 - t0 < best_k) best_k = t1 - t0;
        t0 = now();
        for (rep = 0; rep < REPS; rep++) {
            scalar_step(q, k, v, ref, hq, hkv, d, lk, sp->scale);
            q[rep % nq] += 0.0f * ref[rep % nq]; /* the loop's result is used */
        }
        t1 = now();
        ts[r] = t1 - t0;
        if (t1 - t0 < best_s) best_s = t1 - t0;
    }
    for (i = 0; i < nq; i++) err = fabs(o[i] - ref[i]) > err ? fabs(o[i] - ref[i]) : err;
    if (err > 1e-4) ok = 0;
    qsort(tk, ROUNDS, sizeof(double), cmp);
    qsort(ts, ROUNDS, sizeof(double), cmp);
    printf("%-20s keys %2d  threads %d  kernel %7.2f (median %7.2f) us  scalar loop %7.2f (%7.2f) us  ratio %.2f  %s%s\n",
           what, lk, threads, 1e6 * best_k / REPS, 1e6 * tk[ROUNDS / 2] / REPS, 1e6 * best_s / REPS,
           1e6 * ts[ROUNDS / 2] / REPS, best_k / best_s, best_k <= best_s ? "holds" : "FAILS (slower)",
           ok ? "" : "  (WRONG OUTPUT)");
    free(q), free(k), free(v), free(o), free(ref), free(ws);
    return ok;
}

int main(void)
{
    static const int keys[] = { 16, 64 };
    int ok = 1, i, t;
    printf("decode step, 1 sequence, 1 query row: us a call, best (median) of %d rounds of %d calls, kernel\n"
           "(with a workspace) and scalar loop (one thread) in turns; ratio = best kernel / best scalar loop,\n"
           "the kernel holds where <= 1\n", ROUNDS, REPS);
    for (i = 0; i < 2; i++)
        for (t = 1; t <= 2; t++) {
            ok &= row(&attn_step_llama3_8b_kernel, "Llama-3-8B 32/8/128", keys[i], t);
            ok &= row(&attn_step_16_4_64_kernel, "16/4/64", keys[i], t);
        }
    return ok ? 0 : 1;
}
