/*
 * attn_cases.h - the verification harness's parts and the table of
 * operations each kernel family gives it (internal to attn_verify.c and the
 * attn_cases_*.c files; not installed, not vendored).
 *
 * attn_verify.c is the harness: guarded buffers, the deterministic random
 * inputs, strided layouts, the comparison of one value and the reports, and
 * the public entry points of attn_verify.h, which drive a family's
 * attn_case_ops without knowing the family.  Each family's cases live in
 * their own file: attn_cases_sdpa.c (Q, K, V and O: sdpa, and linear
 * attention, which takes the same arguments; its state in
 * attn_cases_linear.c) and attn_cases_classic.c (the additive and luong
 * families, attn_classic_args).
 *
 * A new family is one attn_cases_<family>.c with its attn_case_ops, and one
 * row of attn_case_ops_for's table; a direction (sdpa's backward pass,
 * attn_cases_sdpa_bwd.c) is one column of that table (ATTN_DIR_*), with the
 * family's ops for it, run by the same harness (attn_verify_bwd_case and
 * attn_verify_bwd_bitwise_threads are attn_verify_case's and
 * attn_verify_bitwise_threads's backward entry points); a new output is one
 * more entry of the family's outputs() list, which the bitwise comparison of
 * thread counts picks up as it is.
 */
#ifndef ATTN_CASES_H
#define ATTN_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "attn_runtime.h"
#include "attn_verify.h"

/* ---- the operations of a family ----------------------------------------- */

/* The directions a family's kernels compute: the forward pass, and sdpa's
   backward pass (specs with backward). */
typedef enum { ATTN_DIR_FWD, ATTN_DIR_BWD, ATTN_DIR_COUNT } attn_direction;

/* What a case runs: a direction's kernel and one of its variants (NULL: the
   kernel's own entry, which dispatches): fwd / fwd_variant forward, bwd /
   bwd_variant backward; the other pair NULL. */
typedef struct {
    const attn_kernel *fwd;
    const attn_variant *fwd_variant;
    const attn_bwd_kernel *bwd;
    const attn_bwd_variant *bwd_variant;
} attn_case_kernel;

/* One output buffer of a built case, as stored (gaps included): its name
   (as the reports spell it) and its bytes. */
typedef struct {
    const char *name;
    const void *ptr;
    size_t bytes;
} attn_case_output;

#define ATTN_CASE_MAX_OUTPUTS 8

/* ---- a family's tensors, by name (`attngen run`) ------------------------ */

/* A dimension of a tensor, named as the spec and the case name it. */
typedef enum {
    ATTN_DIM_BATCH,
    ATTN_DIM_SEQ_Q,
    ATTN_DIM_SEQ_K,
    ATTN_DIM_HEADS_Q,
    ATTN_DIM_HEADS_KV,
    ATTN_DIM_HEAD_DIM,
    ATTN_DIM_HEAD_DIM_V,
    ATTN_DIM_QUERY_DIM,     /* additive and luong: S's dim */
    ATTN_DIM_KEY_DIM,       /* H's dim */
    ATTN_DIM_ATTN_DIM,      /* the score's hidden dim */
    ATTN_DIM_KEY_QUERY_DIM, /* key_dim + query_dim (luong concat's W) */
    ATTN_DIM_REL_ROWS,      /* the relative position table's rows (attn_rel_rows) */
    ATTN_DIM_ROPE_PAIRS,    /* rope dim / 2 */
    ATTN_DIM_ROWS,          /* any length, given by the file (rope's positions, pages, new rows) */
    ATTN_DIM_COUNT
} attn_dim;

/* How a tensor is stored: in Q's, K and V's or O's storage type, as f32
   (read from float32 or float64), as int32 (read from int32 or int64), as
   the spec's mask (bytes for "bool", f32 for "bias"), or in the storage
   type of the gradients of Q or of K and V. */
typedef enum {
    ATTN_STORE_Q,
    ATTN_STORE_KV,
    ATTN_STORE_O,
    ATTN_STORE_F32,
    ATTN_STORE_I32,
    ATTN_STORE_MASK,
    ATTN_STORE_GRAD_Q,
    ATTN_STORE_GRAD_KV
} attn_store;

/* Whether a spec takes a tensor. */
typedef enum { ATTN_TAKES_NOT, ATTN_TAKES_OPTIONAL, ATTN_TAKES_REQUIRED } attn_takes;

/*
 * One input or output of a family's call, as `attngen run` names it: its
 * option, what it holds (as the messages say it), its shape as named dims
 * (a leading ATTN_DIM_BATCH may be left out of a file where the batch is 1),
 * its storage type, and the condition under which a spec takes it: takes
 * returns it and writes the condition in words for the messages ("has
 * padding", "has no padding"); NULL: every spec takes it.  by_option: the
 * messages about it start with the option rather than the file.  A table
 * ends with an entry whose opt is NULL; an option may have several entries
 * (one per condition, or the two files of --state-in, S and z).  replaces:
 * for an output updated in place, the option of the input whose file it may
 * name (every other input's file it must not).
 */
typedef struct {
    const char *opt;
    const char *name;
    int output;
    int ndim;
    attn_dim dims[4];
    attn_store store;
    attn_takes (*takes)(const attn_spec *spec, char *why, size_t len);
    int by_option;
    const char *replaces;
} attn_case_tensor;

/* A dim's name ("seq_q", "key_dim + query_dim") and its value for a spec and
   a call's batch, seq_q and seq_k (-1 for ATTN_DIM_ROWS). */
const char *attn_dim_name(attn_dim d);
int64_t attn_dim_value(attn_dim d, const attn_spec *spec, int64_t batch, int64_t seq_q, int64_t seq_k);
/* The entry of table for opt that spec takes (else its first entry for opt);
   NULL when the table has none. */
const attn_case_tensor *attn_case_tensor_find(const attn_case_tensor *table, const char *opt, const attn_spec *spec);
/* Whether spec takes t (ATTN_TAKES_*), and why in words in why. */
attn_takes attn_case_tensor_takes(const attn_case_tensor *t, const attn_spec *spec, char *why, size_t len);
/* A takes() answer: not taken unless cond, then required or optional; why
   is yes or no. */
attn_takes attn_takes_when(int cond, int required, char *why, size_t len, const char *yes, const char *no);
/* The conditions every family shares: padding (--seqlens-k), a mask. */
attn_takes attn_takes_padding(const attn_spec *spec, char *why, size_t len);
attn_takes attn_takes_mask(const attn_spec *spec, char *why, size_t len);

/*
 * What the harness asks of a family.  A case's state is the family's own
 * struct (state_size bytes, allocated by the harness, zeroed).  build
 * makes the inputs and outputs of one case from its seed and shape (the
 * outputs reset); on failure it leaves nothing to free.  reference runs the
 * reference on the stored inputs and keeps its results in the state;
 * run runs the direction's kernel or variant (attn_case_kernel) with the given threads;
 * compare checks the outputs of the last run against the reference's with
 * the family's tolerance, gaps included; reset puts the outputs (and any
 * in/out state) back to what they were before a run; outputs lists the
 * output buffers (for the bitwise comparison of two thread counts); free
 * releases everything build and reference made; default_cases writes the
 * family's shape matrix; errors names the worst errors of a result by the
 * family's outputs (attn_verify_errors_string).
 *
 * tensors lists the family's inputs and outputs by name (attn_case_tensor):
 * what `attngen run` reads and writes, checks and allocates.
 */
typedef struct {
    const char *name;
    size_t state_size;
    attn_status (*build)(void *state, const attn_spec *spec, const attn_case *c);
    attn_status (*reference)(void *state);
    attn_status (*run)(void *state, const attn_case_kernel *k, int threads);
    void (*compare)(const void *state, const char *shape, attn_verify_result *res);
    void (*reset)(void *state);
    int (*outputs)(const void *state, attn_case_output *out);
    void (*free)(void *state);
    int (*default_cases)(const attn_spec *spec, attn_case *out, int max, int quick);
    void (*errors)(const attn_spec *spec, const attn_verify_result *res, char *buf, size_t len);
    /* ---- what `attngen bench` asks of a built case (attn_bench_main.c) ---- */
    /* flops: the FLOPs the bench counts for a run of the case, named by
       flops_counted in its --json ("visible_scores": 2 * visible * (D + Dv)
       for sdpa, "linear_chunked": attn_reference_linear_flops, "classic":
       attn_reference_classic_flops, "backward": 2.5 times the forward's
       visible-score count); visible: the case's visible scores (its mask,
       causality, window and key lengths), -1 where the family has none;
       args: the kernel's arguments of the case (attn_args,
       attn_classic_args or attn_bwd_args), which the baselines read;
       widened: the args with the stored inputs widened to f32, the
       reference's (outputs as args has them), or NULL where the family
       keeps no widened copies (the bench widens them itself) */
    double (*flops)(const void *state);
    const char *flops_counted;
    int64_t (*visible)(const void *state);
    const void *(*args)(const void *state);
    void (*widened)(const void *state, void *args);
    /* `attngen run`'s view of the family */
    const attn_case_tensor *tensors;
} attn_case_ops;

/* The ops of a spec's family for a direction; NULL when it has none. */
const attn_case_ops *attn_case_ops_for(const attn_spec *spec, attn_direction dir);

extern const attn_case_ops attn_cases_sdpa_fwd;    /* attn_cases_sdpa.c */
extern const attn_case_ops attn_cases_linear_fwd;  /* attn_cases_linear.c */
extern const attn_case_ops attn_cases_classic_fwd; /* attn_cases_classic.c */
extern const attn_case_ops attn_cases_sdpa_bwd;    /* attn_cases_sdpa_bwd.c */

/* ---- deterministic random inputs ---------------------------------------- */

typedef struct {
    uint64_t state;
    double spare; /* the second normal of the last pair drawn */
    int has_spare;
} attn_rng;

void attn_rng_init(attn_rng *r, uint64_t seed);
uint64_t attn_rng_next(attn_rng *r);  /* splitmix64 */
double attn_rng_uniform(attn_rng *r); /* uniform in (0, 1] */
float attn_rng_normal(attn_rng *r);   /* N(0, 1) */
int64_t attn_rng_range(attn_rng *r, int64_t n); /* 0..n inclusive */

/* The start of a case's build: ATTN_ERR_SHAPE for a negative length, else
   the stream of its seed in *r and ATTN_OK. */
attn_status attn_case_start(const attn_case *c, attn_rng *r);

/* seqlens_k of a padded case: Lk for every batch, or (ragged) a mix of 0, Lk
   and random lengths; one draw per batch either way. */
void attn_fill_seqlens(int32_t *seqlens, int64_t B, int64_t Lk, int ragged, attn_rng *r);

/* ---- layouts ------------------------------------------------------------ */

/* A 4-D tensor's extents and element strides, and its element span. */
typedef struct {
    int64_t ext[4], str[4];
    size_t span; /* 1 + the largest offset; 0 when empty */
} attn_layout4;

int attn_layout_span(attn_layout4 *l); /* sets l->span; -1 when absurdly large */
/* [B][L][H][dim], last dim contiguous.  style 0: contiguous BSHD; 1: BSHD
   with padded head, row and batch strides; 2: heads outermost, padded. */
void attn_tensor_layout(attn_layout4 *l, int64_t b, int64_t len, int64_t h, int64_t dim, int style);
/* [B][Hq][Lq][Lk].  style 0: dense; 1: padded dense; 2: one [Lq][Lk] matrix
   broadcast over b and h; 3: [B][1][Lq][Lk] broadcast over h; 4: stored
   transposed (a key stride that is not 1). */
void attn_mask_layout(attn_layout4 *l, int64_t b, int64_t hq, int64_t lq, int64_t lk, int style);
int64_t attn_offset4(const attn_layout4 *l, int64_t a, int64_t b, int64_t c, int64_t d);
/* The layout styles of a strided case, drawn first from its stream (0, 0
   when not strided); the weights' style comes from the seed alone. */
void attn_case_styles(const attn_case *c, attn_rng *r, int *style, int *mstyle);
int attn_weights_style(const attn_case *c);

/* ---- buffers and storage types ------------------------------------------ */

/* Bit patterns of a storage type: an output's gaps (must survive) and its
   elements before the run (must be overwritten); quiet NaNs. */
uint32_t attn_gap_bits(attn_dtype dtype);
uint32_t attn_unset_bits(attn_dtype dtype);
uint32_t attn_load_bits(attn_dtype dtype, const void *base, size_t i);
void attn_store_bits(attn_dtype dtype, void *base, size_t i, uint32_t bits);
float attn_load_value(attn_dtype dtype, const void *base, size_t i);

void attn_fill_nan(float *p, size_t n);
/* Every element of a [B][L][H][dim] tensor N(0,1), gaps NaN; rows at or
   past valid[b] (valid not NULL) NaN. */
void attn_fill_tensor(float *base, const attn_layout4 *l, const int32_t *valid, attn_rng *r);
/* An output's span: elements (described[e] != 0) "unset", gaps the sentinel. */
void attn_reset_output(attn_dtype dtype, void *base, const unsigned char *described, size_t span);
/* Per element of l's span, 1 when it is an element of the tensor (not a
   gap); l->span + 1 bytes, NULL when out of memory. */
unsigned char *attn_describe(const attn_layout4 *l);

int attn_guard_floats(attn_guard_buf *g, size_t n); /* 0 or -1 */
/* From now on (on != 0), attn_guard_alloc makes buffers as a serving engine
   holds its tensors, 2 MiB aligned and backed by transparent huge pages
   where the system offers them on request, without guard pages: the
   bench's cases (attn_bench_main.c); 0 goes back to guard pages. */
void attn_guard_huge_pages(int on);
/* n elements of dtype against a guard page, and *wide, n floats for the
   widened values (the same memory for f32; n * 32 for a block type's n
   blocks).  0 or -1. */
int attn_guard_stored(attn_guard_buf *g, float **wide, attn_dtype dtype, size_t n);
void attn_free_wide(float **wide, const attn_guard_buf *stored); /* unless it is the stored tensor */

/* ---- the shape matrix --------------------------------------------------- */

/* The cases written so far: each gets its seed (and, with dropout, its
   dropout seed and offset) from its index. */
typedef struct {
    attn_case *out;
    int max, n, padding, dropout;
} attn_case_list;

/* Appends a case (nothing when full or a length is negative); ragged only
   with padding. */
void attn_case_list_add(attn_case_list *l, int64_t batch, int64_t lq, int64_t lk, int strided, int ragged,
                        int threads);
/* attn_case_list_add for n rows of { batch, Lq, Lk, strided, ragged, threads } */
void attn_case_list_rows(attn_case_list *l, const int64_t (*rows)[6], size_t n);

/* ---- comparison --------------------------------------------------------- */

/* Whether x matches ref: NaN == NaN, equal infinities, else within tol. */
int attn_values_agree(double x, double ref, double tol, double *err, double *ratio);
/* Records one comparison; label is read only for the first failure. */
void attn_verify_note(attn_verify_result *res, int ok, double err, double ratio, double *max_err, const char *label,
                      double got, double want, const attn_case *c);
/* The gaps of an output (described[e] == 0) must still hold the sentinel. */
void attn_verify_gaps(attn_verify_result *res, const char *name, attn_dtype dtype, const void *base,
                      const unsigned char *described, size_t span, const char *shape);
/* " stored as bf16" for an output not stored as f32, else "". */
const char *attn_stored_as(attn_dtype dtype, char *buf, size_t len);

#endif /* ATTN_CASES_H */
