/*
 * attn_bench_main.c - the program behind `attngen bench`.
 *
 * Compiled together with one generated kernel and runtime/tools/attn_entry.c,
 * which defines attn_entry_kernel.  On one shape, its inputs a case of the
 * family's table (attn_case_ops, attn_cases.h, built with attn_case.bench:
 * contiguous random tensors, K and V [B][Lk][Hkv][D] or [B][Hkv][Lk][D] with
 * --kv-layout bhsd, full key lengths, every key visible), it times the
 * family's run of the case (ops->run) and counts its FLOPs (ops->flops),
 * side by side in one run:
 *   - every ISA variant this CPU runs (or the one --isa names),
 *   - the naive reference (when it would take less than a few seconds),
 *   - an unfused baseline, sgemm + softmax + sgemm, when built with OpenBLAS
 *     (ATTN_HAVE_OPENBLAS), reporting the OpenBLAS core it ran, and for a
 *     kernel with bf16 Q, K and V the same with cblas_sbgemm on bf16 tensors
 *     when the OpenBLAS it runs with exports it (looked up at run time),
 * and measures the machine's FMA peak per ISA on the spot (independent FMA
 * chains in registers, on the same number of threads), and for the
 * avx512bf16 variant the bf16 dot peak (chains of vdpbf16ps), the
 * denominator of that row's fraction of peak, and for a matmul = "int8"
 * kernel each variant's int8 dot peak (the instruction its Q.K's integer
 * products take here: vpdpbusd chains, or vpmaddubsw without VNNI).  With few query rows
 * (decode) it also reports the K/V bytes read per second against the read
 * bandwidth it measures (a 1 GiB streaming sum, before and after the kernels:
 * the better).  GFLOP/s count the visible scores only: FLOPs = 2 * visible *
 * (D + Dv), the count of the README's benchmark tables.  Linear attention
 * (kind = "linear") counts the FLOPs of the chunked algorithm its kernels
 * run instead (attn_reference_linear_flops), says so in its output, and
 * has no OpenBLAS baseline; with state, the state (zero at first) takes
 * every run's keys, as a decode loop's would.
 * Additive and luong kernels (attn_classic_args) are timed on S [B][Lq][Ds]
 * and H [B][Lk][Dh] (additive: U precomputed unless --no-precomputed-u),
 * FLOPs as attn_reference_classic_flops counts them, against an unfused
 * OpenBLAS baseline (sgemm projections, libm tanhf, sgemv, softmax, the
 * context) and the reference; for tanh scores, each variant's tanh loop
 * rate on a shape where the tanh terms dominate, against the FMA peak
 * (TANH_FMAS_PER_TERM).
 * With --append N (sdpa configs) it times attn_<name>_append alone instead:
 * N new rows a sequence (random, in Q's storage type) stored into a cache of
 * --seq-k keys (default N) that holds seq_k - N keys already, contiguous or
 * paged, reporting the bytes written and read per second against the copy
 * bandwidth (memcpy of 256 MiB) it measures before and after.
 * A time is the best of repeated runs after a warm-up.
 * Exit codes: 0, 1 when a kernel fails, 2 on usage errors.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef ATTN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "attn_cases.h"
#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_bench.h"
#include "attn_tool_inputs.h"

extern const attn_kernel *const attn_entry_kernel;
extern const attn_bwd_kernel *const attn_entry_bwd_kernel; /* NULL: the config has no backward pass */
extern attn_status (*const attn_entry_append)(const attn_args *); /* NULL: not an sdpa kernel */

static const char usage[] =
    "usage: attn_bench [--batch B] [--seq-q N] [--seq-k N] [--threads N] [--isa NAME] [--json]\n"
    "                  [--kv-layout bshd|bhsd] [--no-reference] [--no-blas] [--blas-core NAME|keep]\n"
    "                  [--precomputed-u | --no-precomputed-u] [--no-tanh-rate]   (additive, luong)\n"
    "                  [--append N]   (sdpa: time the store of N new rows a sequence alone)\n";

/* The reference is skipped above this many visible-score multiply-adds (it
   runs at about 1-2 GFLOP/s). */
#define REFERENCE_LIMIT 4e9

/* Up to this many query rows the bench reports K/V bytes read per second
   against the measured read bandwidth. */
#define DECODE_ROWS 64

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* ---- timing --------------------------------------------------------------- */

typedef struct {
    char name[64];
    double seconds;
    int runs;
    double peak;     /* the f32 FMA peak of the ISA it runs on (avx512bf16: of AVX-512), GFLOP/s; 0 if none */
    double dot_peak; /* avx512bf16: the bf16 dot peak, GFLOP/s, its fraction's denominator; else 0 */
    double int8_peak; /* matmul = "int8": the int8 dot peak of the variant (its Q.K's products), GOP/s; else 0 */
} timing;

/* Best time of call(ctx) over at least 5 runs and ~1 s, after one warm-up
   run (this machine is shared: the minimum is the least disturbed run). */
typedef attn_status (*timed_call)(const void *ctx);
static attn_status best_time(timed_call call, const void *ctx, timing *t)
{
    double total = 0.0, best = 1e30;
    attn_status st = call(ctx);
    t->runs = 0;
    while (st == ATTN_OK && (t->runs < 5 || total < 1.0) && t->runs < 1000) {
        const double t0 = attn_bench_now();
        double dt;
        st = call(ctx);
        dt = attn_bench_now() - t0;
        total += dt;
        if (dt < best) best = dt;
        t->runs++;
    }
    t->seconds = best;
    return st;
}

#ifdef ATTN_HAVE_OPENBLAS
/* a baseline on attn_args */
typedef attn_status (*run_fn)(const attn_spec *, const attn_args *);
typedef struct {
    run_fn fn;
    const attn_spec *s;
    const attn_args *a;
} sdpa_call;
static attn_status call_sdpa(const void *ctx)
{
    const sdpa_call *c = (const sdpa_call *)ctx;
    return c->fn(c->s, c->a);
}

/* The best time of fn(s, args). */
static attn_status time_fn(run_fn fn, const attn_spec *s, const attn_args *args, timing *t)
{
    sdpa_call c;
    c.fn = fn;
    c.s = s;
    c.a = args;
    return best_time(call_sdpa, &c, t);
}
#endif

/* The command line. */
typedef struct {
    long batch, seq_q, seq_k, threads;
    const char *isa;
    int json, no_ref, no_blas, head_major;
    int u_mode;  /* additive: --precomputed-u 1, --no-precomputed-u 0, neither -1 (precomputed) */
    int no_tanh; /* additive, luong concat: --no-tanh-rate */
    long append; /* sdpa: --append N, the new rows a sequence of the append timed alone; 0: none */
} bench_options;

/* Parses argv into opt; 0, or 2 after a message on a usage error. */
static int parse_options(int argc, char **argv, bench_options *opt)
{
    int i;
    memset(opt, 0, sizeof *opt);
    opt->batch = 1;
    opt->seq_q = 512;
    opt->seq_k = -1;
    opt->threads = 1;
    opt->u_mode = -1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = !strcmp(a, "--batch") ? &opt->batch : !strcmp(a, "--seq-q") ? &opt->seq_q
                  : !strcmp(a, "--seq-k") ? &opt->seq_k : !strcmp(a, "--threads") ? &opt->threads
                  : !strcmp(a, "--append") ? &opt->append : NULL;
        if (dst) {
            if (!val || parse_long(val, dst == &opt->threads ? 0 : 1, 1L << 24, dst)) {
                fprintf(stderr, "attngen: bench: %s needs an integer in range\n", a);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--isa") && val) {
            opt->isa = val;
            i++;
        } else if (!strcmp(a, "--kv-layout") && val && (!strcmp(val, "bshd") || !strcmp(val, "bhsd"))) {
            opt->head_major = !strcmp(val, "bhsd");
            i++;
        } else if (!strcmp(a, "--json")) {
            opt->json = 1;
        } else if (!strcmp(a, "--no-reference")) {
            opt->no_ref = 1;
        } else if (!strcmp(a, "--no-blas")) {
            opt->no_blas = 1;
        } else if (!strcmp(a, "--precomputed-u") || !strcmp(a, "--no-precomputed-u")) {
            opt->u_mode = !strcmp(a, "--precomputed-u");
        } else if (!strcmp(a, "--no-tanh-rate")) {
            opt->no_tanh = 1;
        } else if (!strcmp(a, "--blas-core") && val) {
            i++; /* handled by choose_blas_core */
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (opt->seq_k < 0) opt->seq_k = opt->append > 0 ? opt->append : opt->seq_q;
    if (opt->append > opt->seq_k) {
        fprintf(stderr, "attngen: bench: --append %ld: more new rows than the cache holds (--seq-k %ld)\n",
                opt->append, opt->seq_k);
        return 2;
    }
#ifdef _OPENMP
    if (opt->threads == 0) opt->threads = omp_get_max_threads();
#else
    opt->threads = 1;
#endif
    return 0;
}

/* What was measured, and the rows. */
typedef struct {
    int64_t visible;
    double flops, kv_bytes, read_bw;
    const char *blas_core;
    int sbgemm;     /* whether the OpenBLAS run with has cblas_sbgemm; -1 without OpenBLAS */
    int sbgemm_for; /* whether this run would time the bf16 baseline, had it cblas_sbgemm */
    const char *dispatch; /* the variant the entry point runs on this CPU (NULL: none) */
    const char *flops_counted; /* how the FLOPs were counted (attn_case_ops.flops_counted) */
} bench_totals;

#ifdef ATTN_HAVE_OPENBLAS
/* Times the baseline fn on args into rows[*n] (name, no peak); advances *n
   when it ran. */
static void time_baseline(const char *name, run_fn fn, const attn_spec *spec, const attn_args *args,
                          timing *rows, int *n)
{
    snprintf(rows[*n].name, sizeof rows[*n].name, "%s", name);
    rows[*n].peak = rows[*n].dot_peak = 0.0;
    if (time_fn(fn, spec, args, &rows[*n]) == ATTN_OK) (*n)++;
}
#endif

/* The baselines after the kernels, rows from *n on: the unfused OpenBLAS
   one (when built with it, for the masks it models, while one group's
   scores fit in 2 GB) on f32 tensors (base: the case's widened inputs);
   for a kernel with bf16 Q, K and V, the same with cblas_sbgemm on the
   kernel's bf16 tensors (args), O in f32, when this OpenBLAS has it; and
   the reference (below REFERENCE_LIMIT) on f32 tensors.  Sets t->blas_core
   (the OpenBLAS core that ran, or NULL) and t->sbgemm, t->sbgemm_for. */
static void time_baselines(const attn_spec *spec, const bench_options *opt, const attn_args *args,
                           const attn_args *base, bench_totals *t, timing *rows, int *n)
{
    t->blas_core = NULL;
    t->sbgemm = -1;
    t->sbgemm_for = 0;
#ifdef ATTN_HAVE_OPENBLAS
    t->sbgemm = attn_bench_find_sbgemm();
    /* one group's scores below 2 GB */
    if (!opt->no_blas && attn_bench_blas_supports(spec) && spec->page == 0 && /* (paged: no baseline) */
        (double)opt->seq_q * (spec->heads_q / spec->heads_kv) * (double)opt->seq_k * 4.0 < 2e9) {
        openblas_set_num_threads((int)opt->threads);
        t->blas_core = openblas_get_corename();
        time_baseline("openblas", attn_bench_blas_attention, spec, base, rows, n);
        t->sbgemm_for = spec->dtype_q == ATTN_DTYPE_BF16 && spec->dtype_kv == ATTN_DTYPE_BF16;
        if (t->sbgemm_for && t->sbgemm) {
            attn_args bf = *base; /* the f32 O of the baselines, every stride the same */
            bf.q = args->q;
            bf.k = args->k;
            bf.v = args->v;
            time_baseline("openblas-bf16", attn_bench_blas_attention_bf16, spec, &bf, rows, n);
        }
    }
#else
    (void)args;
#endif
    if (!opt->no_ref && (double)t->visible * spec->head_dim <= REFERENCE_LIMIT) {
        const double t0 = attn_bench_now();
        if (attn_reference(spec, base) == ATTN_OK) {
            snprintf(rows[*n].name, sizeof rows[*n].name, "reference");
            rows[*n].seconds = attn_bench_now() - t0;
            rows[*n].runs = 1;
            rows[*n].peak = rows[*n].dot_peak = 0.0;
            (*n)++;
        }
    }
}

static void report_json(const attn_spec *spec, const bench_options *opt, const bench_totals *t,
                        const timing *rows, int n)
{
    int i;
    printf("{\"config\": \"%s\", \"batch\": %ld, \"seq_q\": %ld, \"seq_k\": %ld, \"threads\": %ld, "
           "\"heads_q\": %d, \"heads_kv\": %d, \"head_dim\": %d, \"head_dim_v\": %d, "
           "\"visible_scores\": %lld, \"flops\": %.0f, \"flops_counted\": \"%s\", \"kv_bytes\": %.0f, "
           "\"read_gbs\": %.4g, \"dispatch\": %s%s%s, "
           "\"blas_core\": %s%s%s, \"blas_sbgemm\": %s, \"results\": [",
           spec->name, opt->batch, opt->seq_q, opt->seq_k, opt->threads, spec->heads_q, spec->heads_kv,
           spec->head_dim, spec->head_dim_v, (long long)t->visible, t->flops,
           t->flops_counted, t->kv_bytes, t->read_bw,
           t->dispatch ? "\"" : "", t->dispatch ? t->dispatch : "null", t->dispatch ? "\"" : "", t->blas_core ? "\"" : "", t->blas_core ? t->blas_core : "null", t->blas_core ? "\"" : "",
           t->sbgemm < 0 ? "null" : t->sbgemm ? "true" : "false");
    for (i = 0; i < n; i++) {
        printf("%s{\"impl\": \"%s\", \"seconds\": %.6g, \"gflops\": %.5g, \"peak_gflops\": %.5g, ",
               i ? ", " : "", rows[i].name, rows[i].seconds, t->flops / rows[i].seconds * 1e-9, rows[i].peak);
        if (rows[i].dot_peak > 0) printf("\"bf16_dot_peak_gflops\": %.5g, ", rows[i].dot_peak);
        if (rows[i].int8_peak > 0) printf("\"int8_dot_peak_gops\": %.5g, ", rows[i].int8_peak);
        printf("\"kv_gbs\": %.5g, \"runs\": %d}", t->kv_bytes / rows[i].seconds * 1e-9, rows[i].runs);
    }
    printf("]}\n");
}

static void report_table(const attn_spec *spec, const bench_options *opt, const bench_totals *t,
                         const timing *rows, int n)
{
    const double read_bw = t->read_bw;
    int i;
    printf("%s: B=%ld Lq=%ld Lk=%ld Hq=%d Hkv=%d D=%d Dv=%d threads=%ld, %.4g visible scores\n", spec->name,
           opt->batch, opt->seq_q, opt->seq_k, spec->heads_q, spec->heads_kv, spec->head_dim, spec->head_dim_v,
           opt->threads, (double)t->visible);
    if (spec->family == ATTN_FAMILY_LINEAR)
        printf("  (linear attention: GFLOP/s of the chunked algorithm, %.4g FLOPs: keys folded into the state,\n"
               "   phi(q)^T S per row%s)\n",
               t->flops, spec->causal ? ", each chunk's diagonal block of scores in full" : "");
    printf("  %-13s %12s %10s %16s", "impl", "time (ms)", "GFLOP/s", "of peak");
    if (read_bw > 0) printf(" %10s %16s", "K/V GB/s", "of read BW");
    printf("\n");
    for (i = 0; i < n; i++) {
        const double gf = t->flops / rows[i].seconds * 1e-9, kv = t->kv_bytes / rows[i].seconds * 1e-9;
        const double peak = rows[i].dot_peak > 0 ? rows[i].dot_peak : rows[i].peak;
        printf("  %-13s %12.3f %10.2f ", rows[i].name, rows[i].seconds * 1e3, gf);
        if (peak > 0)
            printf("%6.1f%% of %4.0f", 100.0 * gf / peak, peak);
        else
            printf("%16s", "-");
        if (read_bw > 0) printf(" %10.2f %6.1f%% of %4.1f", kv, 100.0 * kv / read_bw, read_bw);
        printf("\n");
    }
    if (read_bw > 0)
        printf("  (K/V: %.1f MB read at least once; read bandwidth: the better of two measurements on %ld thread%s,\n"
               "   before and after the kernels)\n", t->kv_bytes * 1e-6,
               opt->threads, opt->threads == 1 ? "" : "s");
    for (i = 0; i < n; i++) /* a row against the bf16 dot peak: the f32 FMA peak too */
        if (rows[i].dot_peak > 0 && rows[i].peak > 0)
            printf("  (%s: of the bf16 dot peak, vdpbf16ps chains; %.1f%% of the f32 FMA peak, %.0f GFLOP/s)\n",
                   rows[i].name, 100.0 * t->flops / rows[i].seconds * 1e-9 / rows[i].peak, rows[i].peak);
    for (i = 0; i < n; i++) /* matmul = "int8": the rate of Q.K's integer products */
        if (rows[i].int8_peak > 0)
            printf("  (%s: int8 dot peak %.0f GOP/s, a product counted as 2: the products of Q.K; P.V multiplies in f32)\n",
                   rows[i].name, rows[i].int8_peak);
    for (i = 0; i < n; i++) /* a variant timed by name that the entry point passes over here */
        if (!strcmp(rows[i].name, "avx512bf16") && t->dispatch && strcmp(t->dispatch, "avx512bf16"))
            printf("  (avx512bf16: timed by name; the entry point runs %s on this CPU, where bf16 products are\n"
                   "   slower than f32 ones: ATTNGEN_BF16_DOT=1 makes it take avx512bf16)\n", t->dispatch);
    if (t->blas_core) printf("  (openblas core: %s)\n", t->blas_core);
    if (t->sbgemm_for && t->sbgemm == 0)
        printf("  openblas-bf16: not in this OpenBLAS (built without bfloat16: it has no cblas_sbgemm)\n");
}

/* ---- additive and luong kernels (attn_classic_args) ---------------------- */

/*
 * The tanh loop's rate: the multiplies and FMAs of one term v_a tanh(x_a +
 * u_a) of the kernels' scores, per lane (generator/planner/classic.lua,
 * TANH_FMAS, and docs/kernels.md): x^2, 5 FMAs of P and 3 of Q, x P, the
 * division counted as one, and the FMA by v.
 */
#define TANH_FMAS_PER_TERM 12
/* The shapes where the tanh terms dominate (one batch entry, every key
   visible): additive with U precomputed (the rows' W_s s, Ds Da FMAs a row,
   against Lk Da tanh terms: about 6% at Ds = Da = 1000), and concat, whose
   call projects H too (Dh Da FMAs a key against Lq Da terms). */
#define TANH_ADDITIVE_Q 64
#define TANH_ADDITIVE_K 1024
#define TANH_CONCAT_Q 1024
#define TANH_CONCAT_K 1024
/* The reference of a classic kernel is timed up to this many FLOPs (it
   computes in double, with a double tanh per term). */
#define CLASSIC_REFERENCE_LIMIT 1e9

/* The tensors of attn_classic_args, by index. */
enum { CT_S, CT_H, CT_U, CT_W_S, CT_W_H, CT_W, CT_V, CT_B, CT_COUNT };

static int classic_uses_tanh(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_ADDITIVE || spec->score == ATTN_SCORE_CONCAT;
}

/* ---- a case of the family's table (attn_cases.h) ------------------------- */

/* A built case of the bench's shape: the ops of the config's family and
   direction (attn_case_ops_for) and its state. */
typedef struct {
    const attn_case_ops *ops;
    void *state;
} bench_case;

/* Builds the family's case of one shape for the bench (attn_case.bench:
   contiguous tensors, full key lengths, every key visible, a run the
   kernel's call alone), its inputs random: case->c its description.
   ATTN_OK, or the build's error with nothing to free. */
static attn_status bench_case_build(bench_case *bc, const attn_spec *spec, attn_direction dir, const attn_case *c)
{
    attn_status st;
    attn_guard_huge_pages(1); /* tensors as an engine holds them, as the baselines' and the probes' */
    bc->ops = attn_case_ops_for(spec, dir);
    bc->state = bc->ops ? calloc(1, bc->ops->state_size) : NULL;
    if (!bc->state) return ATTN_ERR_NOMEM; /* (every family has forward ops) */
    st = bc->ops->build(bc->state, spec, c);
    if (st != ATTN_OK) {
        free(bc->state);
        bc->state = NULL;
    }
    return st;
}

static void bench_case_free(bench_case *bc)
{
    if (bc->state) {
        bc->ops->free(bc->state);
        free(bc->state);
    }
    bc->state = NULL;
}

/* The bench's case of a shape: seed 1, threads, every key visible. */
static attn_case bench_case_of(long batch, long seq_q, long seq_k, int threads)
{
    attn_case c;
    memset(&c, 0, sizeof c);
    c.batch = batch;
    c.seq_q = seq_q;
    c.seq_k = seq_k;
    c.threads = threads;
    c.seed = 1;
    c.bench = 1;
    return c;
}

typedef struct {
    const bench_case *bc;
    attn_case_kernel k;
    int threads;
} case_call;
static attn_status call_case(const void *ctx)
{
    const case_call *c = (const case_call *)ctx;
    return c->bc->ops->run(c->bc->state, &c->k, c->threads);
}

/* The best time of the family's run (ops->run) of a variant of the
   forward kernel on the case. */
static attn_status time_case(const bench_case *bc, const attn_kernel *kern, const attn_variant *var, int threads,
                             timing *t)
{
    case_call c;
    memset(&c, 0, sizeof c);
    c.bc = bc;
    c.k.fwd = kern;
    c.k.fwd_variant = var;
    c.threads = threads;
    return best_time(call_case, &c, t);
}

/* A family's own measurement of a variant just timed, row k of the rows
   (the classic families' tanh rate); ctx the family's. */
typedef void (*variant_hook)(const attn_kernel *kern, const attn_variant *var, const bench_options *opt, int k,
                             void *ctx);

/* Times every variant this CPU runs (or the one opt->isa names) on the
   case into rows from *n on, each with its peaks, then hook (when not
   NULL); *failed is set when one fails. */
static void time_variants(const attn_kernel *kern, const bench_options *opt, const bench_case *bc, timing *rows,
                          int *n, int *failed, variant_hook hook, void *ctx)
{
    int i;
    for (i = 0; i < kern->n_variants; i++) {
        const attn_variant *var = &kern->variants[i];
        timing *row = &rows[*n];
        attn_status st;
        if (opt->isa && strcmp(opt->isa, attn_isa_name(var->isa))) continue;
        if (!attn_isa_supported(var->isa)) continue;
        snprintf(row->name, sizeof row->name, "%s", attn_isa_name(var->isa));
        row->peak = attn_bench_fma_peak(var->isa, (int)opt->threads);
        row->dot_peak = var->isa == ATTN_ISA_AVX512BF16 ? attn_bench_bf16_dot_peak((int)opt->threads) : 0.0;
        row->int8_peak = kern->spec.matmul == ATTN_DTYPE_Q8_0 ? attn_bench_int8_dot_peak(var->isa, (int)opt->threads) : 0.0;
        st = time_case(bc, kern, var, (int)opt->threads, row);
        if (st != ATTN_OK) {
            fprintf(stderr, "attngen: bench: %s failed: %s\n", row->name, attn_status_string(st));
            *failed = 1;
            continue;
        }
        if (hook) hook(kern, var, opt, *n, ctx);
        (*n)++;
    }
}

/* ---- additive and luong: the baseline's f32 tensors ----------------------- */

/* The f32 tensors of a classic case's args (the case is contiguous): each
   stored tensor widened, or the stored one where it is f32, and C an f32
   array of the baseline's own; owned[] what was allocated. */
typedef struct {
    float *owned[CT_COUNT + 1];
} classic_widened;

static int classic_widen(const attn_spec *spec, const attn_classic_args *a, attn_classic_args *base,
                         classic_widened *w)
{
    const size_t ds = (size_t)spec->query_dim, dh = (size_t)spec->key_dim, da = (size_t)spec->attn_dim;
    const size_t lq = (size_t)(a->batch * a->seq_q), lk = (size_t)(a->batch * a->seq_k);
    const int concat = spec->family != ATTN_FAMILY_ADDITIVE && spec->score == ATTN_SCORE_CONCAT;
    const void *src[CT_COUNT];
    const void **dst[CT_COUNT];
    size_t n[CT_COUNT];
    int t;

    memset(w, 0, sizeof *w);
    *base = *a;
    src[CT_S] = a->s, dst[CT_S] = &base->s, n[CT_S] = lq * ds;
    src[CT_H] = a->h, dst[CT_H] = &base->h, n[CT_H] = lk * dh;
    src[CT_U] = a->u, dst[CT_U] = &base->u, n[CT_U] = lk * da;
    src[CT_W_S] = a->w_s, dst[CT_W_S] = &base->w_s, n[CT_W_S] = da * ds;
    src[CT_W_H] = a->w_h, dst[CT_W_H] = &base->w_h, n[CT_W_H] = da * dh;
    src[CT_W] = a->w, dst[CT_W] = &base->w, n[CT_W] = concat ? da * (dh + ds) : dh * ds;
    src[CT_V] = a->v_attn, dst[CT_V] = &base->v_attn, n[CT_V] = da;
    src[CT_B] = a->b_attn, dst[CT_B] = &base->b_attn, n[CT_B] = da;
    for (t = 0; t < CT_COUNT; t++) {
        const attn_dtype dt = t == CT_S ? spec->dtype_q : spec->dtype_kv;
        if (src[t] == NULL || dt == ATTN_DTYPE_F32) continue;
        w->owned[t] = (float *)malloc(sizeof(float) * n[t] + 1);
        if (!w->owned[t]) return -1;
        attn_dtype_to_f32_array(dt, src[t], w->owned[t], n[t]);
        *dst[t] = w->owned[t];
    }
    w->owned[CT_COUNT] = (float *)malloc(sizeof(float) * lq * dh + 1);
    base->c = w->owned[CT_COUNT];
    base->c_stride[0] = a->seq_q * (int64_t)dh; /* contiguous f32 C */
    base->c_stride[1] = (int64_t)dh;
    return base->c ? 0 : -1;
}

static void classic_widened_free(classic_widened *w)
{
    int t;
    for (t = 0; t <= CT_COUNT; t++) free(w->owned[t]);
    memset(w, 0, sizeof *w);
}

/* The reference on the kernel's stored inputs, C unrounded into an f32
   array (base's C). */
static attn_status classic_reference(const attn_spec *s, const attn_classic_args *a)
{
    attn_spec rs = *s;
    rs.dtype_o = ATTN_DTYPE_F32;
    return attn_reference_classic(&rs, a);
}

#ifdef ATTN_HAVE_OPENBLAS
typedef struct {
    const attn_spec *s;
    const attn_classic_args *a;
} classic_call;
static attn_status call_classic_blas(const void *ctx)
{
    const classic_call *c = (const classic_call *)ctx;
    return attn_bench_blas_classic(c->s, c->a);
}
#endif

/* The classic command line's extras, checked against the config. */
static int classic_options(const attn_spec *spec, const bench_options *opt)
{
    const char *kind = attn_family_name(spec->family);
    if (opt->head_major) {
        fprintf(stderr, "attngen: bench: --kv-layout: the config '%s' has kind = \"%s\", whose H [B][Lk][Dh] "
                        "has one layout\n", spec->name, kind);
        return 2;
    }
    if (opt->u_mode >= 0 && spec->family != ATTN_FAMILY_ADDITIVE) {
        fprintf(stderr, "attngen: bench: %s: the config '%s' has kind = \"%s\"; only additive kernels read U\n",
                opt->u_mode ? "--precomputed-u" : "--no-precomputed-u", spec->name, kind);
        return 2;
    }
    return 0;
}

/* One timed variant's tanh loop rate (additive and concat). */
typedef struct {
    double seconds, terms, fraction;
    int measured;
} tanh_rate;

/* Times the variant on the shape where the tanh terms dominate (U
   precomputed for additive), a case of the family's own: the call's FMAs,
   TANH_FMAS_PER_TERM per tanh term and one per multiply-add of the
   projections and the context, over the whole call's time, against the
   peak.  The softmax and the rest of the call count as time but not as
   FMAs, so this is a lower bound of the tanh loop's own rate. */
static void time_tanh(const attn_kernel *kern, const attn_variant *var, int threads, double peak, tanh_rate *r)
{
    const attn_spec *spec = &kern->spec;
    const int additive = spec->family == ATTN_FAMILY_ADDITIVE;
    const long lq = additive ? TANH_ADDITIVE_Q : TANH_CONCAT_Q, lk = additive ? TANH_ADDITIVE_K : TANH_CONCAT_K;
    attn_case c = bench_case_of(1, lq, lk, threads);
    bench_case bc;
    timing t;
    memset(r, 0, sizeof *r);
    if (peak <= 0.0) return;
    c.with_u = additive;
    c.no_weights = 1;
    if (bench_case_build(&bc, spec, ATTN_DIR_FWD, &c) != ATTN_OK) return;
    if (time_case(&bc, kern, var, threads, &t) == ATTN_OK) {
        double other_fmas;
        r->seconds = t.seconds;
        r->terms = (double)lq * (double)lk * spec->attn_dim;
        /* the case's FLOPs count 3 a tanh term (every key is visible here) */
        other_fmas = (bc.ops->flops(bc.state) - 3.0 * r->terms) / 2.0;
        r->fraction = (r->terms * TANH_FMAS_PER_TERM + other_fmas) * 2.0 / t.seconds * 1e-9 / peak;
        r->measured = 1;
    }
    bench_case_free(&bc);
}

static const char *score_name(const attn_spec *spec)
{
    static const char *const names[] = { "none", "additive", "dot", "general", "concat" };
    return spec->score >= ATTN_SCORE_NONE && spec->score <= ATTN_SCORE_CONCAT ? names[spec->score] : "unknown";
}

/* What a classic bench measured: the rows (variants first), their tanh
   rates, the FLOPs and the baseline's time. */
typedef struct {
    timing rows[ATTN_ISA_COUNT + 2]; /* the variants, openblas, reference */
    tanh_rate tanh[ATTN_ISA_COUNT];
    int n, n_var, use_u, tanh_score;
    double flops, blas_seconds;
    const char *blas_core;
} classic_totals;

/* The classic families' hook of time_variants: the variant's tanh loop
   rate (tanh scores, unless --no-tanh-rate). */
static void classic_tanh_hook(const attn_kernel *kern, const attn_variant *var, const bench_options *opt, int k,
                              void *ctx)
{
    classic_totals *t = (classic_totals *)ctx;
    memset(&t->tanh[k], 0, sizeof t->tanh[k]);
    if (t->tanh_score && !opt->no_tanh) time_tanh(kern, var, (int)opt->threads, t->rows[k].peak, &t->tanh[k]);
}

static void classic_report_json(const attn_spec *spec, const bench_options *opt, const classic_totals *t)
{
    const timing *rows = t->rows;
    int i;
    printf("{\"config\": \"%s\", \"kind\": \"%s\", \"score\": \"%s\", \"batch\": %ld, \"seq_q\": %ld, "
           "\"seq_k\": %ld, \"threads\": %ld, \"query_dim\": %d, \"key_dim\": %d, \"attn_dim\": %d, "
           "\"bias\": %s, \"precomputed_u\": %s, \"flops\": %.0f, \"flops_counted\": \"classic\", "
           "\"blas_core\": %s%s%s, ",
           spec->name, attn_family_name(spec->family), score_name(spec), opt->batch, opt->seq_q, opt->seq_k,
           opt->threads, spec->query_dim, spec->key_dim, spec->attn_dim, spec->bias ? "true" : "false",
           spec->family != ATTN_FAMILY_ADDITIVE ? "null" : t->use_u ? "true" : "false", t->flops,
           t->blas_core ? "\"" : "", t->blas_core ? t->blas_core : "null", t->blas_core ? "\"" : "");
    if (t->tanh_score && !opt->no_tanh)
        printf("\"tanh\": {\"batch\": 1, \"seq_q\": %d, \"seq_k\": %d, \"precomputed_u\": %s, "
               "\"fmas_per_term\": %d}, ",
               spec->family == ATTN_FAMILY_ADDITIVE ? TANH_ADDITIVE_Q : TANH_CONCAT_Q,
               spec->family == ATTN_FAMILY_ADDITIVE ? TANH_ADDITIVE_K : TANH_CONCAT_K,
               spec->family == ATTN_FAMILY_ADDITIVE ? "true" : "false", TANH_FMAS_PER_TERM);
    printf("\"results\": [");
    for (i = 0; i < t->n; i++) {
        printf("%s{\"impl\": \"%s\", \"seconds\": %.6g, \"gflops\": %.5g, \"peak_gflops\": %.5g, \"runs\": %d",
               i ? ", " : "", rows[i].name, rows[i].seconds, t->flops / rows[i].seconds * 1e-9, rows[i].peak,
               rows[i].runs);
        if (i < t->n_var && t->blas_seconds > 0)
            printf(", \"speedup_vs_openblas\": %.5g", t->blas_seconds / rows[i].seconds);
        if (i < t->n_var && t->tanh[i].measured)
            printf(", \"tanh_seconds\": %.6g, \"tanh_terms\": %.0f, \"tanh_gterms_per_s\": %.5g, "
                   "\"tanh_fraction_of_peak\": %.5g",
                   t->tanh[i].seconds, t->tanh[i].terms, t->tanh[i].terms / t->tanh[i].seconds * 1e-9,
                   t->tanh[i].fraction);
        printf("}");
    }
    printf("]}\n");
}

static void classic_report_table(const attn_spec *spec, const bench_options *opt, const classic_totals *t)
{
    const timing *rows = t->rows;
    char da[32] = "";
    int i;
    if (spec->attn_dim > 0) snprintf(da, sizeof da, " Da=%d", spec->attn_dim);
    printf("%s: %s, B=%ld Lq=%ld Lk=%ld Ds=%d Dh=%d%s%s threads=%ld%s\n", spec->name,
           spec->family == ATTN_FAMILY_ADDITIVE ? "additive" : score_name(spec), opt->batch, opt->seq_q,
           opt->seq_k, spec->query_dim, spec->key_dim, da, spec->bias ? " bias" : "", opt->threads,
           spec->family != ATTN_FAMILY_ADDITIVE ? "" : t->use_u ? ", U precomputed" : ", U from W_h");
    printf("  (GFLOP/s of %.4g FLOPs: the projections, scores and context; tanh and softmax not counted)\n",
           t->flops);
    printf("  %-13s %12s %10s %16s %12s\n", "impl", "time (ms)", "GFLOP/s", "of peak", "vs openblas");
    for (i = 0; i < t->n; i++) {
        const double gf = t->flops / rows[i].seconds * 1e-9;
        printf("  %-13s %12.3f %10.2f ", rows[i].name, rows[i].seconds * 1e3, gf);
        if (rows[i].peak > 0) printf("%6.1f%% of %4.0f", 100.0 * gf / rows[i].peak, rows[i].peak);
        else printf("%16s", "-");
        if (i < t->n_var && t->blas_seconds > 0) printf(" %11.2fx", t->blas_seconds / rows[i].seconds);
        printf("\n");
    }
    for (i = 0; i < t->n_var; i++)
        if (t->tanh[i].measured)
            printf("  tanh loop (%s): B=1 Lq=%d Lk=%d%s, %.4g terms in %.3f ms, %.3g Gterms/s; at %d FMAs a "
                   "term and 1 a multiply-add elsewhere: %.2f of the FMA peak (%.0f GFLOP/s)\n",
                   rows[i].name, spec->family == ATTN_FAMILY_ADDITIVE ? TANH_ADDITIVE_Q : TANH_CONCAT_Q,
                   spec->family == ATTN_FAMILY_ADDITIVE ? TANH_ADDITIVE_K : TANH_CONCAT_K,
                   spec->family == ATTN_FAMILY_ADDITIVE ? ", U precomputed" : "", t->tanh[i].terms,
                   t->tanh[i].seconds * 1e3, t->tanh[i].terms / t->tanh[i].seconds * 1e-9, TANH_FMAS_PER_TERM,
                   t->tanh[i].fraction, rows[i].peak);
    if (t->tanh_score && t->n_var > 0 && !opt->no_tanh)
        printf("  (tanh loop: the whole call's time, softmax included; a lower bound of the loop's own rate)\n");
    if (t->blas_core) printf("  (openblas core: %s)\n", t->blas_core);
#ifdef ATTN_HAVE_OPENBLAS
    if (!opt->no_blas && spec->mask != ATTN_MASK_NONE)
        printf("  (no openblas baseline: it does not model the bool mask)\n");
#endif
}

/* The unfused OpenBLAS baseline and the reference after the variants, on
   the case's inputs (f32: classic_widen), rows from t->n on. */
static void classic_baselines(const attn_spec *spec, const bench_options *opt, const bench_case *bc,
                              classic_totals *t)
{
    const attn_classic_args *args = (const attn_classic_args *)bc->ops->args(bc->state);
    classic_widened w;
    attn_classic_args base;
    if (classic_widen(spec, args, &base, &w) != 0) {
        classic_widened_free(&w);
        return;
    }
#ifdef ATTN_HAVE_OPENBLAS
    if (!opt->no_blas && spec->mask == ATTN_MASK_NONE) {
        classic_call cc;
        timing *row = &t->rows[t->n];
        cc.s = spec;
        cc.a = &base;
        openblas_set_num_threads((int)opt->threads);
        t->blas_core = openblas_get_corename();
        snprintf(row->name, sizeof row->name, "openblas");
        row->peak = row->dot_peak = 0.0;
        if (best_time(call_classic_blas, &cc, row) == ATTN_OK) t->blas_seconds = t->rows[t->n++].seconds;
    }
#endif
    if (!opt->no_ref && t->flops <= CLASSIC_REFERENCE_LIMIT) {
        attn_classic_args ra = *args; /* the stored inputs, C f32 */
        double t0;
        ra.c = base.c;
        ra.c_stride[0] = base.c_stride[0];
        ra.c_stride[1] = base.c_stride[1];
        t0 = attn_bench_now();
        if (classic_reference(spec, &ra) == ATTN_OK) {
            timing *row = &t->rows[t->n++];
            snprintf(row->name, sizeof row->name, "reference");
            row->seconds = attn_bench_now() - t0;
            row->runs = 1;
            row->peak = row->dot_peak = 0.0;
        }
    }
    classic_widened_free(&w);
}

/* `attngen bench` for an additive or luong kernel: the variants, the
   unfused OpenBLAS baseline and the reference on one case of the family's
   table, and for tanh scores each variant's tanh loop rate; FLOPs as the
   case counts them (attn_reference_classic_flops). */
static int bench_classic(const attn_kernel *kern, const bench_options *opt)
{
    const attn_spec *spec = &kern->spec;
    attn_case c = bench_case_of(opt->batch, opt->seq_q, opt->seq_k, (int)opt->threads);
    classic_totals t;
    bench_case bc;
    int failed = 0;

    if (classic_options(spec, opt) != 0) return 2;
    memset(&t, 0, sizeof t);
    t.use_u = spec->family == ATTN_FAMILY_ADDITIVE && opt->u_mode != 0; /* default: precomputed */
    t.tanh_score = classic_uses_tanh(spec);
    c.with_u = t.use_u;
    c.no_weights = 1;
    if (bench_case_build(&bc, spec, ATTN_DIR_FWD, &c) != ATTN_OK) {
        fprintf(stderr, "attngen: bench: out of memory for this shape\n");
        return 2;
    }
    t.flops = bc.ops->flops(bc.state);

    time_variants(kern, opt, &bc, t.rows, &t.n, &failed, classic_tanh_hook, &t);
    t.n_var = t.n;
    if (opt->isa && t.n == 0 && !failed) {
        fprintf(stderr, "attngen: bench: no runnable variant named '%s'\n", opt->isa);
        bench_case_free(&bc);
        return 2;
    }
    classic_baselines(spec, opt, &bc, &t);
    if (opt->json)
        classic_report_json(spec, opt, &t);
    else
        classic_report_table(spec, opt, &t);
    bench_case_free(&bc);
    return failed ? 1 : 0;
}

/* The bench of the kernels that take attn_args (sdpa, linear attention);
   the exit code. */
static int bench_backward(const attn_kernel *kern, const bench_options *opt, const attn_args *args, double fwd_flops);
static int bench_append(const attn_kernel *kern, const bench_options *opt);

/* The bench's case of the kernels that take attn_args: the shape of the
   options, K and V head-major with --kv-layout bhsd, dropout of 10% of the
   weights (part of what is timed); the baselines' args (the reference's
   widened inputs, O into *o32, f32, contiguous as the case's O).  0, or 2
   after a message. */
static int qkv_case(const attn_spec *spec, const bench_options *opt, bench_case *bc, attn_args *base, float **o32)
{
    attn_case c = bench_case_of(opt->batch, opt->seq_q, opt->seq_k, (int)opt->threads);
    const size_t no = (size_t)(opt->batch * opt->seq_q) * (size_t)spec->heads_q * (size_t)spec->head_dim_v;
    c.kv_head_major = opt->head_major;
    if (spec->family != ATTN_FAMILY_LINEAR && spec->dropout) {
        c.dropout_p = 0.1f;
        c.dropout_seed = 42;
    }
    *o32 = NULL;
    if (bench_case_build(bc, spec, ATTN_DIR_FWD, &c) == ATTN_OK) {
        *o32 = (float *)malloc(sizeof(float) * no + 1);
        if (*o32) {
            bc->ops->widened(bc->state, base);
            base->o = *o32;
            base->weights = NULL; /* the baselines compute O and LSE only */
            base->entropy = NULL;
            return 0;
        }
        bench_case_free(bc);
    }
    fprintf(stderr, "attngen: bench: out of memory for this shape\n");
    return 2;
}

/* The bench of the kernels that take attn_args (sdpa, linear attention) on
   a case of the family's table; the exit code. */
static int bench_qkv(const attn_kernel *kern, const bench_options *options)
{
    const attn_spec *spec = &kern->spec;
    const bench_options opt = *options;
    bench_case bc;
    bench_totals t;
    const attn_args *args;
    attn_args base_args;
    float *o32 = NULL;
    timing rows[ATTN_ISA_COUNT + 3]; /* the variants, openblas, openblas-bf16, reference */
    float *bw_buf = NULL;
    int n = 0, failed = 0;

    memset(rows, 0, sizeof rows);

    if (opt.u_mode >= 0 || opt.no_tanh) {
        fprintf(stderr, "attngen: bench: %s: the config '%s' has kind = \"%s\"; it is for additive and luong "
                        "configs\n", opt.u_mode >= 0 ? (opt.u_mode ? "--precomputed-u" : "--no-precomputed-u")
                                                      : "--no-tanh-rate", spec->name, attn_family_name(spec->family));
        return 2;
    }
    if (opt.append > 0) return bench_append(kern, &opt);
    if (qkv_case(spec, &opt, &bc, &base_args, &o32) != 0) return 2;
    args = (const attn_args *)bc.ops->args(bc.state);

    memset(&t, 0, sizeof t);
    t.visible = bc.ops->visible(bc.state);
    t.flops = bc.ops->flops(bc.state);
    t.flops_counted = bc.ops->flops_counted;
    /* Few query rows: the work is reading K and V.  Count the bytes every
       implementation must read and measure what the machine can read. */
    if (opt.seq_q <= DECODE_ROWS) {
        /* shared_kv: one row of D values a key holds both K and V */
        t.kv_bytes = (double)attn_reference_keys_read(spec, args) *
                     (spec->head_dim + (spec->shared_kv ? 0 : spec->head_dim_v)) *
                     (double)attn_dtype_size(spec->dtype_kv) / (double)attn_dtype_values(spec->dtype_kv);
        bw_buf = attn_tool_random_floats(READ_BW_FLOATS, 7); /* no buffer: no bandwidth reported */
        if (bw_buf) t.read_bw = attn_bench_read_bandwidth(bw_buf, (int)opt.threads);
    }

    time_variants(kern, &opt, &bc, rows, &n, &failed, NULL, NULL);
    {
        const attn_variant *pick = attn_pick_variant(kern->variants, kern->n_variants);
        t.dispatch = pick ? attn_isa_name(pick->isa) : NULL;
    }
    if (opt.isa && n == 0 && !failed) {
        fprintf(stderr, "attngen: bench: no runnable variant named '%s'\n", opt.isa);
        free(bw_buf);
        free(o32);
        bench_case_free(&bc);
        return 2;
    }
    /* The memory system of a shared machine changes speed within minutes:
       measure again after the kernels and keep the better, so that a slow
       minute before them does not flatter their share of it. */
    if (bw_buf) {
        const double again = attn_bench_read_bandwidth(bw_buf, (int)opt.threads);
        if (again > t.read_bw) t.read_bw = again;
        free(bw_buf);
    }
    time_baselines(spec, &opt, args, &base_args, &t, rows, &n);

    if (opt.json)
        report_json(spec, &opt, &t, rows, n);
    else
        report_table(spec, &opt, &t, rows, n);
    if (attn_entry_bwd_kernel != NULL && spec->backward && bench_backward(kern, &opt, args, t.flops) != 0)
        failed = 1;
    free(o32);
    bench_case_free(&bc);
    return failed ? 1 : 0;
}

/* ---- the backward pass (configs with backward = true) -------------------- */

static attn_bwd_fn current_bwd;
static const attn_bwd_args *current_bwd_args;
static attn_status call_bwd(const void *ctx)
{
    (void)ctx;
    return current_bwd(current_bwd_args);
}

/* The unfused OpenBLAS backward (five sgemms, the softmax gradient between)
   on the same arguments, where OpenBLAS links and the baseline models the
   spec: a row of the table, or a JSON line with impl "openblas". */
#ifdef ATTN_HAVE_OPENBLAS
static const attn_spec *current_bwd_spec;
static attn_status call_bwd_blas(const void *ctx)
{
    (void)ctx;
    return attn_bench_blas_backward(current_bwd_spec, current_bwd_args);
}
#endif
static void bench_backward_blas(const attn_spec *spec, const bench_options *opt, double flops)
{
#ifdef ATTN_HAVE_OPENBLAS
    timing row;
    if (opt->no_blas || !attn_bench_blas_backward_supports(spec)) return;
    openblas_set_num_threads((int)opt->threads);
    current_bwd_spec = spec;
    if (best_time(call_bwd_blas, NULL, &row) != ATTN_OK) {
        fprintf(stderr, "attngen: bench: the openblas backward baseline failed\n");
        return;
    }
    if (opt->json)
        printf("{\"config\": \"%s\", \"direction\": \"backward\", \"impl\": \"openblas\", \"seconds\": %.6g, "
               "\"flops\": %.0f, \"gflops\": %.5g, \"blas_core\": \"%s\", \"runs\": %d}\n",
               spec->name, row.seconds, flops, flops / row.seconds * 1e-9, openblas_get_corename(), row.runs);
    else
        printf("  %-13s %12.3f %10.2f  (unfused: five sgemms; openblas core: %s)\n", "openblas", row.seconds * 1e3,
               flops / row.seconds * 1e-9, openblas_get_corename());
#else
    (void)spec;
    (void)opt;
    (void)flops;
#endif
}

/* Times each backward variant this CPU runs (or the one opt->isa names) on
   the forward's args after one forward call (its O and LSE), with a random
   dO; prints its table (or a JSON line), counting 2.5 times the forward's
   FLOPs (five products of the visible scores' size against two).  1 when
   one failed, else 0. */
static int bench_backward(const attn_kernel *kern, const bench_options *opt, const attn_args *args, double fwd_flops)
{
    const attn_bwd_kernel *bk = attn_entry_bwd_kernel;
    const attn_spec *spec = &kern->spec;
    const double flops = 2.5 * fwd_flops;
    const size_t no = (size_t)(opt->batch * opt->seq_q) * (size_t)spec->heads_q * (size_t)spec->head_dim_v;
    const size_t nq = (size_t)(opt->batch * opt->seq_q) * (size_t)spec->heads_q * (size_t)spec->head_dim;
    const size_t nk = (size_t)(opt->batch * opt->seq_k) * (size_t)spec->heads_kv * (size_t)spec->head_dim;
    const size_t nv = (size_t)(opt->batch * opt->seq_k) * (size_t)spec->heads_kv * (size_t)spec->head_dim_v;
    float *d32 = attn_tool_random_floats(no, 9);
    void *d_o = malloc(no * attn_dtype_size(spec->dtype_o) + 1);
    void *dq = malloc(nq * attn_dtype_size(spec->dtype_grad_q) + 1);
    void *dk = malloc(nk * attn_dtype_size(spec->dtype_grad_kv) + 1);
    void *dv = malloc(nv * attn_dtype_size(spec->dtype_grad_kv) + 1);
    float *dsinks = spec->sinks ? (float *)malloc(sizeof(float) * (size_t)spec->heads_q) : NULL; /* timed too */
    const size_t nrel = (size_t)attn_rel_rows(spec) * (size_t)spec->heads_q;
    float *drel = nrel > 0 ? (float *)malloc(sizeof(float) * nrel) : NULL; /* the table's gradient: timed too */
    attn_bwd_args ba;
    int i, failed = 0, n = 0;

    if (!d32 || !d_o || !dq || !dk || !dv || (spec->sinks && !dsinks) || (nrel > 0 && !drel) ||
        kern->fwd(args) != ATTN_OK) {
        fprintf(stderr, "attngen: bench: backward: out of memory, or the forward failed\n");
        failed = 1;
        goto done;
    }
    attn_f32_to_dtype_array(spec->dtype_o, d32, d_o, no);
    memset(&ba, 0, sizeof ba);
    ba.fwd = *args;
    attn_bwd_args_set_contiguous(&ba, spec);
    ba.fwd = *args;
    ba.fwd.weights = NULL;
    ba.fwd.entropy = NULL;
    memcpy(ba.do_stride, args->o_stride, sizeof ba.do_stride);
    ba.d_o = d_o;
    ba.dq = dq;
    ba.dk = dk;
    ba.dv = dv;
    ba.dsinks = dsinks;
    ba.drel_table = drel;
    current_bwd_args = &ba;
    if (!opt->json)
        printf("  backward (%.4g FLOPs: 2.5 times the forward's)\n", flops);
    for (i = 0; i < bk->n_variants; i++) {
        const attn_bwd_variant *var = &bk->variants[i];
        timing row;
        double gf, peak;
        if (opt->isa && strcmp(opt->isa, attn_isa_name(var->isa))) continue;
        if (!attn_isa_supported(var->isa)) continue;
        current_bwd = var->bwd;
        if (best_time(call_bwd, NULL, &row) != ATTN_OK) {
            fprintf(stderr, "attngen: bench: backward %s failed\n", attn_isa_name(var->isa));
            failed = 1;
            continue;
        }
        gf = flops / row.seconds * 1e-9;
        peak = attn_bench_fma_peak(var->isa, (int)opt->threads);
        if (opt->json)
            printf("{\"config\": \"%s\", \"direction\": \"backward\", \"impl\": \"%s\", \"seconds\": %.6g, "
                   "\"flops\": %.0f, \"gflops\": %.5g, \"peak_gflops\": %.5g, \"runs\": %d}\n",
                   spec->name, attn_isa_name(var->isa), row.seconds, flops, gf, peak, row.runs);
        else
            printf("  %-13s %12.3f %10.2f %6.1f%% of %4.0f\n", attn_isa_name(var->isa), row.seconds * 1e3, gf,
                   peak > 0 ? 100.0 * gf / peak : 0.0, peak);
        n++;
    }
    if (n > 0) bench_backward_blas(spec, opt, flops);
done:
    free(d32);
    free(d_o);
    free(dq);
    free(dk);
    free(dv);
    free(dsinks);
    free(drel);
    return failed;
}

/* ---- appending (sdpa configs, --append N) -------------------------------- */

static const attn_args *current_append_args;
static attn_status call_append(const void *ctx)
{
    (void)ctx;
    return attn_entry_append(current_append_args);
}

/* The copy bandwidth, GB/s moved (0: no memory for its buffers). */
static double copy_bandwidth(char *dst, char *src, int threads)
{
    if (!dst || !src) return 0.0;
    return attn_bench_copy_bandwidth(dst, src, threads);
}

/* Times attn_<name>_append of opt->append new rows a sequence into the
   cache of the bench's case (contiguous, or its shuffled pages), whose
   sequences hold seq_k - append keys already: every run stores the same
   rows at the same positions, as a step of a serving loop stores its
   sequences' new rows.  Reports the cache bytes written and the new rows'
   bytes read per second against the copy bandwidth, measured before and
   after (the better).  The exit code. */
static int bench_append(const attn_kernel *kern, const bench_options *opt)
{
    const attn_spec *spec = &kern->spec;
    const int has_v = !spec->shared_kv;
    const size_t nk = (size_t)(opt->batch * opt->append) * (size_t)spec->heads_kv * (size_t)spec->head_dim;
    const size_t nv = (size_t)(opt->batch * opt->append) * (size_t)spec->heads_kv * (size_t)spec->head_dim_v;
    const double values = (double)nk + (has_v ? (double)nv : 0.0);
    const double written = values * (double)attn_dtype_size(spec->dtype_kv) / (double)attn_dtype_values(spec->dtype_kv);
    const double read = values * (double)attn_dtype_size(spec->dtype_q);
    attn_case c = bench_case_of(opt->batch, opt->seq_q, opt->seq_k, (int)opt->threads);
    bench_case bc;
    attn_args args;
    float *kn32 = NULL, *vn32 = NULL;
    void *kn = NULL, *vn = NULL;
    int32_t *seqlens = NULL;
    char *cdst = NULL, *csrc = NULL;
    double copy_bw = 0.0, again;
    timing row;
    attn_status st;
    long b;
    int code = 0;

    if (attn_entry_append == NULL) { /* (main turned away the other kinds) */
        fprintf(stderr, "attngen: bench: --append: the tool was built without the config's append entry\n");
        return 2;
    }
    if (opt->isa || opt->head_major) {
        fprintf(stderr, "attngen: bench: --append: %s does not apply (the store is one scalar entry point, "
                        "into a bshd or paged cache)\n", opt->isa ? "--isa" : "--kv-layout bhsd");
        return 2;
    }
    kn32 = attn_tool_random_floats(nk, 11);
    vn32 = has_v ? attn_tool_random_floats(nv, 12) : NULL;
    kn = kn32 ? attn_tool_stored(spec->dtype_q, kn32, nk) : NULL;
    vn = vn32 ? attn_tool_stored(spec->dtype_q, vn32, nv) : NULL;
    seqlens = (int32_t *)malloc(sizeof(int32_t) * (size_t)opt->batch);
    if (bench_case_build(&bc, spec, ATTN_DIR_FWD, &c) == ATTN_OK) /* the cache: the case's K and V */
        args = *(const attn_args *)bc.ops->args(bc.state);
    if (!bc.state || !kn || (has_v && !vn) || !seqlens) {
        fprintf(stderr, "attngen: bench: out of memory for this shape\n");
        code = 2;
        goto done;
    }
    for (b = 0; b < opt->batch; b++) seqlens[b] = (int32_t)(opt->seq_k - opt->append);
    args.seqlens_k = seqlens;
    args.k_new = kn;
    args.v_new = vn;
    args.seq_new = opt->append;
    args.kn_stride[0] = opt->append * spec->heads_kv * spec->head_dim;
    args.kn_stride[1] = spec->heads_kv * spec->head_dim;
    args.kn_stride[2] = spec->head_dim;
    args.vn_stride[0] = opt->append * spec->heads_kv * spec->head_dim_v;
    args.vn_stride[1] = spec->heads_kv * spec->head_dim_v;
    args.vn_stride[2] = spec->head_dim_v;
    current_append_args = &args;

    cdst = (char *)malloc(COPY_BW_BYTES);
    csrc = (char *)malloc(COPY_BW_BYTES);
    if (csrc) memset(csrc, 1, COPY_BW_BYTES); /* faulted in; dst by the first pass */
    copy_bw = copy_bandwidth(cdst, csrc, (int)opt->threads);
    st = best_time(call_append, NULL, &row);
    if (st != ATTN_OK) {
        fprintf(stderr, "attngen: bench: %s_append failed: %s\n", spec->name, attn_status_string(st));
        code = 1;
        goto done;
    }
    again = copy_bandwidth(cdst, csrc, (int)opt->threads); /* the better of before and after, as the read BW */
    if (again > copy_bw) copy_bw = again;
    if (opt->json)
        printf("{\"config\": \"%s\", \"direction\": \"append\", \"batch\": %ld, \"seq_k\": %ld, "
               "\"append_rows\": %ld, \"page\": %d, \"heads_kv\": %d, \"head_dim\": %d, \"head_dim_v\": %d, "
               "\"threads\": %ld, \"bytes_written\": %.0f, \"bytes_read\": %.0f, \"seconds\": %.6g, "
               "\"written_gbs\": %.5g, \"moved_gbs\": %.5g, \"copy_gbs\": %.5g, \"of_copy\": %.4g, "
               "\"runs\": %d}\n",
               spec->name, opt->batch, opt->seq_k, opt->append, (int)spec->page, spec->heads_kv, spec->head_dim,
               spec->head_dim_v, opt->threads, written, read, row.seconds, written / row.seconds * 1e-9,
               (written + read) / row.seconds * 1e-9, copy_bw,
               copy_bw > 0 ? (written + read) / row.seconds * 1e-9 / copy_bw : 0.0, row.runs);
    else {
        printf("%s: append %ld rows a sequence, B=%ld, into a cache of Lk=%ld (%s%d), Hkv=%d D=%d Dv=%d, %s -> %s\n",
               spec->name, opt->append, opt->batch, opt->seq_k, spec->page > 0 ? "paged, P=" : "contiguous",
               (int)spec->page, spec->heads_kv, spec->head_dim, spec->head_dim_v, attn_dtype_name(spec->dtype_q),
               attn_dtype_name(spec->dtype_kv));
        printf("  %12s %14s %12s %14s %12s\n", "time (ms)", "written GB/s", "read GB/s", "moved GB/s", "of copy BW");
        printf("  %12.3f %14.2f %12.2f %14.2f ", row.seconds * 1e3, written / row.seconds * 1e-9,
               read / row.seconds * 1e-9, (written + read) / row.seconds * 1e-9);
        if (copy_bw > 0)
            printf("%5.1f%% of %4.1f\n", 100.0 * (written + read) / row.seconds * 1e-9 / copy_bw, copy_bw);
        else
            printf("%12s\n", "-");
        printf("  (%.1f MB written, %.1f MB read a call; moved: both; copy BW: memcpy of %d MiB, bytes read plus\n"
               "   written, the best of five passes on %ld thread%s, before and after the appends)\n",
               written * 1e-6, read * 1e-6, (int)(COPY_BW_BYTES >> 20), opt->threads, opt->threads == 1 ? "" : "s");
    }
done:
    bench_case_free(&bc);
    attn_tool_free_stored(kn, kn32);
    attn_tool_free_stored(vn, vn32);
    free(kn32);
    free(vn32);
    free(seqlens);
    free(cdst);
    free(csrc);
    return code;
}

/* The bench of each family, by attn_family (a new direction, or a family
   with its own args struct, is one more entry). */
static int (*const bench_family[ATTN_FAMILY_COUNT])(const attn_kernel *, const bench_options *) = {
    [ATTN_FAMILY_SDPA] = bench_qkv,
    [ATTN_FAMILY_LINEAR] = bench_qkv,
    [ATTN_FAMILY_ADDITIVE] = bench_classic,
    [ATTN_FAMILY_LUONG] = bench_classic,
};

int main(int argc, char **argv)
{
    const attn_kernel *kern = attn_entry_kernel;
    bench_options opt;

#ifdef ATTN_HAVE_OPENBLAS
    attn_bench_choose_blas_core(argc, argv);
#endif
    if (parse_options(argc, argv, &opt) != 0)
        return 2;
    if ((int)kern->spec.family < 0 || kern->spec.family >= ATTN_FAMILY_COUNT || !bench_family[kern->spec.family]) {
        fprintf(stderr, "attngen: bench: the config '%s' has a kind this bench does not know\n", kern->spec.name);
        return 2;
    }
    if (opt.append > 0 && kern->spec.family != ATTN_FAMILY_SDPA) {
        fprintf(stderr, "attngen: bench: --append: the config '%s' has kind = \"%s\"; appending is for sdpa "
                        "configs\n", kern->spec.name, attn_family_name(kern->spec.family));
        return 2;
    }
    return bench_family[kern->spec.family](kern, &opt);
}
