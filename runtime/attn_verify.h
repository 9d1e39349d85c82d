/*
 * attn_verify.h - verification of a generated kernel against the reference.
 *
 * Not vendored: shared by `attngen check` and the Criterion tests.  Every
 * tensor is placed against guard pages, strided layouts have NaN-filled
 * gaps, and O is compared elementwise with the reference (docs/testing.md).
 * Q, K, V and O are allocated in the storage types of the kernel's spec:
 * the random f32 inputs are narrowed to them (round to nearest even), the
 * reference runs on the stored values widened back (exactly), and O,
 * widened, must be within ATTN_REF_TOL (attn_reference.h) for O's storage
 * type.  With a spec that has weights, P is written too (strided, with
 * gaps and a guard page like O) and must be within ATTN_REF_TOL_P.
 * Linear specs: no LSE (the LSE buffer passed must stay untouched); with
 * spec->state, the kernel and the reference start from the same random
 * state (that of a few earlier N(0,1) keys: S of any sign, z positive), and
 * the states they write back must agree within ATTN_REF_TOL_STATE.
 * Additive and luong specs (attn_classic_args, run through classic_fwd):
 * S, H, U (cases with with_u; then w_h is NULL), C, A and the mask against
 * guard pages, with the same strided layouts, NaN gaps and ragged
 * seqlens_k; the parameters uniform in +-1/sqrt(in_features) (PyTorch's
 * nn.Linear initialization); C and A must be within the bounds of
 * ATTN_REF_TOL_SCORE (attn_reference.h), A exactly 0 at hidden keys and C
 * exactly 0 in rows that see no key.  Needs POSIX (mmap).
 *
 * The harness is attn_verify.c; each family's cases (inputs, reference,
 * comparison, shape matrix) are in attn_cases_<family>.c, behind the table
 * of operations of attn_cases.h.
 */
#ifndef ATTN_VERIFY_H
#define ATTN_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "attn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One run of a kernel: a shape and how its inputs are laid out. */
typedef struct {
    int64_t batch, seq_q, seq_k;
    int strided;   /* non-contiguous Q/K/V/O/mask with NaN-filled gaps */
    int ragged;    /* with spec->padding: random seqlens_k, NaN rows past them */
    int threads;   /* args.threads */
    uint64_t seed; /* inputs are a pure function of (spec, case) */
    float dropout_p;         /* specs with dropout: args.dropout_p, the same for the reference */
    uint64_t dropout_seed;   /* args.dropout_seed */
    uint32_t dropout_offset; /* args.dropout_offset */
    /* additive and luong specs (attn_classic_args); 0 in the other families */
    int with_u;              /* additive: pass U = H W_h^T (stored in dtype_kv) and w_h = NULL */
    int no_weights;          /* pass no A (args.weights = NULL); 0: A is written and compared */
    /* `attngen bench`'s case (attn_bench_main.c): every key visible (a mask
       of all true, one [Lq][Lk] matrix for every batch entry and head), and
       a run is the kernel's call alone (no bad block tables tried before
       it, no workspace of the caller's), no entropy asked for */
    int bench;
    int kv_head_major; /* K and V [B][Hkv][Lk][D], contiguous (a kv head's keys adjacent; not paged) */
} attn_case;

typedef struct {
    double max_err_o, max_err_lse; /* largest |x - ref| over finite pairs */
    double max_err_p;              /* the same for the weights P (specs with weights) */
    double max_err_e;              /* the same for the entropy E (specs with entropy) */
    double max_err_state;          /* the same for the state S and z (linear specs with state) */
    double worst_ratio;            /* max |x - ref| / ATTN_REF_TOL(type of x, ref) */
    int failures;                  /* elements outside tolerance (plus gap damage) */
    char first_failure[256];       /* "" when failures == 0 */
    double max_err_dq, max_err_dk, max_err_dv; /* the backward pass's gradients (attn_verify_bwd_case) */
    double max_err_dsinks;         /* the same for dsinks (specs with sinks) */
    double max_err_drel;           /* the same for drel_table (specs with rel_bias) */
    double max_err_dq_norm_w;      /* the same for dq_norm_w (specs with qk_norm) */
} attn_verify_result;

/*
 * Builds the case's inputs, runs variant->fwd (kernel->fwd when variant is
 * NULL; classic_fwd for additive and luong specs) with args.threads =
 * c->threads, runs attn_reference (attn_reference_classic) and compares.
 * Returns ATTN_OK when both ran (res->failures tells whether they agree),
 * else the failing status (the kernel's, the reference's, or
 * ATTN_ERR_NOMEM), with a message in res->first_failure.
 */
attn_status attn_verify_case(const attn_kernel *kernel, const attn_variant *variant,
                             const attn_case *c, attn_verify_result *res);

/*
 * attn_verify_case for n variants of one kernel (variants[i] NULL: the
 * kernel's fwd) on the same case: the inputs are built and the reference
 * run once, then each variant runs on those inputs, its outputs (and a
 * linear spec's state) reset before it, and is compared into res[i], its
 * status into status[i].  Returns ATTN_OK when every variant and the
 * reference ran, else the first variant's failing status.
 */
attn_status attn_verify_case_variants(const attn_kernel *kernel, const attn_variant *const *variants, int n,
                                      const attn_case *c, attn_verify_result *res, attn_status *status);

/*
 * Runs the case with threads_a and then threads_b (c->threads is ignored)
 * and compares the bytes of O (C for additive and luong specs) as stored
 * (gaps included), of LSE, of the
 * weights and of the state written back (linear specs with state; both
 * runs start from the same state).
 * Returns 1 when identical, 0 when they differ, -1 when a run failed.
 */
int attn_verify_bitwise_threads(const attn_kernel *kernel, const attn_variant *variant,
                                const attn_case *c, int threads_a, int threads_b);

/*
 * The backward pass of a spec with backward (attn_cases_sdpa_bwd.c): builds
 * the case's forward inputs, O and LSE from the forward's reference (stored
 * as the kernel stores them), a random dO in O's layout, runs variant->bwd
 * (kernel->bwd when variant is NULL) with c->threads, and compares dQ, dK
 * and dV with attn_reference_backward: each gradient's error at most twice
 * the plain float32 implementation's plus 1e-5 of its largest magnitude
 * (plus ATTN_REF_TOL_REL of a bf16 or f16 gradient's type), into
 * res->max_err_dq, _dk, _dv (with sinks, dsinks too: _dsinks; with rel_bias,
 * the table's gradient drel_table: _drel; with qk_norm, dq_norm_w:
 * _dq_norm_w).  The same harness as attn_verify_case (the sdpa family's ops
 * for the backward direction), statuses included: where the forward's
 * reference refuses the inputs (ATTN_ERR_ROPE), the kernel must refuse them
 * too and write nothing.
 */
attn_status attn_verify_bwd_case(const attn_bwd_kernel *kernel, const attn_bwd_variant *variant,
                                 const attn_case *c, attn_verify_result *res);

/* attn_verify_bitwise_threads for the backward pass: the bytes of dQ, dK and dV (and dsinks, drel_table,
   dq_norm_w). */
int attn_verify_bwd_bitwise_threads(const attn_bwd_kernel *kernel, const attn_bwd_variant *variant,
                                    const attn_case *c, int threads_a, int threads_b);

/*
 * Writes up to max cases covering the test matrix of docs/testing.md for
 * this spec (seq lengths 1, 2, 17, 113, tile edges, Lq <, =, > Lk, batch 1
 * and 2, strided, ragged with padding, 1 and 2 threads; quick == 0 adds
 * 1023 and 1025).  With spec->dropout every case has dropout_p = 0.2 and
 * its own seed and offset.  Linear specs get the same matrix (masks do not
 * apply; tile_q is the chunk of the causal algorithm).  Additive and luong
 * specs get their own grid (Lq 1, 2, 5, 17 by Lk 1, 2, 17, 50, 113, batches
 * of 1 to 3, with and without U and A, Lk = 0 and Lq = 0; quick == 0 adds
 * Lk 1025 and 4099 and Lq 64 and 300).
 * Returns the number written.
 */
int attn_verify_default_cases(const attn_spec *spec, attn_case *out, int max, int quick);

/*
 * The storage conversions of a whole array, for any type: attn_verify_narrow
 * stores n f32 values in an array of type dtype (round to nearest even, as
 * attn_f32_to_bf16 / attn_f32_to_f16; f32: a copy), attn_verify_widen reads
 * n stored values back as f32 (exact).  src and dst may be the same array
 * for f32 (nothing to do) but must not otherwise overlap.
 */
void attn_verify_narrow(attn_dtype dtype, const float *src, void *dst, size_t n);
void attn_verify_widen(attn_dtype dtype, const void *src, float *dst, size_t n);

/*
 * Stores an input tensor as the kernel will read it: the n f32 values in
 * wide are narrowed into stored (of type dtype), and wide is replaced by the
 * stored values widened, which is what the reference must compute on.
 */
void attn_verify_store(attn_dtype dtype, float *wide, void *stored, size_t n);

/*
 * The errors of res (max_err_*) named as the spec's family names its
 * outputs, as `attngen check` prints them: "O 1.2e-06 LSE 3.0e-07" (sdpa;
 * then " P ..." with weights), "O ..." (linear; then " state ..." with
 * state), "C ... A ..." (additive and luong).
 */
void attn_verify_errors_string(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t buflen);

/* "B=2 Lq=17 Lk=113 strided ragged threads=2" */
void attn_verify_case_string(const attn_case *c, char *buf, size_t buflen);

/*
 * A buffer whose last byte sits right before a PROT_NONE page (and whose
 * first page is preceded by one), so an over-read faults.  bytes may be 0:
 * ptr then points at the trailing guard page.
 */
typedef struct {
    void *ptr;      /* the usable bytes */
    size_t bytes;
    void *map;      /* the whole mapping */
    size_t map_len;
} attn_guard_buf;

int attn_guard_alloc(attn_guard_buf *g, size_t bytes); /* 0 or -1 */
void attn_guard_free(attn_guard_buf *g);               /* safe on a zeroed one */

#ifdef __cplusplus
}
#endif

#endif /* ATTN_VERIFY_H */
