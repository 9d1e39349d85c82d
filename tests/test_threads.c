/*
 * test_threads.c - kernels called from several application threads at once.
 *
 * docs/c-api.md: generated code is reentrant and keeps no global
 * state beyond the one-time dispatch.  Eight POSIX threads start together
 * (a barrier) and each runs a different kernel, or the same kernel with
 * other shapes, through the dispatching entry point (the first calls race
 * on the dispatch) or a chosen ISA variant, with 1 or 2 OpenMP threads of
 * its own, each case with its own buffers (attn_verify_case: guard pages,
 * strided layouts, ragged seqlens_k) checked against the reference.
 * Criterion runs each test in a fresh process, so the dispatch is cold.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attn_runtime.h"
#include "attn_verify.h"

#define KERNEL(name) extern const attn_kernel attn_##name##_kernel;
#include "kernel_list.h"
#undef KERNEL

static const attn_kernel *const kernels[] = {
#define KERNEL(name) &attn_##name##_kernel,
#include "kernel_list.h"
#undef KERNEL
};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

#define N_THREADS 8
#define ROUNDS 6

typedef struct {
    int id;
    const attn_kernel *kernel; /* NULL: a different kernel each round */
    pthread_barrier_t *start;
    int runs, failures;
    char first[1024];
} worker;

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    int r;
    pthread_barrier_wait(w->start);
    for (r = 0; r < ROUNDS; r++) {
        const int pick = w->id * ROUNDS + r;
        const attn_kernel *k = w->kernel ? w->kernel : kernels[(pick * 7) % N_KERNELS];
        const attn_variant *v = NULL;
        attn_case c;
        attn_verify_result res;
        attn_status st;
        /* odd rounds force a variant this CPU runs; even ones dispatch */
        if (r % 2) {
            int i, n = 0;
            for (i = 0; i < k->n_variants; i++)
                if (attn_isa_supported(k->variants[i].isa) && n++ == pick % 3) v = &k->variants[i];
        }
        memset(&c, 0, sizeof c);
        c.batch = 1 + pick % 2;
        c.seq_q = pick % 3 == 0 ? 1 + pick % 5 : 9 + (pick * 13) % 70; /* decode and tiled paths */
        c.seq_k = 1 + (pick * 29) % 400;
        c.strided = pick % 2;
        c.ragged = k->spec.padding && (pick / 2) % 2;
        c.threads = 1 + pick % 2;
        c.seed = (uint64_t)(1000 + pick);
        st = attn_verify_case(k, v, &c, &res);
        w->runs++;
        if (st != ATTN_OK || res.failures != 0) {
            char shape[160];
            attn_verify_case_string(&c, shape, sizeof shape);
            if (w->failures++ == 0)
                snprintf(w->first, sizeof w->first, "%s/%s %s: %s; %d elements off; first: %s", k->spec.name,
                         v ? attn_isa_name(v->isa) : "dispatched", shape, attn_status_string(st), res.failures,
                         res.first_failure);
        }
    }
    return NULL;
}

/* Starts the workers together and checks each one's cases. */
static void run_workers(const attn_kernel *same)
{
    pthread_t threads[N_THREADS];
    worker workers[N_THREADS];
    pthread_barrier_t start;
    int i;

    cr_assert_eq(pthread_barrier_init(&start, NULL, N_THREADS), 0);
    for (i = 0; i < N_THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].id = i;
        workers[i].kernel = same;
        workers[i].start = &start;
        cr_assert_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0, "cannot start thread %d", i);
    }
    for (i = 0; i < N_THREADS; i++) cr_assert_eq(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (i = 0; i < N_THREADS; i++) {
        cr_expect_eq(workers[i].runs, ROUNDS, "thread %d ran %d cases", i, workers[i].runs);
        cr_expect_eq(workers[i].failures, 0, "thread %d: %d of its cases failed; first: %s", i, workers[i].failures,
                     workers[i].first);
    }
}

/* every thread a different kernel */
Test(threads, different_kernels_at_once) { run_workers(NULL); }

/* every thread the same kernel (GQA, padding, bias, window, sinks,
   softcap, ALiBi), each with its own shapes and buffers */
Test(threads, one_kernel_from_eight_threads) { run_workers(&attn_t_everything_kernel); }
Test(threads, one_preset_from_eight_threads) { run_workers(&attn_llama3_8b_kernel); }
