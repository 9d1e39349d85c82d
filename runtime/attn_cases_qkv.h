/*
 * attn_cases_qkv.h - one verification case of a kernel that takes
 * attn_args (sdpa and linear attention): its buffers and the reference's
 * results, shared by attn_cases_sdpa.c and attn_cases_linear.c (internal,
 * like attn_cases.h).
 */
#ifndef ATTN_CASES_QKV_H
#define ATTN_CASES_QKV_H

#include "attn_cases.h"

/* The reference's results for a case: O, LSE, the weights P and the
   state written back (with the sums of |terms| that bound it). */
typedef struct {
    float *o, *lse, *p, *s, *z, *e;
    double *s_abs, *z_abs;
} attn_qkv_ref;

typedef struct {
    const attn_spec *spec;
    attn_case c;
    attn_layout4 lq, lk, lv, lo, lm, lp;
    /* the layouts of kw and vw: lk and lv, or for K/V in a block type (whose
       strides count blocks) their strides times 32 along D values */
    attn_layout4 lkw, lvw;
    /* Q, K, V and O in their storage types, LSE (f32), mask, seqlens_k, and
       the weights P (f32; specs with weights) */
    attn_guard_buf q, k, v, o, lse, mask, seqlens, p;
    attn_guard_buf sinks; /* specs with sinks: a logit per query head (f32) */
    attn_guard_buf rel; /* the relative position table (specs with rel_bias) */
    attn_guard_buf e; /* each row's entropy E (f32, like LSE; specs with entropy) */
    attn_guard_buf rope; /* rope table = true: cos then sin, [rows][rope_dim / 2] each (f32) */
    /* the stored Q, K and V widened to f32, with the same layouts (the
       guard buffers themselves for f32 storage): the reference's inputs */
    float *qw, *kw, *vw;
    unsigned char *o_described; /* per O span element: 1 = an element of O */
    unsigned char *p_described; /* per P span element: 1 = an element of P */
    size_t lse_count;
    /* linear specs with state: the kernel's S and z (in/out, against guard
       pages) and the state before the call (s0, z0), which the reference
       starts from too */
    attn_guard_buf state_s, state_z;
    float *s0, *z0;
    size_t s_count, z_count;
    attn_args args;
    attn_qkv_ref ref;
    /* paged specs (attn_cases_paged.c): the K and V pools, stored (against
       guard pages) and widened, their layouts [N][P][Hkv][dim] with the
       strides {page, slot, head, 1}, the block table (its row stride), the
       pools' pages, and whether a bad table changed an output or ran */
    attn_guard_buf kpool, vpool, table;
    float *kpoolw, *vpoolw;
    attn_layout4 lkp, lvp, lkpw, lvpw;
    int64_t pages, table_stride;
    int bad_table_failed;
    attn_guard_buf qk_norm; /* specs with qk_norm: q_norm_w then k_norm_w, [head_dim] each (f32) */
} attn_qkv_case;

/* the attn_case_ops of both families (attn_cases_sdpa.c) */
attn_status attn_qkv_build(void *state, const attn_spec *spec, const attn_case *c);
attn_status attn_qkv_reference(void *state);
attn_status attn_qkv_run(void *state, const attn_case_kernel *k, int threads);
void attn_qkv_compare(const void *state, const char *shape, attn_verify_result *res);
void attn_qkv_reset(void *state);
int attn_qkv_outputs(const void *state, attn_case_output *out);
void attn_qkv_free(void *state);
int attn_qkv_default_cases(const attn_spec *spec, attn_case *out, int max, int quick);
void attn_qkv_ref_free(attn_qkv_ref *ref);
/* the bench's questions (attn_case_ops.visible, args) */
int64_t attn_qkv_visible(const void *state);
const void *attn_qkv_args(const void *state);
void attn_qkv_widened(const void *state, void *args);

/* linear attention's state (attn_cases_linear.c); each does nothing for a
   case without one (s_count == 0).  The int functions: 0, or -1 when out of
   memory; attn_linear_state_outputs returns the outputs it added. */
int attn_linear_state_build(attn_qkv_case *cb, attn_rng *r);
void attn_linear_state_reset(attn_qkv_case *cb);
void attn_linear_state_args(attn_qkv_case *cb);
int attn_linear_state_outputs(const attn_qkv_case *cb, attn_case_output *out);
void attn_linear_state_free(attn_qkv_case *cb);
int attn_linear_state_ref_alloc(attn_qkv_case *cb);
attn_status attn_linear_state_ref_bound(attn_qkv_case *cb, const attn_args *ref_args);
void attn_linear_compare_state(const attn_qkv_case *cb, attn_verify_result *res);
/* a linear kernel writes no LSE: the buffer must still hold the sentinel */
void attn_linear_compare_lse_untouched(const attn_qkv_case *cb, const char *shape, attn_verify_result *res);

/* paged sdpa specs (attn_cases_paged.c): whether a spec is one; the pools
   and table built from a built case's contiguous K and V (0, or -1 when out
   of memory); the reference's K and V (the widened pools); the bad tables
   tried before a run, and their result in a comparison */
int attn_paged_spec(const attn_spec *spec);
int attn_paged_build(attn_qkv_case *cb, attn_rng *r);
void attn_paged_ref_args(const attn_qkv_case *cb, attn_args *ref_args);
void attn_paged_bad_tables(attn_qkv_case *cb, const attn_kernel *kernel, const attn_variant *variant);
void attn_paged_compare(const attn_qkv_case *cb, const char *shape, attn_verify_result *res);
void attn_paged_free(attn_qkv_case *cb);

/* The inputs and outputs of a call that takes attn_args, by option
   (attn_cases_sdpa.c; linear attention's ops list them too). */
extern const attn_case_tensor attn_qkv_tensors[];

#endif /* ATTN_CASES_QKV_H */
