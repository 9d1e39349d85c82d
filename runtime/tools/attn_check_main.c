/*
 * attn_check_main.c - the program behind `attngen check`.
 *
 * Compiled together with one generated kernel and runtime/tools/attn_entry.c,
 * which defines attn_entry_kernel.  For every variant compiled in (or the one
 * --isa names) that this CPU can run, verifies the kernel against the
 * reference over attn_verify_default_cases and checks that 1 and 2
 * threads give bitwise identical results; each case's inputs and reference
 * are built once for every variant (attn_verify_case_variants).  Tensors are in the kernel's
 * storage types; the reference runs on the stored inputs and O is held to
 * the tolerance of its storage type (attn_verify.h).  Additive and luong
 * kernels (attn_classic_args) go through the same calls: attn_verify_case
 * and attn_verify_bitwise_threads dispatch on the spec's family, and the
 * report names their outputs C and A.
 * Exit codes: 0 all pass, 1 a failure (or a crash), 2 usage error.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sigaction, isatty, write */
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_reference.h"
#include "attn_runtime.h"
#include "attn_verify.h"

extern const attn_kernel *const attn_entry_kernel;
extern const attn_bwd_kernel *const attn_entry_bwd_kernel; /* NULL: no backward pass */

#define MAX_CASES 256
#define MAX_VARIANTS ATTN_ISA_COUNT /* a kernel has one variant an ISA at most */

/* ", scalar, avx2, avx512, neon": every ISA name (skip the first 2 chars) */
#define ISA_NAME_(id, name) ", " #name
static const char isa_names[] = ATTN_ISA_LIST(ISA_NAME_);
#undef ISA_NAME_

static const char usage[] = "usage: attn_check [--quick] [--isa NAME] [--seed N]\n";

/* What to say if a case crashes (a guard page hit); written by the handler. */
static char crash_msg[512];
static size_t crash_len;
/* Whether a progress line is on the terminal (stderr is a tty). */
static int show_progress;

static void on_crash(int sig)
{
    (void)sig;
    if (crash_len > 0 && write(STDERR_FILENO, crash_msg, crash_len) < 0)
        crash_len = 0;
    _exit(1);
}

static void install_crash_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* isa: the variant, or "avx512, avx2 or scalar" where a case runs several
   (then --isa tells them apart) */
static void set_crash_msg(const char *isa, const char *what)
{
    const int n = snprintf(crash_msg, sizeof crash_msg,
                           "%sattngen: check: %s crashed on %s (a read or write outside a "
                           "tensor?%s)\n",
                           show_progress ? "\n" : "", isa, what,
                           strchr(isa, ' ') != NULL ? " --isa NAME checks one variant alone" : "");
    crash_len = n < 0 ? 0 : (size_t)n < sizeof crash_msg ? (size_t)n : sizeof crash_msg - 1;
}

static void usage_error(const char *what, const char *msg)
{
    fprintf(stderr, "attngen: %s: %s\n%s", what, msg, usage);
    exit(2);
}

/* Comma-separated names of the compiled variants. */
static void compiled_list(const attn_kernel *kernel, char *buf, size_t len)
{
    int i;
    buf[0] = '\0';
    for (i = 0; i < kernel->n_variants; i++) {
        if (i > 0)
            strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, attn_isa_name(kernel->variants[i].isa), len - strlen(buf) - 1);
    }
}

/* What the check found for one variant. */
typedef struct {
    attn_verify_result worst; /* the largest of each error and ratio over the cases */
    int failures;             /* cases + thread checks */
    char first[300];
} variant_report;

/* A failure of rep's variant, the first one's message kept. */
static void report_failure(variant_report *rep, const char *msg)
{
    if (rep->failures == 0)
        snprintf(rep->first, sizeof rep->first, "%s", msg);
    rep->failures++;
}

/* Verifies the nv variants vs on every case, each case's inputs and
   reference built once for all of them (attn_verify_case_variants), then
   checks each variant's 1 and 2 threads; fills rep[0..nv). */
static void check_variants(const attn_kernel *kernel, const attn_variant *const *vs, int nv,
                           const attn_case *cases, int n_cases, variant_report *rep)
{
    /* larger shapes for the thread check: a prefill and a long decode */
    attn_case big[2];
    attn_verify_result res[MAX_VARIANTS];
    attn_status st[MAX_VARIANTS];
    char what[128], names[64] = "", msg[300];
    int i, v;

    memset(rep, 0, (size_t)nv * sizeof *rep);
    for (v = 0; v < nv; v++) { /* for the crash message: the order they run in */
        if (v > 0)
            strncat(names, v + 1 < nv ? ", " : " or ", sizeof names - strlen(names) - 1);
        strncat(names, attn_isa_name(vs[v]->isa), sizeof names - strlen(names) - 1);
    }
    for (i = 0; i < n_cases; i++) {
        if (show_progress)
            fprintf(stderr, "\rcase %d/%d ", i + 1, n_cases);
        attn_verify_case_string(&cases[i], what, sizeof what);
        set_crash_msg(names, what);
        attn_verify_case_variants(kernel, vs, nv, &cases[i], res, st);
        for (v = 0; v < nv; v++) {
            variant_report *r = &rep[v];
            if (res[v].max_err_o > r->worst.max_err_o)
                r->worst.max_err_o = res[v].max_err_o;
            if (res[v].max_err_lse > r->worst.max_err_lse)
                r->worst.max_err_lse = res[v].max_err_lse;
            if (res[v].max_err_p > r->worst.max_err_p)
                r->worst.max_err_p = res[v].max_err_p;
            if (res[v].max_err_e > r->worst.max_err_e)
                r->worst.max_err_e = res[v].max_err_e;
            if (res[v].max_err_state > r->worst.max_err_state)
                r->worst.max_err_state = res[v].max_err_state;
            if (res[v].worst_ratio > r->worst.worst_ratio)
                r->worst.worst_ratio = res[v].worst_ratio;
            if (st[v] != ATTN_OK || res[v].failures > 0)
                report_failure(r, res[v].first_failure);
        }
    }

    memset(big, 0, sizeof big);
    big[0].batch = 2;
    big[0].seq_q = 129;
    big[0].seq_k = 257;
    big[0].strided = 1;
    big[0].ragged = kernel->spec.padding;
    big[0].seed = 0xb16b00b5u;
    big[1].batch = 1;
    big[1].seq_q = 1;
    big[1].seq_k = 2049;
    big[1].seed = 0xdec0de;
    for (v = 0; v < nv; v++) {
        const char *isa = attn_isa_name(vs[v]->isa);
        for (i = 0; i < 2; i++) {
            int same;
            if (show_progress)
                fprintf(stderr, "\r%s: threads 1 vs 2 (%d/2) ", isa, i + 1);
            attn_verify_case_string(&big[i], what, sizeof what);
            set_crash_msg(isa, what);
            same = attn_verify_bitwise_threads(kernel, vs[v], &big[i], 1, 2);
            if (same != 1) {
                snprintf(msg, sizeof msg, "threads 1 vs 2 %s (shape %s)",
                         same == 0 ? "are not bitwise identical" : "could not run", what);
                report_failure(&rep[v], msg);
            }
        }
    }
    crash_len = 0;
    if (show_progress)
        fprintf(stderr, "\r%*s\r", 40, "");
}

/* One variant's line (and its first failure); the errors named by the
   family's outputs (attn_verify_errors_string). */
static void print_report(const attn_kernel *kernel, const char *isa, const variant_report *rep, int n_cases)
{
    char errors[96];
    attn_verify_errors_string(&kernel->spec, &rep->worst, errors, sizeof errors);
    printf("%s: %d cases, worst |err| %s (%.2g of tolerance), %d failure%s\n", isa, n_cases, errors,
           rep->worst.worst_ratio, rep->failures, rep->failures == 1 ? "" : "s");
    if (rep->failures > 0)
        printf("  first failure: %s\n", rep->first);
}

/* The backward pass of the variant of isa (kernels with backward = true):
   every case against the reference, then 1 and 2 threads on a larger one;
   prints its line and returns its failures. */
static int check_backward(const attn_bwd_kernel *bk, attn_isa isa, const attn_case *cases, int n_cases)
{
    const attn_bwd_variant *v = NULL;
    variant_report rep;
    attn_case big;
    char what[128];
    int i, same;

    for (i = 0; i < bk->n_variants; i++)
        if (bk->variants[i].isa == isa)
            v = &bk->variants[i];
    if (v == NULL)
        return 0;
    memset(&rep, 0, sizeof rep);
    for (i = 0; i < n_cases; i++) {
        attn_verify_result res;
        attn_status st;
        if (show_progress)
            fprintf(stderr, "\rbackward case %d/%d ", i + 1, n_cases);
        attn_verify_case_string(&cases[i], what, sizeof what);
        set_crash_msg(attn_isa_name(isa), what);
        st = attn_verify_bwd_case(bk, v, &cases[i], &res);
        if (res.max_err_dq > rep.worst.max_err_dq)
            rep.worst.max_err_dq = res.max_err_dq;
        if (res.max_err_dk > rep.worst.max_err_dk)
            rep.worst.max_err_dk = res.max_err_dk;
        if (res.max_err_dv > rep.worst.max_err_dv)
            rep.worst.max_err_dv = res.max_err_dv;
        if (res.max_err_dsinks > rep.worst.max_err_dsinks)
            rep.worst.max_err_dsinks = res.max_err_dsinks;
        if (res.max_err_drel > rep.worst.max_err_drel)
            rep.worst.max_err_drel = res.max_err_drel;
        if (res.max_err_dq_norm_w > rep.worst.max_err_dq_norm_w)
            rep.worst.max_err_dq_norm_w = res.max_err_dq_norm_w;
        if (res.worst_ratio > rep.worst.worst_ratio)
            rep.worst.worst_ratio = res.worst_ratio;
        if (st != ATTN_OK || res.failures > 0)
            report_failure(&rep, res.first_failure);
    }
    memset(&big, 0, sizeof big);
    big.batch = 2;
    big.seq_q = 129;
    big.seq_k = 257;
    big.strided = 1;
    big.ragged = bk->fwd->spec.padding;
    big.seed = 0xb16b00b5u;
    if (bk->fwd->spec.dropout) {
        big.dropout_p = 0.2f;
        big.dropout_seed = 0x0123456789abcdefu;
        big.dropout_offset = 5;
    }
    attn_verify_case_string(&big, what, sizeof what);
    set_crash_msg(attn_isa_name(isa), what);
    same = attn_verify_bwd_bitwise_threads(bk, v, &big, 1, 2);
    if (same != 1) {
        char msg[300];
        snprintf(msg, sizeof msg, "backward threads 1 vs 2 %s (shape %s)",
                 same == 0 ? "are not bitwise identical" : "could not run", what);
        report_failure(&rep, msg);
    }
    crash_len = 0;
    if (show_progress)
        fprintf(stderr, "\r%*s\r", 40, "");
    printf("%s backward: %d cases, worst |err| dQ %.1e dK %.1e dV %.1e", attn_isa_name(isa), n_cases,
           rep.worst.max_err_dq, rep.worst.max_err_dk, rep.worst.max_err_dv);
    if (bk->fwd->spec.sinks)
        printf(" dsinks %.1e", rep.worst.max_err_dsinks);
    if (attn_rel_rows(&bk->fwd->spec) > 0)
        printf(" drel_table %.1e", rep.worst.max_err_drel);
    if (bk->fwd->spec.qk_norm)
        printf(" dq_norm_w %.1e", rep.worst.max_err_dq_norm_w);
    printf(" (%.2g of tolerance), %d failure%s\n", rep.worst.worst_ratio, rep.failures, rep.failures == 1 ? "" : "s");
    if (rep.failures > 0)
        printf("  first failure: %s\n", rep.first);
    return rep.failures;
}

/* The command line. */
typedef struct {
    const char *isa_name; /* NULL: every variant */
    unsigned long long seed;
    int quick;
} check_options;

/* Whether --isa (if given) names v's ISA. */
static int selected(const check_options *opt, const attn_variant *v)
{
    return opt->isa_name == NULL || strcmp(attn_isa_name(v->isa), opt->isa_name) == 0;
}

/* Parses argv into opt; --help prints the usage and exits 0, a usage
   error exits 2. */
static void parse_options(int argc, char **argv, check_options *opt)
{
    int i;
    memset(opt, 0, sizeof *opt);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            opt->quick = 1;
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            opt->isa_name = argv[++i];
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            opt->seed = strtoull(argv[++i], &end, 10);
            if (errno != 0 || end == argv[i] || *end != '\0' || argv[i][0] == '-')
                usage_error("--seed", "expected a non-negative integer");
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(argv[i], "--isa") == 0 || strcmp(argv[i], "--seed") == 0) {
            usage_error(argv[i], "needs a value");
        } else {
            usage_error(argv[i], "unknown option (expected --quick, --isa, --seed)");
        }
    }
}

/* Whether the kernel can be checked as asked: the ISA --isa names known,
   compiled in and runnable.  0, or 2 after a message.  list: the compiled
   variants, for messages. */
static int check_request(const attn_kernel *kernel, const char *isa_name, const char *list)
{
    int isa, found = 0, i;

    if (isa_name == NULL)
        return 0;
    isa = attn_isa_from_name(isa_name);
    for (i = 0; i < kernel->n_variants; i++)
        found |= (int)kernel->variants[i].isa == isa;
    if (isa < 0) {
        fprintf(stderr, "attngen: --isa: unknown ISA '%s' (expected %s)\n", isa_name,
                isa_names + 2);
        return 2;
    }
    if (!found) {
        fprintf(stderr, "attngen: --isa: '%s' is not compiled into this kernel (compiled: "
                        "%s)\n", isa_name, list);
        return 2;
    }
    if (!attn_isa_supported((attn_isa)isa)) {
        fprintf(stderr, "attngen: --isa: this CPU cannot run '%s' (it is compiled in)\n",
                isa_name);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const attn_kernel *kernel = attn_entry_kernel;
    attn_case cases[MAX_CASES];
    const attn_variant *vs[MAX_VARIANTS];
    variant_report rep[MAX_VARIANTS];
    check_options opt;
    int n_cases, i, j, failures = 0, checked = 0;
    char list[128];

    parse_options(argc, argv, &opt);
    compiled_list(kernel, list, sizeof list);
    if (check_request(kernel, opt.isa_name, list) != 0)
        return 2;

    n_cases = attn_verify_default_cases(&kernel->spec, cases, MAX_CASES, opt.quick);
    for (i = 0; i < n_cases; i++)
        cases[i].seed += opt.seed * 0x9e3779b97f4a7c15ull;
    show_progress = isatty(STDERR_FILENO);
    install_crash_handler();

    /* the variants to check, in the kernel's order */
    for (i = 0; i < kernel->n_variants && checked < MAX_VARIANTS; i++)
        if (selected(&opt, &kernel->variants[i]) && attn_isa_supported(kernel->variants[i].isa))
            vs[checked++] = &kernel->variants[i];
    if (checked > 0)
        check_variants(kernel, vs, checked, cases, n_cases, rep);
    for (i = 0, j = 0; i < kernel->n_variants; i++) {
        const attn_variant *v = &kernel->variants[i];
        if (!selected(&opt, v))
            continue;
        if (j < checked && vs[j] == v) {
            print_report(kernel, attn_isa_name(v->isa), &rep[j], n_cases);
            failures += rep[j++].failures;
            if (attn_entry_bwd_kernel != NULL)
                failures += check_backward(attn_entry_bwd_kernel, v->isa, cases, n_cases);
        } else {
            printf("%s: not runnable on this CPU (compiled only)\n", attn_isa_name(v->isa));
        }
    }
    fflush(stdout);
    if (checked == 0) {
        fprintf(stderr, "attngen: check: no variant of '%s' can run on this CPU (compiled: %s)\n",
                kernel->spec.name, list);
        return 1;
    }
    return failures > 0 ? 1 : 0;
}
