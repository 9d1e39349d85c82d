/*
 * attn_runtime.h - the small runtime every attngen kernel is compiled against.
 *
 * One args struct, one status enum, the description of a generated kernel
 * (attn_spec / attn_kernel), CPU feature queries and the allocation hooks.
 * Plain C99; nothing here depends on the generator.
 *
 * Tensor layout (BSHD, f32, the last dim contiguous):
 *   Q   [B][Lq][Hq][D]     element strides q_stride  = {b, s, h}
 *   K   [B][Lk][Hkv][D]    element strides k_stride  = {b, s, h}
 *   V   [B][Lk][Hkv][Dv]   element strides v_stride  = {b, s, h}
 *   O   [B][Lq][Hq][Dv]    element strides o_stride  = {b, s, h}
 *   LSE [B][Hq][Lq]        contiguous, optional (NULL: not written)
 *   seqlens_k int32[B]     valid key length per batch (configs with padding)
 *   mask [B][Hq][Lq][Lk]   uint8 keep-mask (nonzero = keep) or f32 additive
 *                          bias, element strides mask_stride = {b, h, i, j};
 *                          a stride of 0 broadcasts that dim.
 *
 * Memory rules: a kernel reads Q, K, V, the mask and seqlens_k only inside
 * the elements the shapes and strides above describe, never past them (no
 * vector over-read of a row), writes O and LSE only there, and reads no K/V
 * row at or past seqlens_k[b].  Keys that are masked inside a partially
 * visible tile may still be read and multiplied by a zero weight.
 */
#ifndef ATTN_RUNTIME_H
#define ATTN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_RUNTIME_VERSION 1

typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_ERR_NULL_ARG,    /* a required pointer is NULL */
    ATTN_ERR_SHAPE,       /* a negative batch or sequence length */
    ATTN_ERR_STRIDE,      /* a negative stride */
    ATTN_ERR_SEQLENS,     /* seqlens_k[b] outside 0..seq_k */
    ATTN_ERR_THREADS,     /* threads < 0 */
    ATTN_ERR_ISA,         /* ATTNGEN_ISA names no variant this CPU can run */
    ATTN_ERR_NOMEM,       /* the allocation hook returned NULL */
    ATTN_ERR_TOO_LARGE    /* a size overflows the kernel's index type */
} attn_status;

/* A short English sentence for a status; never NULL. */
const char *attn_status_string(attn_status status);

typedef enum attn_mask_kind {
    ATTN_MASK_NONE = 0,
    ATTN_MASK_BOOL, /* uint8 keep-mask: 0 hides the key */
    ATTN_MASK_BIAS  /* f32 added to the score */
} attn_mask_kind;

typedef struct attn_args {
    int64_t batch, seq_q, seq_k;
    const float *q, *k, *v;
    float *o;
    float *lse;                 /* optional */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    const int32_t *seqlens_k;   /* required when the config has padding */
    const void *mask;           /* required when the config has a mask */
    int64_t mask_stride[4];
    int threads;                /* 0: OpenMP's default */
} attn_args;

/* Fill the strides of a contiguous BSHD layout for a kernel's spec. */
struct attn_spec;
void attn_args_set_contiguous(attn_args *args, const struct attn_spec *spec);

/* ---- what a generated kernel is ---------------------------------------- */

typedef enum attn_isa {
    ATTN_ISA_SCALAR = 0,
    ATTN_ISA_AVX2,
    ATTN_ISA_AVX512,
    ATTN_ISA_NEON,
    ATTN_ISA_COUNT
} attn_isa;

/* "scalar", "avx2", "avx512", "neon" */
const char *attn_isa_name(attn_isa isa);
/* -1 when the name is unknown */
int attn_isa_from_name(const char *name);
/* Whether this CPU (and OS) can run the variant. */
int attn_isa_supported(attn_isa isa);

/* The config a kernel was generated from, as data (after defaults). */
typedef struct attn_spec {
    const char *name;
    int heads_q, heads_kv;
    int head_dim, head_dim_v;
    int causal;
    int window_left, window_right; /* -1: unbounded (causal folded in) */
    int global_tokens;
    int padding;
    attn_mask_kind mask;
    float scale;
    float softcap;                 /* 0: none */
    int alibi;
    int tile_q, tile_kv;
} attn_spec;

typedef attn_status (*attn_fwd_fn)(const attn_args *args);

typedef struct attn_variant {
    attn_isa isa;
    attn_fwd_fn fwd;               /* runs this ISA, no dispatch */
} attn_variant;

typedef struct attn_kernel {
    attn_spec spec;
    attn_fwd_fn fwd;               /* validates, dispatches once, runs */
    int n_variants;
    const attn_variant *variants;  /* best first; only those compiled in */
} attn_kernel;

/* ---- services the generated code uses --------------------------------- */

/*
 * Checks args against spec: the statuses above except ATTN_ERR_ISA and
 * ATTN_ERR_NOMEM.  Generated entry points call it first.
 */
attn_status attn_check_args(const attn_spec *spec, const attn_args *args);

/*
 * Picks the variant to run: the one ATTNGEN_ISA names when set (NULL if it
 * names an ISA that is unknown, not compiled in or not supported), else the
 * first the CPU supports.  The result depends only on the environment and
 * the CPU, so callers may cache it.
 */
const attn_variant *attn_pick_variant(const attn_variant *variants, int n);

/*
 * Allocation hooks.  The defaults are aligned_alloc-style wrappers; a host
 * may install its own (before the first kernel call).  Returned memory must
 * be aligned to ATTN_ALIGN bytes.
 */
#define ATTN_ALIGN 64
typedef void *(*attn_alloc_fn)(size_t bytes, void *user);
typedef void (*attn_free_fn)(void *ptr, void *user);
void attn_set_allocator(attn_alloc_fn alloc, attn_free_fn release, void *user);
void *attn_alloc(size_t bytes);
void attn_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_H */
