/*
 * attn_tune_main.c - the timing program behind `attngen tune`.
 *
 * Compiled in one compiler invocation with the generated sources of every
 * candidate of one config (the same config under names that differ by the
 * candidate: attn_<config>_q96k128_kernel, ...) and a generated table of
 * them, attn_tune_candidates.  For each shape given on the command line it
 * times the candidates of that shape's bucket (prefill or decode) on the same
 * contiguous random inputs, in one process:
 *   - each time is the best of repeated runs after a warm-up run, on the
 *     ISA variant --isa names, taken in rounds: every candidate runs once
 *     (or a short burst) per round, so a spell of load from other processes
 *     on a shared machine slows some runs of every candidate instead of all
 *     runs of a few (see run_shape); on one thread the clock is the
 *     thread's CPU time (see now), and decode runs start with cold caches
 *     (--flush-decode, see flush_caches);
 *   - each candidate's output is compared with the first candidate's: all of
 *     them compute the same attention, so a mismatch is a kernel bug and the
 *     candidate is reported as failed instead of timed;
 *   - racing: after the first shape of a bucket, only the best --keep
 *     candidates within --keep-within of the best (and those marked
 *     `always`) are timed on the bucket's later shapes.
 * GFLOP/s count the visible scores only, as attn_bench does:
 * FLOPs = 2 * visible * (D + Dv), the count of the README's benchmark tables.
 * Linear attention's candidates differ in their chunk, and with it in the
 * FLOPs of the chunked algorithm; their GFLOP/s count the FLOPs of the
 * token-at-a-time recurrence instead (attn_reference_linear_flops with
 * chunks of one row), the same for every candidate, so that they rank the
 * candidates by time.  A linear config with a state starts each candidate's
 * warm-up run from a zero state.
 *
 * Output: one JSON object per line on stdout, flushed as it goes, for the
 * generator to read (events "start", "shape", "tick" after each run or burst,
 * "result" per candidate at the end of a shape, "failed", "done").
 * Exit codes: 0; 1 when a candidate failed; 2 on usage errors.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_tool_inputs.h"

/* The generated table; the same declaration is written into it. */
typedef struct attn_tune_candidate {
    const attn_kernel *kernel;
    const char *bucket; /* "prefill" or "decode": the shapes it is timed on */
    const char *label;  /* the candidate's parameters, for messages */
    int always;         /* timed on every shape of its bucket (never raced out) */
} attn_tune_candidate;
extern const attn_tune_candidate attn_tune_candidates[];
extern const int attn_tune_count;

static const char usage[] =
    "usage: attn_tune [--isa NAME] [--threads N] [--batch B] [--clock cpu|wall] [--min-time S]\n"
    "                 [--min-runs N] [--max-runs N] [--keep N] [--keep-within F] [--flush-decode BYTES]\n"
    "                 BUCKET:SEQ_Q:SEQ_K...\n";

#define MAX_SHAPES 32

/* Outputs of two candidates agree within this: each is within 1e-5 + 1e-5|x|
   of the float64 reference (docs/testing.md); ten times that leaves room
   for the different summation orders of different tiles and still catches a
   wrong kernel (errors of order 1).  An O stored as bf16 or f16 is rounded
   once more: the two may then differ by up to an ulp of the type (twice its
   relative tolerance, ATTN_REF_TOL_REL) on top.  With bf16 products
   (matmul = "bf16") each is within ATTN_REF_TOL_O of the reference, so two
   may differ by twice that: P is rounded to bf16 after the running max, which
   depends on the tile. */
#define AGREE_ABS 1e-4
#define AGREE_REL 1e-4
#define AGREE_ABS_OF(spec) ((spec)->matmul == ATTN_DTYPE_BF16 ? 2.0 * ATTN_REF_TOL_ABS_O(spec) : AGREE_ABS)
#define AGREE_REL_OF(spec)                                                                  \
    ((spec)->matmul == ATTN_DTYPE_BF16  ? 2.0 * ATTN_REF_TOL_REL_O(spec)                     \
     : (spec)->dtype_o == ATTN_DTYPE_F32 ? AGREE_REL                                       \
                                         : AGREE_REL + 2.0 * ATTN_REF_TOL_REL((spec)->dtype_o))

typedef struct {
    const char *isa;
    int threads;
    long batch;
    double min_time;
    long min_runs, max_runs, keep;
    double keep_within;
    long flush_decode; /* bytes written before each decode run, 0: none */
} options;

/* Decode reads the whole KV cache once per run, and a cache of a few tens
   of MB may or may not still sit in the last-level cache from the run
   before, depending on what other processes did meanwhile: a large source
   of noise.  A serving engine reads each layer's cache cold, so decode runs
   are timed cold: flush_caches() first writes a buffer larger than the
   last-level cache (not timed). */
#define COLD_MAX_RUNS 100
static unsigned char *flush_buf;
static size_t flush_bytes;

static void flush_caches(void)
{
    size_t i;
    for (i = 0; i < flush_bytes; i += 64) flush_buf[i]++;
}

typedef struct {
    char bucket[16];
    long seq_q, seq_k;
} shape;

/* Runs are timed with the thread's CPU time when the kernels run on one
   thread: on a shared machine, time the scheduler gives to other processes
   is then not counted (it is the largest part of the noise of wall time on a
   loaded machine).  With several threads, wall time (--clock to choose). */
static int cpu_clock;

static double now(void)
{
    struct timespec ts;
#ifdef CLOCK_THREAD_CPUTIME_ID
    if (cpu_clock) {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
#endif
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    if (s == NULL) return -1;
    v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;
    if (s == NULL) return -1;
    v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* BUCKET:SEQ_Q:SEQ_K */
static int parse_shape(const char *s, shape *out)
{
    const char *c1 = strchr(s, ':');
    char num[32];
    const char *c2;
    size_t n;
    if (!c1 || (size_t)(c1 - s) >= sizeof out->bucket) return -1;
    memcpy(out->bucket, s, (size_t)(c1 - s));
    out->bucket[c1 - s] = '\0';
    if (strcmp(out->bucket, "prefill") && strcmp(out->bucket, "decode")) return -1;
    c2 = strchr(c1 + 1, ':');
    if (!c2) return -1;
    n = (size_t)(c2 - c1 - 1);
    if (n == 0 || n >= sizeof num) return -1;
    memcpy(num, c1 + 1, n);
    num[n] = '\0';
    if (parse_long(num, 1, 1L << 24, &out->seq_q)) return -1;
    return parse_long(c2 + 1, 1, 1L << 24, &out->seq_k);
}

/* The variant of a kernel for an ISA, or NULL. */
static attn_fwd_fn variant_fn(const attn_kernel *k, const char *isa)
{
    int i;
    for (i = 0; i < k->n_variants; i++)
        if (!strcmp(attn_isa_name(k->variants[i].isa), isa)) return k->variants[i].fwd;
    return NULL;
}

/* Index of the first element where o and ref (O of a kernel of spec, both
   widened) disagree, or -1. */
static long disagree(const float *o, const float *ref, size_t n, const attn_spec *spec)
{
    const double abs_tol = AGREE_ABS_OF(spec), rel_tol = AGREE_REL_OF(spec);
    size_t i;
    for (i = 0; i < n; i++) {
        const double x = o[i], r = ref[i];
        if (!(fabs(x - r) <= abs_tol + rel_tol * fabs(r))) return (long)i;
    }
    return -1;
}

/* Visible scores of the shape: the bench's mask is the same for every head,
   so one head is counted and multiplied. */
static int64_t visible_scores(const attn_spec *spec, const attn_args *args)
{
    attn_spec one = *spec;
    one.heads_q = one.heads_kv = 1;
    return attn_reference_visible_count(&one, args) * spec->heads_q;
}

static int by_gflops_desc(const void *a, const void *b)
{
    const double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x < y) - (x > y);
}

/* Timing state of one candidate on one shape. */
typedef struct {
    double best, total; /* best and summed seconds of the counted runs */
    long runs, burst;   /* counted runs; runs per round */
    int failed;
} timing;

/* Whether a candidate has been timed enough: at least min_runs runs and
   min_time seconds in all, or two runs adding up to 2 * min_time (for long
   shapes the run-to-run noise is well above what more runs would remove). */
static int timed_enough(const timing *t, const options *opt)
{
    if (t->runs >= opt->max_runs) return 1;
    if (t->runs >= opt->min_runs && t->total >= opt->min_time) return 1;
    return t->runs >= 2 && t->total >= 2 * opt->min_time;
}

static void print_failed(int i, const shape *sh, const char *msg)
{
    printf("{\"event\": \"failed\", \"index\": %d, \"label\": \"%s\", \"seq_q\": %ld, \"seq_k\": %ld, "
           "\"message\": \"%s\"}\n",
           i, attn_tune_candidates[i].label, sh->seq_q, sh->seq_k, msg);
    fflush(stdout);
}

/* The inputs of one shape (random f32 values; qs, ks, vs: stored in the
   candidates' storage types, the same arrays for f32), O as stored and
   widened (o32, the same array for f32 O), and the output of the first
   candidate, widened. */
typedef struct {
    float *q, *k, *v, *o32, *ref, *lse;
    void *qs, *ks, *vs, *o;
    const attn_spec *spec; /* the candidates' spec: O's storage type, how close their outputs must agree */
    int32_t *seqlens;
    void *mask;
    float *rel; /* the relative position table (rel_bias) */
    float *state_s, *state_z; /* linear attention's state (zeroed before each warm-up run) */
    float *sinks;             /* configs with sinks: a logit per query head */
    size_t no, ns, nz;        /* elements of O and of the state's S and z */
    int32_t *table;           /* paged configs: the block table of the contiguous K and V's rows */
    float *qk_norm;           /* configs with qk_norm: q_norm_w then k_norm_w */
    float *rope;              /* configs with rope table = true: cos then sin (rope_table) */
} tune_inputs;

static void free_inputs(tune_inputs *in)
{
    attn_tool_free_stored(in->qs, in->q);
    attn_tool_free_stored(in->ks, in->k);
    attn_tool_free_stored(in->vs, in->v);
    if ((void *)in->o32 != in->o) free(in->o32);
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->o);
    free(in->ref);
    free(in->lse);
    free(in->seqlens);
    free(in->mask);
    free(in->rel);
    free(in->state_s);
    free(in->state_z);
    free(in->sinks);
    free(in->table);
    free(in->qk_norm);
    free(in->rope);
}

/* rope = {table = true}: the cos / sin table of rows positions (0..rows-1),
   cos then sin, [rows][rope_dim / 2] each, of RoPE's own angles
   p 10000^(-2m/dim) (the default theta) formed in double and rounded once,
   set in args (rope_cos, rope_sin, rope_rows).  NULL for other specs, or
   when out of memory.  Released with free(). */
static float *rope_table(const attn_spec *spec, attn_args *args, int64_t rows)
{
    const int64_t half = spec->rope_dim / 2;
    float *t;
    int64_t p, m;
    if (spec->family != ATTN_FAMILY_SDPA || spec->rope_style == ATTN_ROPE_NONE || !spec->rope_table)
        return NULL;
    t = (float *)malloc(sizeof(float) * (size_t)(2 * rows * half) + 1);
    if (!t) return NULL;
    for (p = 0; p < rows; p++)
        for (m = 0; m < half; m++) {
            const double angle = (double)p * pow(10000.0, -2.0 * (double)m / (double)spec->rope_dim);
            t[p * half + m] = (float)cos(angle);
            t[(rows + p) * half + m] = (float)sin(angle);
        }
    args->rope_cos = t;
    args->rope_sin = t + rows * half;
    args->rope_rows = rows;
    return t;
}

/* Fills args and in for shape sh: contiguous random Q, K, V, full key
   lengths, an all-visible mask shared by every batch and head.  0, or -1
   when out of memory (in is then partly allocated: free_inputs). */
static int make_inputs(const shape *sh, const options *opt, const attn_spec *spec, attn_args *args,
                       tune_inputs *in)
{
    const size_t nq = (size_t)(opt->batch * sh->seq_q * spec->heads_q * spec->head_dim);
    const size_t nk = (size_t)(opt->batch * sh->seq_k * spec->heads_kv * spec->head_dim);
    const size_t nv = (size_t)(opt->batch * sh->seq_k * spec->heads_kv * spec->head_dim_v);
    long i;
    memset(args, 0, sizeof *args);
    memset(in, 0, sizeof *in);
    args->batch = opt->batch;
    args->seq_q = sh->seq_q;
    args->seq_k = sh->seq_k;
    args->threads = opt->threads;
    attn_args_set_contiguous(args, spec);
    in->no = (size_t)(opt->batch * sh->seq_q * spec->heads_q * spec->head_dim_v);
    in->spec = spec;
    in->q = attn_tool_random_floats(nq, 1);
    in->k = attn_tool_random_floats(nk, 2);
    in->v = attn_tool_random_floats(nv, 3);
    in->qs = attn_tool_stored(spec->dtype_q, in->q, nq);
    in->ks = attn_tool_stored(spec->dtype_kv, in->k, nk);
    in->vs = attn_tool_stored(spec->dtype_kv, in->v, nv);
    in->o = malloc(attn_dtype_size(spec->dtype_o) * in->no + 1);
    in->o32 = spec->dtype_o == ATTN_DTYPE_F32 ? (float *)in->o : (float *)malloc(sizeof(float) * in->no + 1);
    in->ref = (float *)malloc(sizeof(float) * in->no + 1);
    in->lse = (float *)malloc(sizeof(float) * (size_t)(opt->batch * spec->heads_q * sh->seq_q));
    if (spec->padding) {
        in->seqlens = (int32_t *)malloc(sizeof(int32_t) * (size_t)opt->batch);
        if (in->seqlens)
            for (i = 0; i < opt->batch; i++) in->seqlens[i] = (int32_t)sh->seq_k;
    }
    if (spec->mask != ATTN_MASK_NONE) {
        const size_t cells = (size_t)(sh->seq_q * sh->seq_k);
        in->mask = calloc(cells, spec->mask == ATTN_MASK_BOOL ? 1 : sizeof(float));
        if (in->mask && spec->mask == ATTN_MASK_BOOL) memset(in->mask, 1, cells);
        args->mask_stride[0] = args->mask_stride[1] = 0; /* one [Lq][Lk] mask for every batch and head */
        args->mask_stride[2] = sh->seq_k;
        args->mask_stride[3] = 1;
    }
    if (spec->family != ATTN_FAMILY_LINEAR && spec->sinks) {
        in->sinks = (float *)malloc(sizeof(float) * (size_t)spec->heads_q);
        if (!in->sinks) return -1;
        for (i = 0; i < spec->heads_q; i++) in->sinks[i] = 0.5f * (float)(i % 4);
        args->sinks = in->sinks;
    }
    if (spec->family == ATTN_FAMILY_LINEAR && spec->state) { /* S [B][Hkv][D][Dv], z [B][Hkv][D] */
        in->nz = (size_t)(opt->batch * spec->heads_kv * spec->head_dim);
        in->ns = in->nz * (size_t)spec->head_dim_v;
        in->state_s = (float *)calloc(in->ns + 1, sizeof(float));
        in->state_z = (float *)calloc(in->nz + 1, sizeof(float));
        if (!in->state_s || !in->state_z) return -1;
        args->state_s = in->state_s;
        args->state_z = in->state_z;
    }
    if (attn_rel_rows(spec) > 0) /* a random relative position table */
        in->rel = attn_tool_random_floats((size_t)attn_rel_rows(spec) * (size_t)spec->heads_q, 4);
    if (!in->q || !in->k || !in->v || !in->qs || !in->ks || !in->vs || !in->o || !in->o32 || !in->ref ||
        !in->lse || (spec->padding && !in->seqlens) || (spec->mask != ATTN_MASK_NONE && !in->mask) ||
        (attn_rel_rows(spec) > 0 && !in->rel))
        return -1;
    args->rel_table = in->rel;
    in->qk_norm = attn_tool_qk_norm_weights(spec, args);
    if (spec->family == ATTN_FAMILY_SDPA && spec->qk_norm && !in->qk_norm)
        return -1;
    /* a table of every position a row of the shape can have: 0..max(Lq, Lk)-1 */
    in->rope = rope_table(spec, args, sh->seq_q > sh->seq_k ? sh->seq_q : sh->seq_k);
    if (spec->family == ATTN_FAMILY_SDPA && spec->rope_style != ATTN_ROPE_NONE && spec->rope_table && !in->rope)
        return -1;
    args->q = in->qs;
    args->k = in->ks;
    args->v = in->vs;
    args->o = in->o;
    args->lse = in->lse;
    args->seqlens_k = in->seqlens;
    args->mask = in->mask;
    if (spec->page > 0) { /* paged: the contiguous K and V read through a table of their rows */
        in->table = (int32_t *)malloc(sizeof(int32_t) * (size_t)(opt->batch * ((sh->seq_k + spec->page - 1) /
                                                                                 spec->page)) + 1);
        if (!in->table || attn_args_set_contiguous_pages(args, spec, in->table) != ATTN_OK)
            return -1;
    }
    return 0;
}

/* Round 0 for candidate i: one run, its output checked against the first
   candidate's (the first one's becomes in->ref), a run of min_time or more
   counted as a timed run, and the burst length set.  0, or 1 when the
   candidate failed (reported). */
static int warm_up(int i, const shape *sh, const options *opt, attn_fwd_fn fn, const attn_args *args,
                   tune_inputs *in, int *have_ref, int cold, timing *t)
{
    double t0, dt;
    long bad;
    char msg[160];
    attn_status st;
    memset(in->o, 0, attn_dtype_size(in->spec->dtype_o) * in->no);
    if (in->state_s) { /* every candidate's output from the same (zero) state */
        memset(in->state_s, 0, sizeof(float) * in->ns);
        memset(in->state_z, 0, sizeof(float) * in->nz);
    }
    if (cold) flush_caches();
    t0 = now();
    st = fn(args);
    dt = now() - t0;
    if (st != ATTN_OK) {
        print_failed(i, sh, attn_status_string(st));
        return 1;
    }
    attn_dtype_to_f32_array(in->spec->dtype_o, in->o, in->o32, in->no); /* f32: o32 is o */
    if (!*have_ref) {
        memcpy(in->ref, in->o32, sizeof(float) * in->no);
        *have_ref = 1;
    } else if ((bad = disagree(in->o32, in->ref, in->no, in->spec)) >= 0) {
        snprintf(msg, sizeof msg, "output differs from the first candidate's at element %ld: %.9g vs %.9g",
                 bad, (double)in->o32[bad], (double)in->ref[bad]);
        print_failed(i, sh, msg);
        return 1;
    }
    t->best = 1e30;
    if (dt >= opt->min_time) {
        t->best = t->total = dt;
        t->runs = 1;
    }
    t->burst = (long)ceil(opt->min_time / (double)opt->min_runs / (dt > 1e-9 ? dt : 1e-9));
    if (t->burst < 1) t->burst = 1;
    return 0;
}

/* A later round for candidate i: a burst of timed runs.  0, or 1 when the
   candidate failed (reported). */
static int timed_burst(int i, const shape *sh, const options *opt, attn_fwd_fn fn, const attn_args *args,
                       int cold, timing *t)
{
    attn_status st = ATTN_OK;
    long r;
    for (r = 0; r < t->burst && st == ATTN_OK && t->runs < opt->max_runs; r++) {
        double t0, dt;
        if (cold) flush_caches();
        t0 = now();
        st = fn(args);
        dt = now() - t0;
        t->total += dt;
        if (dt < t->best) t->best = dt;
        t->runs++;
    }
    if (st != ATTN_OK) {
        print_failed(i, sh, attn_status_string(st));
        return 1;
    }
    return 0;
}

/* The "result" lines of a shape; gflops[] of the alive candidates (0 for
   failed ones). */
static void report_results(const shape *sh, const int *alive, const timing *tm, double flops, double *gflops)
{
    int i;
    for (i = 0; i < attn_tune_count; i++) {
        if (!alive[i] || tm[i].failed) {
            if (alive[i]) gflops[i] = 0.0;
            continue;
        }
        gflops[i] = flops / tm[i].best * 1e-9;
        printf("{\"event\": \"result\", \"index\": %d, \"label\": \"%s\", \"bucket\": \"%s\", \"seq_q\": %ld, "
               "\"seq_k\": %ld, \"seconds\": %.6g, \"gflops\": %.6g, \"runs\": %ld}\n",
               i, attn_tune_candidates[i].label, sh->bucket, sh->seq_q, sh->seq_k, tm[i].best, gflops[i],
               tm[i].runs);
    }
    fflush(stdout);
}

/* Times the candidates alive[] of sh's bucket on shape sh; writes their
   GFLOP/s into gflops[] (0 for failed ones).  Round 0 is the warm-up: each
   candidate runs once, its output is checked, and a run of min_time or more
   counts as a timed run.  Then rounds of timed runs follow until every
   candidate is timed_enough; in each, a candidate runs a burst of runs that
   lasts about min_time / min_runs.  Returns 1 when a candidate failed, -1
   when the inputs could not be allocated. */
static int run_shape(const shape *sh, const options *options_in, const int *alive, double *gflops)
{
    options copy = *options_in;
    const options *opt = &copy;
    const attn_spec *spec = NULL;
    attn_args args;
    tune_inputs in;
    timing *tm = NULL;
    int i, have_ref = 0, failed = 0, count = 0, round, more;
    const int cold = !strcmp(sh->bucket, "decode") && flush_bytes > 0;
    double flops;

    if (cold && copy.max_runs > COLD_MAX_RUNS) copy.max_runs = COLD_MAX_RUNS; /* each run costs a flush */

    for (i = 0; i < attn_tune_count; i++) {
        if (!alive[i]) continue;
        if (!spec) spec = &attn_tune_candidates[i].kernel->spec;
        count++;
    }
    if (!spec) return 0;
    tm = (timing *)calloc((size_t)attn_tune_count, sizeof(timing));
    if (make_inputs(sh, opt, spec, &args, &in) != 0 || !tm) {
        failed = -1;
        goto done;
    }
    if (spec->family == ATTN_FAMILY_LINEAR) { /* the recurrence's FLOPs: the same for every chunk */
        attn_spec one_row = *spec;
        one_row.tile_q = 1;
        flops = attn_reference_linear_flops(&one_row, &args);
    } else {
        flops = 2.0 * (double)visible_scores(spec, &args) * (spec->head_dim + spec->head_dim_v);
    }
    printf("{\"event\": \"shape\", \"bucket\": \"%s\", \"batch\": %ld, \"seq_q\": %ld, \"seq_k\": %ld, "
           "\"flops\": %.0f, \"candidates\": %d}\n",
           sh->bucket, opt->batch, sh->seq_q, sh->seq_k, flops, count);
    fflush(stdout);

    for (round = 0, more = 1; more; round++) {
        more = 0;
        for (i = 0; i < attn_tune_count; i++) {
            const attn_fwd_fn fn = variant_fn(attn_tune_candidates[i].kernel, opt->isa);
            timing *t = &tm[i];
            if (!alive[i] || t->failed || (round > 0 && timed_enough(t, opt))) continue;
            if (round == 0 ? warm_up(i, sh, opt, fn, &args, &in, &have_ref, cold, t)
                           : timed_burst(i, sh, opt, fn, &args, cold, t)) {
                t->failed = failed = 1;
                continue;
            }
            if (!timed_enough(t, opt)) more = 1;
            printf("{\"event\": \"tick\", \"index\": %d, \"label\": \"%s\", \"round\": %d, \"gflops\": %.6g}\n", i,
                   attn_tune_candidates[i].label, round, t->runs ? flops / t->best * 1e-9 : 0.0);
            fflush(stdout);
        }
    }
    report_results(sh, alive, tm, flops, gflops);
done:
    free_inputs(&in);
    free(tm);
    return failed;
}

/* Racing: keeps the best opt->keep candidates within opt->keep_within of
   the best, and those marked `always`. */
static void race(const options *opt, int *alive, const double *gflops)
{
    double (*order)[2] = (double (*)[2])malloc(sizeof(double[2]) * (size_t)attn_tune_count);
    double best = 0.0;
    int i, n = 0;
    if (!order) return; /* no racing: every candidate goes on */
    for (i = 0; i < attn_tune_count; i++) {
        if (!alive[i]) continue;
        order[n][0] = gflops[i];
        order[n][1] = (double)i;
        if (gflops[i] > best) best = gflops[i];
        n++;
    }
    qsort(order, (size_t)n, sizeof order[0], by_gflops_desc);
    for (i = 0; i < n; i++) {
        const int idx = (int)order[i][1];
        const int keep = gflops[idx] > 0.0 && i < opt->keep && gflops[idx] >= best * (1.0 - opt->keep_within);
        if (!keep && !attn_tune_candidates[idx].always) alive[idx] = 0;
    }
    free(order);
}

/* Parses argv into opt, shapes and *clock_name (NULL: the default); 0, or
   2 after a message on a usage error. */
static int parse_options(int argc, char **argv, options *opt, shape *shapes, int *nshapes,
                         const char **clock_name)
{
    int i;
    opt->isa = NULL;
    opt->threads = 1;
    opt->batch = 1;
    opt->min_time = 0.25;
    opt->min_runs = 3;
    opt->max_runs = 1000;
    opt->keep = 0;
    opt->keep_within = 1.0;
    opt->flush_decode = 0;
    *nshapes = 0;
    *clock_name = NULL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 1;
        int bad = 0;
        if (!strcmp(a, "--isa") && val) {
            opt->isa = val;
        } else if (!strcmp(a, "--clock") && val && (!strcmp(val, "cpu") || !strcmp(val, "wall"))) {
            *clock_name = val;
        } else if (!strcmp(a, "--threads")) {
            bad = parse_long(val, 0, 4096, &n);
            opt->threads = (int)n;
        } else if (!strcmp(a, "--batch")) {
            bad = parse_long(val, 1, 1L << 20, &opt->batch);
        } else if (!strcmp(a, "--min-time")) {
            bad = parse_double(val, 0.0, 60.0, &opt->min_time);
        } else if (!strcmp(a, "--min-runs")) {
            bad = parse_long(val, 1, 1000000, &opt->min_runs);
        } else if (!strcmp(a, "--max-runs")) {
            bad = parse_long(val, 1, 1000000, &opt->max_runs);
        } else if (!strcmp(a, "--keep")) {
            bad = parse_long(val, 0, 1000000, &opt->keep);
        } else if (!strcmp(a, "--keep-within")) {
            bad = parse_double(val, 0.0, 1.0, &opt->keep_within);
        } else if (!strcmp(a, "--flush-decode")) {
            bad = parse_long(val, 0, 1L << 30, &opt->flush_decode);
        } else if (a[0] != '-' && *nshapes < MAX_SHAPES && parse_shape(a, &shapes[*nshapes]) == 0) {
            (*nshapes)++;
            continue;
        } else {
            fputs(usage, stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "attngen: tune: %s needs a number in range\n", a);
            return 2;
        }
        i++;
    }
    return 0;
}

/* The defaults that depend on other options, and the clock. */
static void settle_options(options *opt, const char **clock_name)
{
    if (opt->keep == 0) opt->keep = attn_tune_count; /* no racing */
    if (opt->max_runs < opt->min_runs) opt->max_runs = opt->min_runs;
#ifdef _OPENMP
    if (opt->threads == 0) opt->threads = omp_get_max_threads();
#else
    opt->threads = 1;
#endif
    if (!*clock_name) *clock_name = opt->threads == 1 ? "cpu" : "wall";
#ifdef CLOCK_THREAD_CPUTIME_ID
    cpu_clock = !strcmp(*clock_name, "cpu");
#else
    *clock_name = "wall";
#endif
}

/* Every candidate must store its tensors as the first one does (the
   inputs are shared) and have a variant for an ISA this CPU runs
   (opt->isa; NULL: the first candidate's best).  0, or 2 after a message. */
static int check_candidates(options *opt)
{
    const attn_spec *first = &attn_tune_candidates[0].kernel->spec;
    int i;
    for (i = 0; i < attn_tune_count; i++) {
        const attn_spec *spec = &attn_tune_candidates[i].kernel->spec;
        if (spec->dtype_q != first->dtype_q || spec->dtype_kv != first->dtype_kv || spec->dtype_o != first->dtype_o) {
            fprintf(stderr, "attngen: tune: candidate %s stores Q as %s, K and V as %s, O as %s; the first "
                            "candidate as %s, %s, %s\n",
                    attn_tune_candidates[i].label, attn_dtype_name(spec->dtype_q), attn_dtype_name(spec->dtype_kv),
                    attn_dtype_name(spec->dtype_o), attn_dtype_name(first->dtype_q),
                    attn_dtype_name(first->dtype_kv), attn_dtype_name(first->dtype_o));
            return 2;
        }
    }
    if (!opt->isa) opt->isa = attn_isa_name(attn_tune_candidates[0].kernel->variants[0].isa);
    if (attn_isa_from_name(opt->isa) < 0 || !attn_isa_supported((attn_isa)attn_isa_from_name(opt->isa))) {
        fprintf(stderr, "attngen: tune: this CPU cannot run ISA '%s'\n", opt->isa);
        return 2;
    }
    for (i = 0; i < attn_tune_count; i++) {
        if (!variant_fn(attn_tune_candidates[i].kernel, opt->isa)) {
            fprintf(stderr, "attngen: tune: candidate %s has no %s variant\n", attn_tune_candidates[i].label,
                    opt->isa);
            return 2;
        }
    }
    return 0;
}

/* Times every shape in order, racing each bucket after its first shape.
   0, 1 when a candidate failed, 2 when out of memory (with a message). */
static int run_shapes(const options *opt, const shape *shapes, int nshapes, int *bucket_alive[2],
                      double *gflops)
{
    int s, i, failed = 0, timed[2] = { 0, 0 };
    for (s = 0; s < nshapes; s++) {
        const int b = strcmp(shapes[s].bucket, "prefill") ? 1 : 0;
        int r;
        if (timed[b] == 1) race(opt, bucket_alive[b], gflops); /* once, on the first shape's times */
        timed[b]++;
        r = run_shape(&shapes[s], opt, bucket_alive[b], gflops);
        if (r < 0) {
            fprintf(stderr, "attngen: tune: out of memory for %s %ldx%ld\n", shapes[s].bucket, shapes[s].seq_q,
                    shapes[s].seq_k);
            return 2;
        }
        if (r) {
            failed = 1;
            for (i = 0; i < attn_tune_count; i++)
                if (bucket_alive[b][i] && gflops[i] <= 0.0) bucket_alive[b][i] = 0; /* failed: out */
        }
    }
    return failed;
}

int main(int argc, char **argv)
{
    options opt;
    shape shapes[MAX_SHAPES];
    int nshapes, i, failed;
    int *alive, *bucket_alive[2];
    double *gflops;
    const char *clock_name;

    if (parse_options(argc, argv, &opt, shapes, &nshapes, &clock_name) != 0)
        return 2;
    settle_options(&opt, &clock_name);
    if (attn_tune_count < 1 || nshapes == 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (check_candidates(&opt) != 0)
        return 2;

    if (opt.flush_decode > 0) {
        flush_bytes = (size_t)opt.flush_decode;
        flush_buf = (unsigned char *)calloc(flush_bytes, 1);
        if (!flush_buf) flush_bytes = 0; /* no memory for it: decode is timed warm */
    }
    alive = (int *)malloc(sizeof(int) * 2 * (size_t)attn_tune_count);
    gflops = (double *)calloc((size_t)attn_tune_count, sizeof(double));
    if (!alive || !gflops) {
        fprintf(stderr, "attngen: tune: out of memory\n");
        return 2;
    }
    bucket_alive[0] = alive;
    bucket_alive[1] = alive + attn_tune_count;
    for (i = 0; i < attn_tune_count; i++) {
        bucket_alive[0][i] = !strcmp(attn_tune_candidates[i].bucket, "prefill");
        bucket_alive[1][i] = !strcmp(attn_tune_candidates[i].bucket, "decode");
    }
    printf("{\"event\": \"start\", \"isa\": \"%s\", \"threads\": %d, \"clock\": \"%s\", \"candidates\": %d, "
           "\"shapes\": %d}\n",
           opt.isa, opt.threads, clock_name, attn_tune_count, nshapes);
    fflush(stdout);
    failed = run_shapes(&opt, shapes, nshapes, bucket_alive, gflops);
    if (failed == 2)
        return 2;
    printf("{\"event\": \"done\"}\n");
    free(alive);
    free(gflops);
    free(flush_buf);
    return failed;
}
