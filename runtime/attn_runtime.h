/*
 * attn_runtime.h - the small runtime every attngen kernel is compiled against.
 *
 * One args struct, one status enum, the description of a generated kernel
 * (attn_spec / attn_kernel: its family, shape, masks and storage types), the
 * lists of ISAs, storage types and families, CPU feature queries, the CPU
 * profile (attn_cpu) and the allocation hooks.  Plain C99; nothing here depends on the generator.
 *
 * Tensor layout (BSHD, the last dim contiguous).  Q, K, V and O are stored
 * in the type the kernel's spec records (dtype_q for Q, dtype_kv for K and
 * V, dtype_o for O: f32, bf16 or f16, attn_dtype below), so attn_args
 * holds them as void pointers; strides count elements of that type:
 *   Q   [B][Lq][Hq][D]     element strides q_stride  = {b, s, h}
 *   K   [B][Lk][Hkv][D]    element strides k_stride  = {b, s, h}
 *   V   [B][Lk][Hkv][Dv]   element strides v_stride  = {b, s, h}
 *   O   [B][Lq][Hq][Dv]    element strides o_stride  = {b, s, h}
 *   LSE [B][Hq][Lq]        f32, contiguous, optional (NULL: not written)
 *   seqlens_k int32[B]     valid key length per batch (configs with padding)
 *   mask [B][Hq][Lq][Lk]   uint8 keep-mask (nonzero = keep) or f32 additive
 *                          bias, element strides mask_stride = {b, h, i, j};
 *                          a stride of 0 broadcasts that dim.
 *   P   [B][Hq][Lq][Lk]    f32 attention weights, element strides
 *                          weights_stride = {b, h, i, j}; only kernels whose
 *                          spec has weights write them, and only when
 *                          args->weights is not NULL: P_ij = exp(s_ij - LSE_i)
 *                          for visible keys, exactly 0 for every other j < Lk.
 *   E   [B][Hq][Lq]        f32, contiguous, optional: each row's attention
 *                          entropy in nats, E_i = -sum_j P_ij ln P_ij =
 *                          LSE_i - sum_j P_ij s_ij over the visible keys
 *                          (before dropout); 0 in a row with no visible key.
 *                          Only kernels whose spec has entropy write it, and
 *                          only when args->entropy is not NULL.
 *
 * Linear attention (spec.family ATTN_FAMILY_LINEAR) takes the same Q, K, V,
 * O and seqlens_k, writes no LSE (args->lse is ignored) and, with
 * spec.state, reads the running state of the keys before this call and
 * writes it back updated with this call's keys:
 *   state_s [B][Hkv][D][Dv]  f32, contiguous: sum of phi(k_j) v_j^T
 *   state_z [B][Hkv][D]      f32, contiguous: sum of phi(k_j)
 *
 * Memory rules: a kernel reads Q, K, V, the mask and seqlens_k only inside
 * the elements the shapes and strides above describe, never past them (no
 * vector over-read of a row), writes O, LSE, P and E only there, and reads no K/V
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
    ATTN_ERR_TOO_LARGE,   /* a size overflows the kernel's index type */
    ATTN_ERR_DROPOUT,     /* dropout_p outside [0, 1) (NaN included) */
    ATTN_ERR_PAGE,        /* paged K/V: a block-table entry names no page of the pools (or -1 where a row sees the page) */
    ATTN_ERR_ROPE,        /* rope with table: a query row's (or new key's) position outside 0..rope_rows-1 */
    ATTN_ERR_CAPACITY,    /* appending: seqlens_k[b] + seq_new > seq_k (the cache's capacity) */
    ATTN_ERR_WORKSPACE    /* args->workspace_bytes below the kernel's attn_NAME_workspace_size() */
} attn_status;

/* A short English sentence for a status; never NULL. */
const char *attn_status_string(attn_status status);

typedef enum attn_mask_kind {
    ATTN_MASK_NONE = 0,
    ATTN_MASK_BOOL, /* uint8 keep-mask: 0 hides the key */
    ATTN_MASK_BIAS  /* f32 added to the score */
} attn_mask_kind;

/* The Sparse Transformer pattern of a spec (docs/config.md, "sparse"). */
typedef enum attn_sparse_kind {
    ATTN_SPARSE_NONE = 0,
    ATTN_SPARSE_STRIDED, /* p - j < stride, or (p - j) % stride == 0 */
    ATTN_SPARSE_FIXED    /* j / block == p / block, or j % block >= block - summary */
} attn_sparse_kind;

/*
 * The learned relative position bias of a spec (docs/config.md, "rel_bias"):
 * the score of query row i (position p_i) at key j gains
 * rel_table[bucket(j - p_i)][h], the table [attn_rel_rows(spec)][heads_q]
 * given at run time (args->rel_table).
 */
typedef enum attn_rel_kind {
    ATTN_REL_NONE = 0,
    ATTN_REL_T5,     /* T5's buckets: exact near, logarithmic up to rel_max_distance */
    ATTN_REL_CLIPPED /* Shaw et al.: clamp(j - p, -k, k) + k, k = rel_max_distance */
} attn_rel_kind;

/*
 * The storage types of tensors, in the order of the attn_dtype values:
 * X(ID, name, bytes per element).  f32 is IEEE binary32, bf16 the top 16
 * bits of one, f16 IEEE binary16 (both held as uint16_t).  q8_0 and q4_0
 * are llama.cpp's quantized blocks (attn_block_q8_0, attn_block_q4_0
 * below), K/V only: their element is a block of ATTN_QK values, so the
 * strides of a tensor in a block type count blocks and a row of D values
 * is D / 32 of them (attn_dtype_values).
 */
#define ATTN_DTYPE_LIST(X) \
    X(F32, f32, 4)         \
    X(BF16, bf16, 2)       \
    X(F16, f16, 2)         \
    X(Q8_0, q8_0, 34)      \
    X(Q4_0, q4_0, 18)

/* Rotary position embedding (rope = {style}): pair m of a rotated row is
   (x_m, x_{m + dim/2}) with NEOX (Hugging Face's rotate_half), (x_2m, x_2m+1)
   with GPTJ. */
typedef enum attn_rope_style {
    ATTN_ROPE_NONE = 0,
    ATTN_ROPE_NEOX,
    ATTN_ROPE_GPTJ
} attn_rope_style;

typedef enum attn_dtype {
#define ATTN_DTYPE_ENUM_(id, name, bytes) ATTN_DTYPE_##id,
    ATTN_DTYPE_LIST(ATTN_DTYPE_ENUM_)
#undef ATTN_DTYPE_ENUM_
    ATTN_DTYPE_COUNT
} attn_dtype;

/* "f32", "bf16", "f16"; "unknown" for a value outside the list */
const char *attn_dtype_name(attn_dtype dtype);
/* Bytes per element: 4, 2, 2, and a block's 34 (q8_0) or 18 (q4_0); 0 for
   a value outside the list. */
size_t attn_dtype_size(attn_dtype dtype);
/* Values per element: 1, or ATTN_QK (32) for the block types; 0 for a value
   outside the list. */
int attn_dtype_values(attn_dtype dtype);

/*
 * Conversions between f32 and the 16-bit storage types, in portable C (no
 * intrinsics, no dependence on the FPU's rounding mode or flush-to-zero
 * settings), so a caller can store its tensors the way the kernels read
 * them.  bf16 and f16 values are held as uint16_t bit patterns.
 *
 * Narrowing (f32 to bf16 or f16) rounds to nearest, ties to even.  NaN
 * stays NaN: the result is a quiet NaN with the sign and the top bits of
 * the payload kept.  bf16 has f32's exponent range, so only values past
 * its largest finite value (3.3895e38) round to infinity, and f32
 * subnormals become bf16 subnormals (rounded, never flushed).  f16 holds
 * magnitudes up to 65504: values from 65520 (half an ulp past 65504) up
 * become +-inf; values below 2^-14 become f16 subnormals (multiples of
 * 2^-24, gradual underflow with the same rounding), and below 2^-25 +-0.
 *
 * Widening (bf16 or f16 to f32) is exact: every value, subnormals,
 * infinities and NaN payloads included, has an f32 with the same value.
 *
 * The array forms convert n elements from src to dst (which must not
 * overlap); n = 0 does nothing.  attn_f32_to_dtype_array and
 * attn_dtype_to_f32_array take the storage type as a value (a kernel's
 * spec.dtype_q, ...): for ATTN_DTYPE_F32 they copy (src and dst may then be
 * the same array).  For a block type (q8_0, q4_0) n counts values, a
 * multiple of ATTN_QK: they quantize n values into n / 32 blocks with
 * attn_quantize_q8_0 or _q4_0, and dequantize n / 32 blocks into n values.
 */
uint16_t attn_f32_to_bf16(float x);
float attn_bf16_to_f32(uint16_t h);
uint16_t attn_f32_to_f16(float x);
float attn_f16_to_f32(uint16_t h);
void attn_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n);
void attn_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n);
void attn_f32_to_f16_array(const float *src, uint16_t *dst, size_t n);
void attn_f16_to_f32_array(const uint16_t *src, float *dst, size_t n);
void attn_f32_to_dtype_array(attn_dtype dtype, const float *src, void *dst, size_t n);
void attn_dtype_to_f32_array(attn_dtype dtype, const void *src, float *dst, size_t n);

/*
 * llama.cpp's (ggml's) quantized blocks, bit for bit, so that a KV cache can
 * be shared with it.  A row of n values (n a multiple of ATTN_QK) is n / 32
 * consecutive blocks:
 *
 *   q8_0  {f16 d; int8 q[32]}    34 bytes   value j: q[j] * d
 *   q4_0  {f16 d; uint8 q[16]}   18 bytes   value j < 16: ((q[j] & 15) - 8) * d,
 *                                            value j + 16: ((q[j] >> 4) - 8) * d
 *
 * attn_quantize_q8_0 and attn_quantize_q4_0 are ggml's reference quantizers
 * (quantize_row_q8_0_ref, quantize_row_q4_0_ref), in f32 arithmetic:
 *   q8_0: amax = max |x|; d = amax / 127; q = round(x * (1 / d)), halves
 *         away from zero (q = 0 when d = 0);
 *   q4_0: m = the first value of largest |x|, its sign kept; d = m / -8;
 *         q = min(15, trunc(x * (1 / d) + 8.5)), so halves round up and the
 *         value at -m is clipped to 7 * |d|;
 * d stored as f16, rounded to nearest even (attn_f32_to_f16).  A block of
 * zeros stores d = +0 and codes 0 (q8_0), or d = -0 (0 / -8) and codes 8
 * (q4_0).  What ggml leaves to the
 * platform is fixed to what it does on x86-64 (where llama.cpp's caches are
 * made): a NaN or infinite product stores code 0 (q8_0: value 0; q4_0:
 * value -8 d).  So a NaN in a q8_0 block drops out of the maximum (the next
 * value replaces it: values before it may then pass 127 steps and store
 * the low byte of their code, as ggml does there) unless it comes last,
 * when d is NaN; a q4_0 block
 * never picks a NaN as m; an infinity makes d infinite, the block's
 * finite values code 0 (q8_0) or 8 (q4_0: 1 / d is -0 or +0) and the
 * infinity itself code 0, as a NaN; a scale d up to 2^-25
 * stores f16 zero (q8_0: largest |x| up to 127 * 2^-25, about 3.8e-6;
 * q4_0: up to 2^-22), and the block dequantizes to zeros.
 *
 * Dequantizing is exact in f32.  Each function returns ATTN_OK, or
 * ATTN_ERR_SHAPE when n is negative or not a multiple of ATTN_QK.
 */
enum { ATTN_QK = 32 }; /* values per block of q8_0 and q4_0 */
typedef struct { uint16_t d; int8_t q[ATTN_QK]; } attn_block_q8_0;
typedef struct { uint16_t d; uint8_t q[ATTN_QK / 2]; } attn_block_q4_0;
int attn_quantize_q8_0(const float *x, void *blocks, int64_t n);
int attn_dequantize_q8_0(const void *blocks, float *x, int64_t n);
int attn_quantize_q4_0(const float *x, void *blocks, int64_t n);
int attn_dequantize_q4_0(const void *blocks, float *x, int64_t n);

/*
 * One run of a kernel.  Each tensor is stored in the type the kernel's spec
 * records (float for ATTN_DTYPE_F32, uint16_t for bf16 and f16): Q in
 * spec.dtype_q, K and V in spec.dtype_kv, O in spec.dtype_o.  LSE is f32.
 */
typedef struct attn_args {
    int64_t batch, seq_q, seq_k;
    const void *q, *k, *v;      /* Q: dtype_q; K, V: dtype_kv */
    void *o;                    /* O: dtype_o */
    float *lse;                 /* optional */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    const int32_t *seqlens_k;   /* required when the config has padding */
    const void *mask;           /* required when the config has a mask */
    int64_t mask_stride[4];
    float *weights;             /* configs with weights: P [B][Hq][Lq][Lk], f32; NULL: not written */
    int64_t weights_stride[4];  /* element strides {b, h, i, j} of weights */
    float *entropy;             /* configs with entropy: E [B][Hq][Lq], f32, contiguous; NULL: not written */
    float dropout_p;            /* configs with dropout: in [0, 1); 0 drops nothing */
    uint64_t dropout_seed;      /* configs with dropout: the Philox key (low word, high word) */
    uint32_t dropout_offset;    /* configs with dropout: the Philox counter's last word */
    const float *sinks;         /* configs with sinks (required): a logit per query head [Hq], f32 */
    float *state_s;             /* linear configs with state: S [B][Hkv][D][Dv], f32, contiguous, in/out */
    float *state_z;             /* linear configs with state: z [B][Hkv][D], f32, contiguous, in/out */
    const float *rel_table;     /* configs with rel_bias: [attn_rel_rows(spec)][heads_q], f32, contiguous */
    int threads;                /* 0: OpenMP's default */
    /* paged configs (spec.page > 0): K and V are pools of num_pages pages of
       spec.page keys, [N][P][Hkv][D] (ATTN_PAGE_NHD) or [N][Hkv][P][D]
       (ATTN_PAGE_HND), and k_stride / v_stride are the element strides
       {page, slot, head}; key j of batch b is slot j % P of page
       block_table[b * block_table_stride + j / P] (-1: evicted, allowed
       only where no row of the call can see a key of the page) */
    const int32_t *block_table;
    int64_t block_table_stride;
    int64_t num_pages;
    const float *rope_cos, *rope_sin; /* configs with rope table = true (required): [rope_rows][rope_dim / 2],
                                   f32, contiguous: cos and sin of each pair's angle at a position */
    int64_t rope_rows;          /* configs with rope table = true: the positions of rope_cos and rope_sin */
    /* appending (sdpa): new rows stored into the cache before the call attends;
       NULL: none.  K and V (and seqlens_k, required) are the cache then */
    const void *k_new, *v_new;  /* [B][seq_new][Hkv][D], [B][seq_new][Hkv][Dv] in dtype_q */
    int64_t kn_stride[3], vn_stride[3]; /* element strides {b, t, h} of k_new, v_new */
    int64_t seq_new;            /* the new rows of each sequence, Ln >= 0 */
    /* forward calls of sdpa (prefill and decode paths) and linear kernels: the caller's scratch memory, kept between calls, of at least
       attn_NAME_workspace_size(batch, seq_q, seq_k, threads) bytes (any alignment);
       NULL: the allocator hook's, once a call */
    void *workspace;
    size_t workspace_bytes;
    /* configs with qk_norm (required): the RMS norm's weights of query rows and of
       appended key rows, f32 [head_dim] each, shared by every head */
    const float *q_norm_w, *k_norm_w;
} attn_args;

/* Fill the strides of a contiguous BSHD layout for a kernel's spec (K and V
   in a block type: in blocks). */
struct attn_spec;
void attn_args_set_contiguous(attn_args *args, const struct attn_spec *spec);

/* For a paged spec: K and V laid out contiguously ([B][Lk][Hkv][D], as
   attn_args_set_contiguous lays them out for a spec without pages) read
   through a block table: key j of batch b becomes slot j % P of "page"
   b * Lk + j - j % P, pages one key row apart.  Fills table (batch *
   ceil(seq_k / P) entries), points args->block_table at it and sets the
   K/V strides, block_table_stride and num_pages.  ATTN_ERR_TOO_LARGE where
   an entry would not fit in int32, ATTN_ERR_NULL_ARG for a NULL pointer or
   a spec without pages.  For tests and benchmarks that compare a paged
   kernel with the contiguous layout. */
int attn_args_set_contiguous_pages(attn_args *args, const struct attn_spec *spec, int32_t *table);
/*
 * Appending (sdpa, args->k_new set): checks the new rows against spec and
 * the cache before anything is written: k_new and v_new both given, and
 * seqlens_k; seq_new >= 0; strides >= 0; every seqlens_k[b] in 0..seq_k
 * and seqlens_k[b] + seq_new <= seq_k (ATTN_ERR_CAPACITY); with qk_norm,
 * k_norm_w (ATTN_ERR_NULL_ARG where seq_new > 0); with a rope
 * table, the new keys' positions below rope_rows.  ATTN_OK when k_new is
 * NULL.  attn_<name>_append and attn_<name>_fwd call it.
 */
attn_status attn_check_append(const struct attn_spec *spec, const attn_args *args);

/* The rows of a spec's relative position table (args->rel_table): 0 without rel_bias. */
int attn_rel_rows(const struct attn_spec *spec);

/* ---- what a generated kernel is ---------------------------------------- */

/*
 * The ISAs a kernel can have variants for, in the order of the attn_isa
 * values: X(ID, name).  attngen's generator lists the same names, best
 * first (generator/isa/init.lua, M.order); a Lua spec checks that the two
 * agree.
 */
#define ATTN_ISA_LIST(X) \
    X(SCALAR, scalar)    \
    X(AVX2, avx2)        \
    X(AVX512, avx512)    \
    X(NEON, neon)        \
    X(AVX512BF16, avx512bf16)

typedef enum attn_isa {
#define ATTN_ISA_ENUM_(id, name) ATTN_ISA_##id,
    ATTN_ISA_LIST(ATTN_ISA_ENUM_)
#undef ATTN_ISA_ENUM_
    ATTN_ISA_COUNT
} attn_isa;

/* "scalar", "avx2", "avx512", "neon", "avx512bf16"; "unknown" for a value outside the list */
const char *attn_isa_name(attn_isa isa);
/* -1 when the name is unknown */
int attn_isa_from_name(const char *name);
/* Whether this CPU (and OS) can run the variant. */
int attn_isa_supported(attn_isa isa);
/*
 * The CPU profile: what the runtime chooses for this CPU where the kernels
 * hold more than one way to do a thing, and the CPU's cache sizes.  One
 * struct, filled once per process (thread-safe) by the first attn_cpu()
 * call: from a table of profiles (attn_cpu_profiles.h, generated from
 * attngen's modules generator/cpu/NAME.lua, which hold the measurement
 * behind each choice) the first whose cpuid vendor, family and model match and
 * whose required ISA this CPU runs (AMD Zen 5 and later with AVX-512, Zen 4
 * with AVX-512, Intel CPUs), else the generic profile (AArch64 and every
 * other CPU).  ATTNGEN_CPU=NAME in the environment picks a profile by name
 * (an unknown name is ignored).  The ATTNGEN_* variables named below override
 * one field each (a value out of range is ignored); the environment is read
 * when the profile is filled, so set them before the first kernel call.
 * docs/architecture.md ("CPU profiles") says how to add a CPU.
 */
enum { ATTN_PREFETCH_NONE = 0, ATTN_PREFETCH_L1 = 1, ATTN_PREFETCH_L2 = 2 };
typedef struct attn_cpu_profile {
    const char *name;           /* the profile: "zen5", "zen4", "intel" or "generic" */
    char vendor[13];            /* cpuid's vendor string ("AuthenticAMD"); "" without cpuid */
    int family, model;          /* cpuid's display family and model; 0 without cpuid */
    size_t l1d_bytes, l2_bytes; /* a core's L1 data and L2 caches: as the OS reports them
                                   (sysconf, else Linux's sysfs), else the profile's */
    /*
     * How the decode path's blocked kernel (several query rows a kv head)
     * asks for the next block of K and V rows while it works on one: not at
     * all (ATTN_PREFETCH_NONE: Intel, whose hardware prefetchers follow its
     * reads better alone), into L2 (ATTN_PREFETCH_L2: AMD Zen 4, whose 32 KiB
     * L1 a block would overrun, and Zen 5) or into L1 (ATTN_PREFETCH_L1).
     * ATTNGEN_DECODE_PREFETCH=0, 1 or 2.
     */
    int decode_prefetch;
    /*
     * 1: the streaming decode kernel (up to 4 query rows a kv head) reads an
     * f32 cache two keys a step, one pass over the rows' Q scoring both and
     * one over their O adding both V rows, instead of one key a step (AMD
     * Zen 4, which runs a 512-bit instruction in two halves).  16-bit caches
     * always take two keys a step.  ATTNGEN_DECODE_KEY_PAIRS=1 or 0.
     */
    int decode_key_pairs;
    /*
     * 1: the blocked decode kernel splits a kv head's rows that take two P*V
     * calls into two even halves (8 rows: 4 + 4) instead of the widest call
     * first (6 + 2) (AMD Zen 4 and 5).  Rows that take more calls end in even
     * halves everywhere.  ATTNGEN_DECODE_EVEN_ROWS=1 or 0.
     */
    int decode_even_rows;
    /*
     * 1: the blocked decode kernel scores at most a quarter of a vector of
     * query rows a kv head (Llama-3-8B at Lq 1 on AVX-512: 4 rows) with the
     * rows along pairs of lanes of half-width vectors, two values of D a row,
     * instead of by dot products (an f32 cache, D even; AVX-512 variants)
     * (AMD Zen 4 and 5).  ATTNGEN_DECODE_HALF_PAIRS=1 or 0.
     */
    int decode_half_pairs;
    /*
     * The most query rows a kv head the decode path's streaming kernel takes
     * (it holds 1 to 4); more go to the blocked kernel.  Indexed by whether
     * the caller's blocked kernel can score up to a quarter vector of rows in
     * half-width pairs (an AVX-512 variant, an f32 cache, D even): 4 and 4 by
     * default; 1 and 1 on AMD Zen 4; 4 and 1 on AMD Zen 5, where [1] is 1
     * only while decode_half_pairs is.  ATTNGEN_DECODE_STREAM_ROWS=0 to 4 sets
     * both (0: the blocked kernel always).
     */
    int decode_stream_rows[2];
    /*
     * 1: the default dispatch runs an avx512bf16 variant (vdpbf16ps products,
     * matmul = "bf16") where the CPU has one; 0 on Intel CPUs, where
     * vdpbf16ps measured half the f32 FMA's rate and the kernel that
     * multiplies the same bf16 tensors in f32 is faster.  Only a variant list
     * that also holds avx512 falls back to it.  ATTNGEN_BF16_DOT=1 or 0;
     * ATTNGEN_ISA still forces any variant.
     */
    int bf16_dot;
    /*
     * The integer dot-product extensions this CPU and OS run, bits
     * ATTN_INT8_DOT_*: the kernels of matmul = "int8" configs score with
     * them where the variant has a form for one (vpdpbusd of AVX512-VNNI in
     * AVX-512 variants, of AVX-VNNI in AVX2 ones, NEON's sdot), else with
     * vpmaddubsw or vmull pairs.  Detected, not a CPU's profile choice;
     * ATTNGEN_INT8_DOT=0 turns them all off.
     */
    int int8_dot;
} attn_cpu_profile;

enum { ATTN_INT8_DOT_AVX512VNNI = 1, ATTN_INT8_DOT_AVXVNNI = 2, ATTN_INT8_DOT_DOTPROD = 4 };

/* This CPU's profile (above); never NULL, the same pointer on every call. */
const attn_cpu_profile *attn_cpu(void);

/*
 * Whether a kernel stores its output rows non-temporally (past the caches,
 * without reading each line of O first): where the CPU has such stores, O
 * (at o, element strides stride[3] of elem bytes) lies in whole vectors of
 * vec bytes, and the call writes at least ATTN_STREAM_OUTPUT_BYTES of it
 * (bytes): an O that large leaves the caches before anyone reads it, and on
 * the linear family's kernels, which spend a tenth of their time storing O,
 * the stores that read each line first cost 7-11% (docs/kernels.md).
 * ATTNGEN_STREAM_OUTPUT=0 in the environment never streams, 1 streams
 * whatever the size, 2 is the default.
 */
#define ATTN_STREAM_OUTPUT_BYTES ((int64_t)1 << 20)
int attn_stream_output(const void *o, const int64_t stride[3], size_t elem, int64_t bytes, size_t vec);

/* Kernel families, in the order of the attn_family values: X(ID, name). */
#define ATTN_FAMILY_LIST(X) \
    X(SDPA, sdpa)          \
    X(LINEAR, linear)      \
    X(ADDITIVE, additive)  \
    X(LUONG, luong)

typedef enum attn_family {
#define ATTN_FAMILY_ENUM_(id, name) ATTN_FAMILY_##id,
    ATTN_FAMILY_LIST(ATTN_FAMILY_ENUM_)
#undef ATTN_FAMILY_ENUM_
    ATTN_FAMILY_COUNT
} attn_family;

/* "sdpa", "linear", "additive", "luong"; "unknown" for a value outside the list */
const char *attn_family_name(attn_family family);

/* The score of the additive and luong families (docs/config.md). */
typedef enum attn_score {
    ATTN_SCORE_NONE = 0, /* sdpa and linear */
    ATTN_SCORE_ADDITIVE, /* kind = "additive": v . tanh(W_s s + W_h h + b) */
    ATTN_SCORE_DOT,      /* luong dot: s . h */
    ATTN_SCORE_GENERAL,  /* luong general: h . (W s) */
    ATTN_SCORE_CONCAT    /* luong concat: v . tanh(W [h; s] + b) */
} attn_score;

/*
 * The config a kernel was generated from, as data (after defaults).  The
 * generated kernels fill it with designated initializers, so code that
 * builds one by hand should too (or zero it first: 0 is ATTN_FAMILY_SDPA,
 * ATTN_MASK_NONE and ATTN_DTYPE_F32).
 */
/* The layout of a paged config's K and V pools (attn_args.block_table). */
typedef enum attn_page_order {
    ATTN_PAGE_NHD = 0, /* [N][P][Hkv][D]: a page's slots, each with every kv head (vLLM, FlashAttention) */
    ATTN_PAGE_HND = 1  /* [N][Hkv][P][D]: a page's kv heads, each with every slot (FlashInfer's HND) */
} attn_page_order;

typedef struct attn_spec {
    attn_family family;
    const char *name;
    int heads_q, heads_kv;
    int head_dim, head_dim_v;
    int causal;
    int top_left;                  /* query row i at position i (causal = "top_left"); 0: i + Lk_b - Lq */
    int window_left, window_right; /* -1: unbounded (causal folded in) */
    int chunk;                     /* keys of a chunk (j / chunk == p / chunk); 0: none */
    attn_sparse_kind sparse;       /* a Sparse Transformer pattern (implies causal); 0: none */
    int sparse_stride;             /* strided: the stride l */
    int sparse_block, sparse_summary; /* fixed: the block l and its last c (summary) keys */
    int global_tokens;
    int padding;
    attn_mask_kind mask;
    float scale;
    float softcap;                 /* 0: none */
    int alibi;
    attn_rel_kind rel_bias;        /* a learned relative position bias (args->rel_table); 0: none */
    int rel_buckets;               /* the table's rows: T5's buckets, or 2 * rel_max_distance + 1 */
    int rel_max_distance;          /* t5: the distance where the last bucket starts; clipped: k */
    int rel_bidirectional;         /* t5: half the buckets a direction (else only j <= p counts) */
    attn_dtype dtype_q, dtype_kv, dtype_o; /* storage of Q; of K and V; of O */
    attn_dtype matmul;             /* the products' operands: F32, or BF16 (matmul = "bf16": Q.K and
                                      P.V may multiply bf16-rounded operands, f32 sums) */
    int tile_q, tile_kv;
    int weights;                   /* can write the attention weights (args->weights): weights = true */
    int dropout;                   /* applies dropout to the weights (args->dropout_*): dropout = true */
    int sinks;                     /* a logit per query head joins each row's softmax (args->sinks): sinks = true */
    double temperature_scale, temperature_floor; /* query row at position p times 1 + scale * ln(floor((p + 1) /
                                      floor) + 1), p + 1 taken as 0 below 0: temperature = {scale, floor}; 0: none */
    int entropy;                   /* can write each row's attention entropy (args->entropy): entropy = true */
    /* family ATTN_FAMILY_LINEAR (kind = "linear"): phi(x) = elu(x) + 1, no
       scale, no softmax; of the sdpa fields above it uses the heads, head
       dims, causal and padding (mask NONE, no window, weights or dropout) */
    float eps;                     /* added to each row's denominator phi(q) . z */
    int state;                     /* reads and updates the running state (args->state_s, state_z) */
    /* families ATTN_FAMILY_ADDITIVE and ATTN_FAMILY_LUONG (one head, no
       scale): of the fields above they use padding, mask (NONE or BOOL) and
       the storage types; heads are 1, head_dim is query_dim and head_dim_v
       is key_dim */
    attn_score score;
    int query_dim;                 /* Ds: the decoder state s */
    int key_dim;                   /* Dh: the encoder states h (keys and values) */
    int attn_dim;                  /* Da: the additive and concat scores; 0 for dot and general */
    int bias;                      /* adds b [Da] inside the tanh (args->b_attn) */
    /* paged K/V (sdpa, paged = {page, order}): keys a page, 0: the contiguous layout */
    int page;
    attn_page_order page_order;    /* the pools' layout: [N][P][Hkv][D] or [N][Hkv][P][D] */
    /* sdpa with backward = true: the kernel has a backward pass (attn_bwd_kernel) */
    int backward;
    attn_dtype dtype_grad_q, dtype_grad_kv; /* storage of dQ; of dK and dV (grad_dtype) */
    /* sdpa: V is the first head_dim_v values of each K row (multi-head
       latent attention, absorbed: shared_kv = true); args->v and v_stride
       are ignored */
    int shared_kv;
    /* sdpa with rope: query row i is rotated at its position p_i before its
       scores (docs/config.md, "rope"); the cached keys are stored rotated */
    attn_rope_style rope_style;    /* which dims pair up; 0: no rope */
    int rope_dim;                  /* dims rotated, from 0 (even); the rest pass as they are */
    const double *rope_inv_freq;   /* [rope_dim / 2] pair m's angle is p * rope_inv_freq[m] (scaling applied);
                                      NULL with rope_table */
    int rope_table;                /* the angles' cos and sin come from args->rope_cos / rope_sin */
    /* sdpa with qk_norm: each query row (and each appended key row) is
       x (offset + w) / sqrt(mean(x^2) + eps) over its head_dim values, before
       RoPE and the scale (docs/config.md, "qk_norm"); cached keys are stored normed */
    int qk_norm;                   /* args->q_norm_w and k_norm_w are required */
    double qk_norm_eps;
    int qk_norm_offset;            /* 0: x w; 1: x (1 + w) (Gemma's) */
} attn_spec;

/*
 * One run of an additive or luong kernel (spec.family ATTN_FAMILY_ADDITIVE
 * or ATTN_FAMILY_LUONG): Lq decoder states attend over Lk encoder states,
 * which are both keys and values.  One head; the last dim is contiguous;
 * strides count elements of the tensor's storage type.  The weights are
 * contiguous, in PyTorch's nn.Linear layout [out][in].
 *   S   [B][Lq][Ds]  decoder states, dtype_q, strides s_stride = {b, i}
 *   H   [B][Lk][Dh]  encoder states, dtype_kv, strides h_stride = {b, j}
 *   U   [B][Lk][Da]  additive only, optional: H W_h^T, precomputed once for
 *                    all of a decoder's steps (dtype_kv, strides u_stride);
 *                    when given, w_h is not read
 *   C   [B][Lq][Dh]  context, dtype_o, strides c_stride = {b, i}
 *   A   [B][Lq][Lk]  optional f32 attention weights, strides
 *                    weights_stride = {b, i, j}; 0 where a key is hidden
 *   mask [B][Lq][Lk] uint8 keep-mask (spec.mask ATTN_MASK_BOOL), strides
 *                    mask_stride = {b, i, j}, 0 broadcasts
 * The parameters are stored in dtype_kv:
 *   additive: w_s = W_s [Da][Ds], w_h = W_h [Da][Dh], v_attn = v [Da]
 *   luong general: w = W [Dh][Ds]; concat: w = W [Da][Dh + Ds] (h's
 *   columns first), v_attn = v [Da]; dot reads no parameter
 *   spec.bias: b_attn = b [Da]
 */
typedef struct attn_classic_args {
    int64_t batch, seq_q, seq_k;
    const void *s;              /* S: dtype_q */
    const void *h;              /* H: dtype_kv */
    const void *u;              /* additive, optional: U; NULL: computed from w_h */
    const void *w_s, *w_h;      /* additive */
    const void *w;              /* luong general and concat */
    const void *v_attn;         /* additive and concat */
    const void *b_attn;         /* with spec.bias */
    void *c;                    /* C: dtype_o */
    float *weights;             /* optional: A; NULL: not written */
    int64_t s_stride[2], h_stride[2], u_stride[2], c_stride[2];
    int64_t weights_stride[3];
    const int32_t *seqlens_k;   /* required when the config has padding */
    const uint8_t *mask;        /* required when the config has a mask */
    int64_t mask_stride[3];
    int threads;                /* 0: OpenMP's default */
} attn_classic_args;

/* Fill the strides of contiguous S, H, U, C, A and mask tensors. */
void attn_classic_args_set_contiguous(attn_classic_args *args, const struct attn_spec *spec);

typedef attn_status (*attn_fwd_fn)(const attn_args *args);
typedef attn_status (*attn_classic_fwd_fn)(const attn_classic_args *args);

typedef struct attn_variant {
    attn_isa isa;
    attn_fwd_fn fwd;               /* runs this ISA, no dispatch (NULL for additive and luong) */
    attn_classic_fwd_fn classic_fwd; /* the same for additive and luong kernels (NULL otherwise) */
} attn_variant;

typedef struct attn_kernel {
    attn_spec spec;
    attn_fwd_fn fwd;               /* validates, dispatches once, runs (NULL for additive and luong) */
    int n_variants;
    const attn_variant *variants;  /* best first; only those compiled in */
    attn_classic_fwd_fn classic_fwd; /* the same for additive and luong kernels (NULL otherwise) */
    /* sdpa and linear kernels: attn_NAME_workspace_size, the bytes of args->workspace a call needs (NULL otherwise) */
    size_t (*workspace_size)(int64_t batch, int64_t seq_q, int64_t seq_k, int threads);
} attn_kernel;

/*
 * The backward pass of an sdpa kernel (spec.backward): the gradients of a
 * loss with respect to Q, K and V, given dO, the gradient with respect to
 * the forward's O.  fwd holds the forward's arguments as they were: Q, K, V,
 * O (read), LSE (required, read: the forward's [B][Hq][Lq] f32), seqlens_k,
 * the mask or bias tensor, dropout_p/seed/offset, sinks, rel_table and
 * threads; its weights and entropy are ignored.
 *   dO  [B][Lq][Hq][Dv]   O's type (dtype_o), element strides do_stride
 *   dQ  [B][Lq][Hq][D]    dtype_grad_q, element strides dq_stride
 *   dK  [B][Lk][Hkv][D]   dtype_grad_kv, element strides dk_stride
 *   dV  [B][Lk][Hkv][Dv]  dtype_grad_kv, element strides dv_stride
 * Every element of dQ, dK and dV is written: 0 for a row that sees no key
 * and for keys at or past seqlens_k[b].  f32 accumulation throughout; the
 * result is bitwise identical for every thread count.
 *   dsinks [Hq]           f32, configs with sinks (NULL: not wanted; ignored
 *                         without sinks): the gradient of the sink logits,
 *                         dsinks[h] = -sum over b and i of
 *                         exp(sinks[h] - LSE[b][h][i]) (dO_i . O_i),
 *                         summed in an order that no thread count changes
 *   drel_table [rows][Hq] f32, configs with rel_bias (rows = attn_rel_rows;
 *                         NULL: not wanted; ignored without rel_bias): the
 *                         gradient of rel_table, drel_table[r][h] = the sum
 *                         over b, the rows i of head h and the visible keys
 *                         j with bucket(j - p_i) = r of P_ij (dP_ij - D_i),
 *                         dP_ij the gradient of P_ij (dropout's factor in
 *                         it), summed in an order that no thread count
 *                         changes (docs/config.md, "backward")
 *   dq_norm_w [D]         f32, configs with qk_norm (NULL: not wanted; ignored
 *                         without qk_norm): the gradient of args->fwd.q_norm_w,
 *                         the sum over every query row of g_d x_d r (g the
 *                         gradient of the normed row, x the row as read, r its
 *                         1 / RMS), in an order that no thread count changes.
 *                         dQ is taken back through the norm; K is the cache's,
 *                         normed when it was appended, so k_norm_w has none
 */
typedef struct attn_bwd_args {
    attn_args fwd;              /* the forward's arguments (above) */
    const void *d_o;            /* dO: dtype_o */
    void *dq, *dk, *dv;         /* dQ: dtype_grad_q; dK, dV: dtype_grad_kv */
    int64_t do_stride[3], dq_stride[3], dk_stride[3], dv_stride[3];
    float *dsinks;              /* sinks: dsinks [Hq] f32, or NULL */
    float *drel_table;          /* rel_bias: drel_table [rows][Hq] f32, or NULL */
    float *dq_norm_w;           /* qk_norm: the gradient of q_norm_w [D] f32, or NULL */
} attn_bwd_args;

/* Fill the strides of contiguous BSHD dO, dQ, dK, dV and of the forward's
   tensors (attn_args_set_contiguous). */
void attn_bwd_args_set_contiguous(attn_bwd_args *args, const struct attn_spec *spec);

typedef attn_status (*attn_bwd_fn)(const attn_bwd_args *args);

typedef struct attn_bwd_variant {
    attn_isa isa;
    attn_bwd_fn bwd;               /* runs this ISA, no dispatch */
} attn_bwd_variant;

/* The backward pass of a kernel: attn_<name>_bwd_kernel, beside attn_<name>_kernel. */
typedef struct attn_bwd_kernel {
    const attn_kernel *fwd;        /* the forward's descriptor (its spec) */
    attn_bwd_fn bwd;               /* validates, dispatches once, runs */
    int n_variants;
    const attn_bwd_variant *variants; /* best first; only those compiled in */
} attn_bwd_kernel;

/* ---- services the generated code uses --------------------------------- */

/*
 * Philox4x32-10 (Random123): the 4 words of the counter ctr under the
 * 2-word key, into out.  Dropout draws r = word (j & 3) of
 * attn_philox4x32_10({j >> 2, i, b * Hq + h, dropout_offset},
 * {seed mod 2^32, seed >> 32}) for key j of query row i, head h, batch b,
 * and keeps the weight iff r >= (uint32_t)(dropout_p * 2^32).
 */
static inline void attn_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    int round;
    for (round = 0; round < 10; round++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The dropout threshold floor(p * 2^32) of dropout_p in [0, 1). */
static inline uint32_t attn_dropout_threshold(float p)
{
    return (uint32_t)((double)p * 4294967296.0);
}

/*
 * Checks args against spec: the statuses above except ATTN_ERR_ISA and
 * ATTN_ERR_NOMEM.  Generated entry points call it first.
 */
attn_status attn_check_args(const attn_spec *spec, const attn_args *args);

/* The same for additive and luong kernels. */
attn_status attn_check_classic_args(const attn_spec *spec, const attn_classic_args *args);

/* The same for a backward pass: the forward's checks on args->fwd, LSE,
   dO, dQ, dK and dV not NULL, their strides not negative; ATTN_ERR_NULL_ARG
   for a spec without backward. */
attn_status attn_check_bwd_args(const attn_spec *spec, const attn_bwd_args *args);

/* attn_pick_variant for the backward pass's variants. */
const attn_bwd_variant *attn_pick_bwd_variant(const attn_bwd_variant *variants, int n);

/*
 * Picks the variant to run: the one ATTNGEN_ISA names when set (NULL if it
 * names an ISA that is unknown, not compiled in or not supported), else the
 * first the CPU supports, passing over avx512bf16 for avx512 where
 * attn_cpu()->bf16_dot says so.  The result depends only on the
 * environment and the CPU, so callers may cache it.
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
