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
 * Last, a linear or classic call's memory: every thread's scratch in one
 * request of the allocator hook (lib/threads), freed once.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cases.h"
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

/* ---- a call's memory: one request of the hook's ---------------------------- */

/* The allocator hook of Test(threads, one_allocation_a_call): counts its calls
   and frees, and fails every call where told to. */
static int hook_allocs, hook_frees, hook_fails;
static void *counting_alloc(size_t bytes, void *user)
{
    void *p = NULL;
    (void)user;
    hook_allocs++;
    if (hook_fails || posix_memalign(&p, ATTN_ALIGN, bytes) != 0) return NULL;
    return p;
}
static void counting_free(void *ptr, void *user)
{
    (void)user;
    if (ptr != NULL) hook_frees++;
    free(ptr);
}

/* The linear and classic kernels take every thread's scratch, and a classic
   call's projections, in one request of the allocator hook a call, freed
   once; where it fails, the call returns ATTN_ERR_NOMEM, asking for nothing
   more.  Every variant this CPU runs, 1 and 3 threads, against the reference. */
Test(threads, one_allocation_a_call)
{
    const attn_kernel *const ks[] = { &attn_t_linear_causal_kernel, &attn_t_linear_state_kernel,
                                      &attn_t_additive_bias_mask_kernel, &attn_t_luong_concat_kernel };
    size_t i;
    int j, t, runs = 0;
    for (i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        const attn_case_ops *ops = attn_case_ops_for(&ks[i]->spec, ATTN_DIR_FWD);
        attn_case c;
        void *state;
        cr_assert(ops != NULL, "%s: no case ops", ks[i]->spec.name);
        memset(&c, 0, sizeof c);
        c.batch = 2, c.seq_q = 37, c.seq_k = 45, c.seed = 11;
        c.ragged = ks[i]->spec.padding;
        state = calloc(1, ops->state_size);
        cr_assert(state != NULL);
        cr_assert_eq(ops->build(state, &ks[i]->spec, &c), ATTN_OK, "%s", ks[i]->spec.name);
        cr_assert_eq(ops->reference(state), ATTN_OK, "%s", ks[i]->spec.name);
        for (j = 0; j < ks[i]->n_variants; j++)
            for (t = 1; t <= 3; t += 2) {
                const attn_variant *v = &ks[i]->variants[j];
                attn_case_kernel kc = { NULL, v, NULL, NULL };
                attn_verify_result res;
                attn_status st;
                if (!attn_isa_supported(v->isa)) continue;
                ops->reset(state);
                hook_allocs = hook_frees = hook_fails = 0;
                attn_set_allocator(counting_alloc, counting_free, NULL);
                st = ops->run(state, &kc, t);
                attn_set_allocator(NULL, NULL, NULL);
                cr_expect_eq(st, ATTN_OK, "%s/%s, %d threads: %s", ks[i]->spec.name, attn_isa_name(v->isa), t,
                             attn_status_string(st));
                cr_expect_eq(hook_allocs, 1, "%s/%s, %d threads: %d requests", ks[i]->spec.name,
                             attn_isa_name(v->isa), t, hook_allocs);
                cr_expect_eq(hook_frees, 1, "%s/%s, %d threads: %d frees", ks[i]->spec.name, attn_isa_name(v->isa),
                             t, hook_frees);
                memset(&res, 0, sizeof res);
                ops->compare(state, "one allocation", &res);
                cr_expect_eq(res.failures, 0, "%s/%s, %d threads: %d values off", ks[i]->spec.name,
                             attn_isa_name(v->isa), t, res.failures);
                ops->reset(state);
                hook_allocs = hook_frees = 0;
                hook_fails = 1;
                attn_set_allocator(counting_alloc, counting_free, NULL);
                st = ops->run(state, &kc, t);
                attn_set_allocator(NULL, NULL, NULL);
                cr_expect_eq(st, ATTN_ERR_NOMEM, "%s/%s, %d threads, a failing hook: %s", ks[i]->spec.name,
                             attn_isa_name(v->isa), t, attn_status_string(st));
                cr_expect_eq(hook_allocs, 1, "%s/%s, %d threads, a failing hook: %d requests", ks[i]->spec.name,
                             attn_isa_name(v->isa), t, hook_allocs);
                runs++;
            }
        ops->free(state);
        free(state);
    }
    cr_assert_gt(runs, 0);
}
