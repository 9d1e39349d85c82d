/*
 * attn_reference.h - the naive reference of the sdpa family's semantics
 * (docs/config.md).
 *
 * Not vendored: used by the tests, `attngen check` and `attngen run`'s
 * tooling.  Plain loops, double accumulation, the rules written literally.
 * Its own interface is f32: it reads args->q, k, v as const float * and
 * writes args->o as float *, so it handles the specs whose tensors are all
 * stored as ATTN_DTYPE_F32 (attn_reference_supports), the only storage type
 * kernels have so far.
 */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include "attn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the reference handles spec: Q, K, V and O stored as f32. */
int attn_reference_supports(const attn_spec *spec);

/*
 * Computes O (and LSE when args->lse is not NULL) for spec, honouring every
 * stride in args.  Returns attn_check_args' status when the args are bad,
 * ATTN_ERR_NOMEM when its scratch allocation fails, else ATTN_OK.  A spec
 * attn_reference_supports refuses is the caller's error (check it first):
 * nothing is read or written and the result is ATTN_ERR_SHAPE.
 */
attn_status attn_reference(const attn_spec *spec, const attn_args *args);

/*
 * The number of visible (b, h, i, j) score pairs, by the same rules: the
 * work a forward pass must do (FLOPs = 2 * count * (D + Dv)).  -1 when the
 * args are bad.
 */
int64_t attn_reference_visible_count(const attn_spec *spec, const attn_args *args);

/*
 * The number of (b, kv head, j) key rows that some query row of the kv
 * head's group sees: the K and V rows a forward pass must read at least
 * once (bytes = count * (D + Dv) * sizeof(float)).  -1 when the args are bad.
 */
int64_t attn_reference_keys_read(const attn_spec *spec, const attn_args *args);

/* The ALiBi paper's slope of head h (0-based) out of n heads. NaN when
   h is outside 0..n-1. */
double attn_reference_alibi_slope(int h, int n);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_REFERENCE_H */
