/*
 * attn_bench_main.c - the program behind `attngen bench`.
 *
 * Compiled together with one generated kernel and a one-line file that
 * defines attn_entry_kernel.  Times every variant this CPU runs (or the one
 * --isa names) and the naive reference on one shape with contiguous random
 * inputs, and prints time, GFLOP/s of the visible scores (FLOPs = 2 *
 * visible * (D + Dv), DESIGN.md section 7) and the speed-up over the
 * reference.  A variant's time is the best of repeated runs after a warm-up.
 * Exit codes: 0, 1 when a kernel fails, 2 on usage errors.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_reference.h"
#include "attn_runtime.h"

extern const attn_kernel *const attn_entry_kernel;

static const char usage[] =
    "usage: attn_bench [--batch B] [--seq-q N] [--seq-k N] [--threads N] [--isa NAME] [--json]\n";

/* The reference is skipped above this many visible-score MACs (it runs at
   about 1 GFLOP/s). */
#define REFERENCE_LIMIT 4e9

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* splitmix64 -> uniform in [-1, 1) */
static float rnd(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static float *random_floats(size_t n, uint64_t seed)
{
    float *p = (float *)malloc(n * sizeof *p + 1);
    size_t i;
    if (p)
        for (i = 0; i < n; i++) p[i] = rnd(&seed) * 1.7f;
    return p;
}

typedef struct {
    const char *name;
    double seconds;
    int runs;
} timing;

/* Best time of fn over at least 3 runs and ~0.3 s, after one warm-up run. */
static attn_status time_fn(attn_fwd_fn fn, const attn_args *args, timing *t)
{
    double total = 0.0, best = 1e30;
    attn_status st = fn(args);
    t->runs = 0;
    while (st == ATTN_OK && (t->runs < 3 || total < 0.3) && t->runs < 1000) {
        const double t0 = now();
        double dt;
        st = fn(args);
        dt = now() - t0;
        total += dt;
        if (dt < best) best = dt;
        t->runs++;
    }
    t->seconds = best;
    return st;
}

int main(int argc, char **argv)
{
    const attn_kernel *kern = attn_entry_kernel;
    const attn_spec *spec = &kern->spec;
    long batch = 1, seq_q = 512, seq_k = -1, threads = 1;
    const char *isa = NULL;
    int json = 0, i, n = 0, failed = 0;
    attn_args args;
    timing rows[ATTN_ISA_COUNT + 1];
    float *q, *k, *v, *o, *lse;
    int32_t *seqlens = NULL;
    void *mask = NULL;
    int64_t visible;
    double flops, ref_seconds = 0.0;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = !strcmp(a, "--batch") ? &batch : !strcmp(a, "--seq-q") ? &seq_q
                  : !strcmp(a, "--seq-k") ? &seq_k : !strcmp(a, "--threads") ? &threads : NULL;
        if (dst) {
            if (!val || parse_int(val, dst == &threads ? 0 : 1, 1L << 24, dst)) {
                fprintf(stderr, "attngen: bench: %s needs an integer in range\n", a);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--isa") && val) {
            isa = val;
            i++;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (seq_k < 0) seq_k = seq_q;

    memset(&args, 0, sizeof args);
    args.batch = batch;
    args.seq_q = seq_q;
    args.seq_k = seq_k;
    args.threads = (int)threads;
    attn_args_set_contiguous(&args, spec);
    q = random_floats((size_t)(batch * seq_q * spec->heads_q * spec->head_dim), 1);
    k = random_floats((size_t)(batch * seq_k * spec->heads_kv * spec->head_dim), 2);
    v = random_floats((size_t)(batch * seq_k * spec->heads_kv * spec->head_dim_v), 3);
    o = (float *)malloc(sizeof(float) * (size_t)(batch * seq_q * spec->heads_q * spec->head_dim_v));
    lse = (float *)malloc(sizeof(float) * (size_t)(batch * spec->heads_q * seq_q));
    if (spec->padding) {
        seqlens = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
        if (seqlens)
            for (i = 0; i < batch; i++) seqlens[i] = (int32_t)seq_k;
    }
    if (spec->mask != ATTN_MASK_NONE) {
        const size_t cells = (size_t)(seq_q * seq_k);
        mask = calloc(cells, spec->mask == ATTN_MASK_BOOL ? 1 : sizeof(float));
        if (mask && spec->mask == ATTN_MASK_BOOL) memset(mask, 1, cells);
        args.mask_stride[0] = args.mask_stride[1] = 0; /* one [Lq][Lk] mask for all */
        args.mask_stride[2] = seq_k;
        args.mask_stride[3] = 1;
    }
    if (!q || !k || !v || !o || !lse || (spec->padding && !seqlens) ||
        (spec->mask != ATTN_MASK_NONE && !mask)) {
        fprintf(stderr, "attngen: bench: out of memory for this shape\n");
        return 2;
    }
    args.q = q;
    args.k = k;
    args.v = v;
    args.o = o;
    args.lse = lse;
    args.seqlens_k = seqlens;
    args.mask = mask;

    visible = attn_reference_visible_count(spec, &args);
    flops = 2.0 * (double)visible * (spec->head_dim + spec->head_dim_v);

    for (i = 0; i < kern->n_variants; i++) {
        const attn_variant *var = &kern->variants[i];
        if (isa && strcmp(isa, attn_isa_name(var->isa))) continue;
        if (!attn_isa_supported(var->isa)) continue;
        rows[n].name = attn_isa_name(var->isa);
        if (time_fn(var->fwd, &args, &rows[n]) != ATTN_OK) {
            fprintf(stderr, "attngen: bench: %s failed: %s\n", rows[n].name,
                    attn_status_string(var->fwd(&args)));
            failed = 1;
            continue;
        }
        n++;
    }
    if (isa && n == 0 && !failed) {
        fprintf(stderr, "attngen: bench: no runnable variant named '%s'\n", isa);
        return 2;
    }
    if ((double)visible * spec->head_dim <= REFERENCE_LIMIT) {
        const double t0 = now();
        if (attn_reference(spec, &args) == ATTN_OK) ref_seconds = now() - t0;
    }

    if (json) {
        printf("{\"config\": \"%s\", \"batch\": %ld, \"seq_q\": %ld, \"seq_k\": %ld, \"threads\": %ld, "
               "\"visible_scores\": %lld, \"flops\": %.0f, \"results\": [",
               spec->name, batch, seq_q, seq_k, threads, (long long)visible, flops);
        for (i = 0; i < n; i++)
            printf("%s{\"impl\": \"%s\", \"seconds\": %.6g, \"gflops\": %.4g, \"runs\": %d}",
                   i ? ", " : "", rows[i].name, rows[i].seconds, flops / rows[i].seconds * 1e-9,
                   rows[i].runs);
        if (ref_seconds > 0)
            printf("%s{\"impl\": \"reference\", \"seconds\": %.6g, \"gflops\": %.4g, \"runs\": 1}",
                   n ? ", " : "", ref_seconds, flops / ref_seconds * 1e-9);
        printf("]}\n");
    } else {
        printf("%s: B=%ld Lq=%ld Lk=%ld Hq=%d Hkv=%d D=%d Dv=%d threads=%ld, %.3g visible scores\n",
               spec->name, batch, seq_q, seq_k, spec->heads_q, spec->heads_kv, spec->head_dim,
               spec->head_dim_v, threads, (double)visible);
        printf("  %-10s %12s %10s %14s\n", "impl", "time (ms)", "GFLOP/s", "vs reference");
        if (ref_seconds > 0)
            printf("  %-10s %12.3f %10.2f %13.1fx\n", "reference", ref_seconds * 1e3,
                   flops / ref_seconds * 1e-9, 1.0);
        else
            printf("  %-10s %12s %10s %14s\n", "reference", "skipped", "-", "(too slow)");
        for (i = 0; i < n; i++) {
            printf("  %-10s %12.3f %10.2f ", rows[i].name, rows[i].seconds * 1e3,
                   flops / rows[i].seconds * 1e-9);
            if (ref_seconds > 0)
                printf("%13.1fx\n", ref_seconds / rows[i].seconds);
            else
                printf("%14s\n", "-");
        }
    }
    free(q);
    free(k);
    free(v);
    free(o);
    free(lse);
    free(seqlens);
    free(mask);
    return failed ? 1 : 0;
}
