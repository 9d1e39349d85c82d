/*
 * attn_reference.h - the naive reference of DESIGN.md section 3.
 *
 * Not vendored: used by the tests, `attngen check` and `attngen run`'s
 * tooling.  Plain loops, double accumulation, the rules written literally.
 */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include "attn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Computes O (and LSE when args->lse is not NULL) for spec, honouring every
 * stride in args.  Returns attn_check_args' status when the args are bad,
 * ATTN_ERR_NOMEM when its scratch allocation fails, else ATTN_OK.
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
