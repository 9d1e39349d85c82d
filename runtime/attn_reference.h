/*
 * attn_reference.h - the naive reference of the sdpa, linear, additive and
 * luong families' semantics (docs/config.md).
 *
 * Not vendored: used by the tests, `attngen check` and `attngen run`'s
 * tooling.  Plain loops, double accumulation, the rules written literally.
 * Its own interface is f32 whatever the spec's storage types: it reads
 * args->q, k, v as const float * and writes args->o as float * (strides in
 * floats).  For a kernel that stores Q, K, V or O as bf16 or f16, the
 * caller widens the stored inputs to f32 first (exactly: attn_bf16_to_f32,
 * attn_f16_to_f32), so the reference computes on exactly the values the
 * kernel reads, and compares the kernel's O, widened, with the f32 O
 * written here, within ATTN_REF_TOL below.
 */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include <math.h> /* fabs and isfinite, for ATTN_REF_TOL */

#include "attn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How close a kernel's output must come to this reference: elementwise, on
 * N(0,1) inputs at the default scale (docs/testing.md),
 *
 *     |x - ref| <= ATTN_REF_TOL_ABS + ATTN_REF_TOL_REL(dtype_o) * |ref|
 *
 * for every element of O, and with ATTN_REF_TOL_REL(ATTN_DTYPE_F32) for
 * every element of LSE (always f32).  NaN must match NaN, infinities must
 * be equal.  The reasons:
 *   - f32 O (and LSE), 1e-5 + 1e-5 |ref|: the kernels accumulate in f32
 *     with a reordered (online) softmax; on these inputs their rounding
 *     error stays around 1e-7..1e-6, so the bound leaves ~10x headroom,
 *     while a real bug (a wrong mask bit, a skipped tile, a lost row) lands
 *     orders of magnitude above it.
 *   - bf16 O, 1e-5 + 2^-8 |ref|, and f16 O, 1e-5 + 2^-10 |ref|: the same
 *     f32 computation (every score, max, sum and the O accumulator stay
 *     f32, and the inputs are the stored values on both sides), then one
 *     rounding to nearest of the result: half an ulp of the stored value,
 *     at most 2^-8 |x| with bf16's 8 significant bits (the bound is that,
 *     exactly) and 2^-11 |x| with f16's 11 (the bound leaves a factor 2).
 *     The f32 error (~1e-6 |ref| on |ref| of a few units) fits in the
 *     absolute term.
 */
#define ATTN_REF_TOL_ABS 1e-5
#define ATTN_REF_TOL_REL_F32 1e-5
#define ATTN_REF_TOL_REL_BF16 (1.0 / 256.0)
#define ATTN_REF_TOL_REL_F16 (1.0 / 1024.0)
#define ATTN_REF_TOL_REL(dtype)                                        \
    ((dtype) == ATTN_DTYPE_BF16  ? ATTN_REF_TOL_REL_BF16               \
     : (dtype) == ATTN_DTYPE_F16 ? ATTN_REF_TOL_REL_F16                \
                                 : ATTN_REF_TOL_REL_F32)
/*
 * With rope (spec->rope_style), the f32 relative bound is 2e-5: the kernel
 * rotates each packed query row in double from the f32 row already scaled
 * (one more rounding of every element), and its angles, exact to f32, are
 * rounded to f32 where the reference keeps double; on N(0,1) inputs the
 * scores move by a few 1e-7 more, which 1e-5 left too little room for over
 * rows of a thousand keys.  The bf16 and f16 bounds, a rounding of the
 * stored O, are unchanged.
 */
#define ATTN_REF_TOL_REL_F32_ROPE 2e-5
#define ATTN_REF_TOL_REL_SPEC(spec, dtype)                                          \
    ((dtype) == ATTN_DTYPE_F32 && (spec)->rope_style != ATTN_ROPE_NONE ? ATTN_REF_TOL_REL_F32_ROPE \
                                                                       : ATTN_REF_TOL_REL(dtype))
/* The bound itself, for an output of storage type dtype. */
#define ATTN_REF_TOL(dtype, ref) (ATTN_REF_TOL_ABS + ATTN_REF_TOL_REL(dtype) * fabs(ref))

/*
 * The attention weights P (configs with weights, always f32), elementwise:
 *
 *     |P - P_ref| <= 1e-6 + 2e-5 * P_ref
 *
 * P = 2^(s - m) / l in the kernels, exp(s - LSE) here.  A weight is in
 * [0, 1], and its relative error is that of its exponent: the f32 score
 * (D products summed in f32, a few 1e-7 of the scores' scale), the max and
 * the row sum l (a reordered f32 sum of up to Lk terms, ~1e-6), and exp2's
 * 1 ulp; on N(0,1) inputs these stay around 1e-6 relative, so 2e-5 leaves
 * ~10x headroom.  The absolute 1e-6 covers weights near 0, where a relative
 * bound alone would demand more than f32 rounding of the tiny terms gives.
 * With matmul = "bf16" the weights come from the f32 scores (only P*V rounds
 * them to bf16), so the same bound holds there.  A masked key, a key past
 * seqlens_k and every key of a row that sees none must be exactly 0.
 */
#define ATTN_REF_TOL_ABS_P 1e-6
#define ATTN_REF_TOL_REL_P 2e-5
#define ATTN_REF_TOL_P(ref) (ATTN_REF_TOL_ABS_P + ATTN_REF_TOL_REL_P * fabs(ref))

/*
 * Each row's attention entropy E (configs with entropy, always f32):
 *
 *     |E - E_ref| <= 2e-5 + 1e-5 * |LSE_ref|
 *
 * The kernels keep t = sum_j 2^(s_j - m) s_j beside the row sum l and form
 * E = LSE - ln 2 * t / l: a difference of two terms of the scores' scale,
 * so its rounding is that of LSE (ATTN_REF_TOL's 1e-5 relative, a few 1e-7
 * in practice) plus the f32 sum of t (~1e-6 of the mean score), here
 * exp(s_j - LSE) (s_j - LSE) summed in double.  A row with no visible key
 * gives exactly 0 (LSE_ref = -inf: the absolute bound alone).
 */
#define ATTN_REF_TOL_ABS_E 2e-5
#define ATTN_REF_TOL_REL_E 1e-5
#define ATTN_REF_TOL_E(lse_ref) \
    (ATTN_REF_TOL_ABS_E + (isfinite(lse_ref) ? ATTN_REF_TOL_REL_E * fabs(lse_ref) : 0.0))

/*
 * With matmul = "bf16" (spec->matmul == ATTN_DTYPE_BF16), O's bound is
 * 1e-2 + 1e-2 |ref| whatever O's storage type: the products may multiply
 * bf16-rounded operands, and P, a weight in [0, 1], rounded to bf16 is off by
 * up to 2^-9 of itself; these errors do not cancel reliably over a row of
 * keys, and the 1e-2 bound (the one PyTorch's and oneDNN's bf16 attention
 * are held to) is 5x the worst of them.  Q and K are stored as bf16 already,
 * so the scores, and LSE, keep the f32 bound.
 */
#define ATTN_REF_TOL_MATMUL_BF16 1e-2
/*
 * With matmul = "int8" (spec->matmul == ATTN_DTYPE_Q8_0: Q quantized to q8_0
 * blocks, Q.K integer block dots scaled by d_q d_k), the reference computes on
 * the same quantized Q (each row through attn_quantize_q8_0 and back), so the
 * quantization itself is no error; what is left is f32 rounding in a longer
 * chain (the block scale times the score scale, one product a block, and their
 * f32 sum), and O's bound is the f32 one times ATTN_REF_TOL_INT8 (plus the
 * rounding of a bf16 or f16 O, as without it).  LSE keeps the f32 bound.
 */
#define ATTN_REF_TOL_INT8 4.0
/* the f32 bound's share of O's bound grows by this (a bf16 or f16 O keeps its rounding) */
#define ATTN_REF_TOL_O_EXTRA(spec) ((spec)->matmul == ATTN_DTYPE_Q8_0 ? ATTN_REF_TOL_INT8 - 1.0 : 0.0)
/* O's bounds for a kernel of spec: absolute, relative, and the bound itself. */
#define ATTN_REF_TOL_ABS_O(spec) \
    ((spec)->matmul == ATTN_DTYPE_BF16 ? ATTN_REF_TOL_MATMUL_BF16 \
                                       : (1.0 + ATTN_REF_TOL_O_EXTRA(spec)) * ATTN_REF_TOL_ABS)
#define ATTN_REF_TOL_REL_O(spec) \
    ((spec)->matmul == ATTN_DTYPE_BF16 ? ATTN_REF_TOL_MATMUL_BF16 \
                                       : ATTN_REF_TOL_REL_SPEC(spec, (spec)->dtype_o) + ATTN_REF_TOL_O_EXTRA(spec) * ATTN_REF_TOL_REL_F32)
#define ATTN_REF_TOL_O(spec, ref) (ATTN_REF_TOL_ABS_O(spec) + ATTN_REF_TOL_REL_O(spec) * fabs(ref))

/*
 * Linear attention (spec->family ATTN_FAMILY_LINEAR).  O keeps the bounds
 * above (ATTN_REF_TOL_O): each row is a weighted average of V rows (and,
 * with a state, of the state's S / z) with positive weights phi(q) . phi(k)
 * over a positive denominator, so its f32 rounding error is that of sdpa's
 * P*V, about 1e-7..1e-6 on N(0,1) inputs, and the bf16 / f16 bounds are
 * again one rounding of the stored result.  Checked on every linear test
 * config (attn_verify_default_cases and check's full matrix).
 *
 * The state written back (spec->state), elementwise:
 *
 *     |x - ref| <= ATTN_REF_TOL_ABS_STATE + ATTN_REF_TOL_REL_STATE * sum|terms|
 *
 * where sum|terms| is |S0| + sum_j |phi(k_j)_d v_j,e| for S[d][e] (|z0| +
 * sum_j phi(k_j)_d for z[d]) over the keys folded in
 * (attn_reference_linear_state_bound).  Each element is a sum of up to
 * Lk + 1 terms of either sign, summed in f32 in whatever order the kernel
 * chunks and threads them; its rounding error grows with the terms, not
 * with the result (which may cancel to near 0), so the bound is relative to
 * sum|terms|.  The worst case is (n - 1) 2^-24 sum|terms|, reached only
 * when every rounding goes the same way; in practice the error is about
 * sqrt(n) 2^-24 sum|terms| (~2e-6 at n = 1025), plus a few ulps of exp in
 * phi.  1e-5 leaves 5-10x headroom at the test lengths, while a key folded
 * twice or not at all, or a transposed S, is off by a whole term (~0.1-1
 * of sum|terms| / n) in many elements.  The state is f32 whatever the
 * storage types, so the bound is the same for bf16 and f16 configs.
 */
#define ATTN_REF_TOL_ABS_STATE 1e-6
#define ATTN_REF_TOL_REL_STATE 1e-5
#define ATTN_REF_TOL_STATE(sum_abs) (ATTN_REF_TOL_ABS_STATE + ATTN_REF_TOL_REL_STATE * (sum_abs))

/*
 * The additive and luong families (attn_classic_args).  Each score e_ij is
 * a sum computed in f32: s_i . h_j (dot), h_j . (W s_i) (general), or
 * v . tanh(x) with x = W_s s_i + W_h h_j + b (additive; concat alike), and
 * the kernels' tanh has about 2e-7 absolute error.  A sum of n f32 terms is
 * off by at most about n 2^-24 sum|terms|, in practice sqrt(n) 2^-24
 * sum|terms|; so a score is off by
 *
 *     |de_ij| <= ATTN_REF_TOL_SCORE * T_ij
 *
 * where T_ij, its sum|terms|, is sum_d |s_d h_d| (dot), sum_e |h_e|
 * sum_d |W_ed s_d| (general), and sum_a |v_a| (1 + sum|terms| of x_a)
 * (additive, concat: the tanh's error, and its argument's, which tanh'
 * <= 1 passes on).  5e-7 is about 8 2^-24: the kernels sum in vector lanes
 * and blocks, so their error grows like sqrt(n) 2^-24 sum|terms| rather than
 * n, and the errors of the x_a average out over a.  Measured on the test
 * configs (every ISA, 48 inputs each, Lk up to 1025, Da up to 1000), a
 * score's error is at most 0.05-0.48 of it (0.48: luong concat; 0.44: dot
 * summed in scalar order), so no ISA is within 2x of the bound, while a
 * parameter read at 16 bits, a lost bias or a tanh off by 1e-4 is off by
 * hundreds of times it.  Through the softmax, da_j = a_j (de_j
 * - sum_k a_k de_k), so with delta_i = ATTN_REF_TOL_SCORE max_j T_ij over
 * row i's visible keys, |da_ij| <= 2 delta_i a_ij and
 * |dc_id| <= 2 delta_i sum_j a_ij |h_jd|.  The bounds, elementwise:
 *
 *     C: |x - ref| <= ATTN_REF_TOL(dtype_o, ref) + 2 delta_i sum_j a_ij |h_jd|
 *     A: |x - ref| <= ATTN_REF_TOL_P(ref) + 2 delta_i ref
 *
 * ATTN_REF_TOL and ATTN_REF_TOL_P (above) keep absorbing the rounding of
 * the softmax's f32 sum, of C's f32 accumulation and of C's storage type.
 * attn_reference_classic_bounds computes both per row.  The worst-case
 * propagation (every score off by delta_i, in the worst directions) leaves
 * C and A at 0.006-0.07 (f32) of their bounds in the same measurements,
 * as sdpa's f32 bound leaves it: the errors of different keys' scores
 * cancel in C.  bf16 C runs at 0.96 of its bound (half an ulp, as sdpa's).
 * The score term is relative to T, not to e: scores of N(0,1) states with
 * PyTorch's nn.Linear initialization are O(1) sums of terms of either sign,
 * and with dot scores of wide states T grows like Dh, and with it every f32
 * kernel's error.  A hidden key's weight must be exactly 0, a row that sees no key
 * must give C = 0 exactly.
 */
#define ATTN_REF_TOL_SCORE 5e-7

/*
 * Computes O (and LSE when args->lse is not NULL, and the weights P when
 * spec->weights and args->weights is not NULL) for spec, honouring every
 * stride in args.  Q, K, V and O are f32 arrays here whatever spec's
 * storage types (above), with the element strides of args; the args are
 * checked as the kernel's, so the reference accepts exactly what the
 * kernel accepts.  Returns attn_check_args' status when the args are bad,
 * ATTN_ERR_NOMEM when its scratch allocation fails, else ATTN_OK.
 */
attn_status attn_reference(const attn_spec *spec, const attn_args *args);
/*
 * For a linear spec, attn_reference computes O by the rules of
 * docs/config.md ("linear"): phi(x) = elu(x) + 1, O_i = phi(q_i)^T S_i /
 * (phi(q_i) . z_i + eps) over the keys row i sees (j < Lk_b, and j <= p_i
 * with causal) and the state before the call (spec->state: args->state_s,
 * args->state_z; else 0), in double; it writes no LSE and no weights.  With
 * spec->state it then adds every valid key to args->state_s and
 * args->state_z in place (summed in double, rounded once to f32), as the
 * kernel does.
 */

/*
 * The sum|terms| of ATTN_REF_TOL_STATE for every element of a linear
 * state after a call: s_abs [B][Hkv][D][Dv] and z_abs [B][Hkv][D] (the
 * caller's arrays), from the state before the call (state_s0, state_z0;
 * NULL: zero) and args' K, V and seqlens_k (f32, as for attn_reference).
 * 0, or -1 when the spec is not linear or the args are bad.
 */
int attn_reference_linear_state_bound(const attn_spec *spec, const attn_args *args, const float *state_s0,
                                      const float *state_z0, double *s_abs, double *z_abs);

/*
 * The FLOPs of the chunked algorithm the linear kernels run, for a linear
 * spec (-1 for another family or bad args).  For each batch b (Lk_b valid
 * keys, Lq rows, T = spec->tile_q rows to a chunk):
 *   2 Lk_b D Dv per kv head: every valid key folded into the state;
 *   2 D Dv per query head and row: phi(q)^T S;
 *   with causal, per query head: 2 (D + Dv) per (row, key) of each chunk's
 *   diagonal block, counted in full: the chunk of rows [i0, i1) scores the
 *   keys [clamp(p_i0), clamp(p_(i1-1) + 1)) (clamped to 0..Lk_b), the ones
 *   that are not yet in the state, and masks the upper triangle after.
 * The phi's and the normalizer z (D per key, 2 D per row) are not counted.
 */
double attn_reference_linear_flops(const attn_spec *spec, const attn_args *args);

/*
 * Dropout (spec->dropout): whether the weight of key j for query row i of
 * head h, batch b survives args' dropout_p, dropout_seed and dropout_offset:
 * word (j & 3) of Philox4x32-10 at counter (j >> 2, i, b * Hq + h, offset)
 * under key (seed mod 2^32, seed >> 32) is at least floor(p * 2^32).  The
 * reference scales the softmax's kept weights by 1 / (1 - p) in double and
 * sums them times V; LSE stays the softmax's.
 */
int attn_reference_dropout_kept(const attn_spec *spec, const attn_args *args, int64_t b, int h, int64_t i,
                                int64_t j);

/*
 * The number of visible (b, h, i, j) score pairs, by the same rules: the
 * work a forward pass must do (FLOPs = 2 * count * (D + Dv)).  For a linear
 * spec, the pairs with j < Lk_b (and j <= p_i with causal); its FLOPs are
 * attn_reference_linear_flops instead.  -1 when the args are bad.
 */
int64_t attn_reference_visible_count(const attn_spec *spec, const attn_args *args);

/*
 * The number of (b, kv head, j) key rows that some query row of the kv
 * head's group sees: the K and V rows a forward pass must read at least
 * once (bytes = count * (D + Dv) * attn_dtype_size(spec->dtype_kv); with
 * spec->shared_kv one row of D values a key, count * D * that size).  For
 * a linear spec, every valid key (j < Lk_b): each goes into the state.  -1
 * when the args are bad.
 */
int64_t attn_reference_keys_read(const attn_spec *spec, const attn_args *args);

/*
 * Whether query row i sees key j in batch b, head h: the rule attn_reference
 * applies, with the lengths of args (seq_q, seq_k, and seqlens_k[b] when
 * spec->padding) and, when spec->mask is ATTN_MASK_BOOL, args->mask.  0 for
 * a key at or past the batch's valid length.  The args are not checked: the
 * caller keeps b, i and j inside them (attngen's `plot mask` draws this).
 */
int attn_reference_key_visible(const attn_spec *spec, const attn_args *args, int64_t b, int h,
                               int64_t i, int64_t j);

/*
 * The reference of the additive and luong families (spec->family
 * ATTN_FAMILY_ADDITIVE or ATTN_FAMILY_LUONG), from the rules in
 * attn_runtime.h (attn_classic_args) and docs/config.md, in double with
 * plain loops.  Unlike attn_reference, it reads every tensor in the storage
 * type the spec records (S in dtype_q; H, U and the parameters in dtype_kv,
 * widened exactly, so it computes on exactly what the kernel reads) and
 * writes C in dtype_o (rounded once to nearest even) with args->c_stride,
 * and A (f32) when args->weights is not NULL.  To compare a kernel with it,
 * use attn_reference_classic_bounds, which writes C unrounded as f32 and the
 * error bounds in the same pass (attn_verify does).  The args are checked
 * with attn_check_classic_args; returns its status, ATTN_ERR_NOMEM when its
 * scratch allocation fails, ATTN_ERR_NULL_ARG for a spec of another family,
 * else ATTN_OK.  A row with a NaN score gets NaN in all of C and in A at
 * its visible keys; a row with no visible key gets C = 0 and A = 0.
 */
attn_status attn_reference_classic(const attn_spec *spec, const attn_classic_args *args);

/*
 * The backward pass of an sdpa spec with backward, literally from the
 * formulas of docs/config.md ("backward"), with plain loops: for each kv
 * head, its query heads and rows in order, P_ij = exp(s_ij - LSE_i) with the
 * given LSE (args->fwd.lse), D_i = dO_i . O_i, dV_j += P_ij Z_ij dO_i,
 * dS_ij = P_ij (Z_ij dO_i . V_j - D_i) (times the softcap's 1 - tanh^2),
 * dQ_i += scale dS_ij K_j, dK_j += scale dS_ij Q_i (Z the dropout factor).
 * f32 = 0: in double (the reference); f32 = 1: every sum and product
 * rounded to f32 as it is made (a plain float32 implementation of the same
 * formulas, the yardstick of the kernels' tolerance).  Every tensor is f32
 * (Q, K, V, O, dO widened; dQ, dK, dV written as f32 with args' strides,
 * keys past seqlens_k and rows that see no key 0), and with sinks dsinks
 * (when args->dsinks is not NULL): -sum over b and i of P_sink D_i, P_sink =
 * exp(sinks[h] - LSE_i), and with rel_bias drel_table (when
 * args->drel_table is not NULL): dS_ij (before the softcap's factor) summed
 * into row bucket(j - p_i), column h, over b, h, i and j in order.  With rope, Q_i is the rotated row and dQ_i the
 * rotated row's gradient rotated back; with qk_norm, dQ is taken back through
 * the norm too, and dq_norm_w (when not NULL) gets the weights' gradient,
 * summed in double over b, h and i in that order.  Statuses as
 * attn_check_bwd_args, ATTN_ERR_NOMEM, or ATTN_ERR_TOO_LARGE for head_dim
 * past 512.
 */
attn_status attn_reference_backward(const attn_spec *spec, const attn_bwd_args *args, int f32);

/*
 * The bounds of ATTN_REF_TOL_SCORE for every element: c_tol [B][Lq][Dh]
 * (contiguous; the whole bound, ATTN_REF_TOL of spec->dtype_o included) and
 * w_rel [B][Lq], the 2 delta_i that A's bound adds times the reference
 * weight.  From the same pass, C is written to args->c as f32, not rounded
 * to dtype_o (when args->c is not NULL), and A to args->weights (when not
 * NULL): what a comparison with a kernel needs, in one pass.  Statuses as
 * attn_reference_classic.
 */
attn_status attn_reference_classic_bounds(const attn_spec *spec, const attn_classic_args *args, double *c_tol,
                                          double *w_rel);

/*
 * The FLOPs of one call of a classic kernel, as the bench counts them
 * (-1 for another family or bad args).  Per batch b, with Lk_b valid keys
 * and `pairs` the visible (i, j):
 *   additive, concat: 2 Ds Da per row (W_s s; concat: W's s columns), plus
 *     Da per row with the bias; 2 Dh Da per valid key (W_h h; concat: W's h
 *     columns), not counted for additive when args->u is given (U is an
 *     input then); 3 Da per pair: q_a + k_a, then v_a * tanh(...) summed (2);
 *   general: 2 Ds Dh per row (W s), 2 Dh per pair (h_j . (W s_i));
 *   dot: 2 Ds per pair;
 *   every score: 2 Dh per pair, the context sum_j a_ij h_j.
 * The tanh itself and the softmax (max, exp, sum, the division) are not
 * counted, as for sdpa.
 */
double attn_reference_classic_flops(const attn_spec *spec, const attn_classic_args *args);

/*
 * Whether row i of batch b sees key j in a classic kernel: j < Lk_b
 * (seqlens_k[b] with padding, else seq_k) and, with a bool mask,
 * mask[b][i][j] != 0.  The args are not checked.
 */
int attn_reference_classic_key_visible(const attn_spec *spec, const attn_classic_args *args, int64_t b, int64_t i,
                                       int64_t j);

/* The row of the relative position table (rel_bias) at distance rel = j - p
 * of a spec with rel_bias: T5's bucket (Hugging Face's
 * _relative_position_bucket, with its float32 log truncated to an integer),
 * or clamp(rel, -k, k) + k. */
int64_t attn_reference_rel_bucket(const attn_spec *spec, int64_t rel);

/* The ALiBi paper's slope of head h (0-based) out of n heads. NaN when
   h is outside 0..n-1. */
double attn_reference_alibi_slope(int h, int n);

/* RoPE (spec->rope_style): x[0..rope_dim) rotated at position p, sign = 1
 * (what the reference does to each query row, and a kernel's append to each
 * new key row), or rotated back, sign = -1 (the rotation's transpose: the
 * backward's dQ), in double; nothing without rope (docs/config.md, "rope"). */
void attn_reference_rope(const attn_spec *spec, const attn_args *args, int64_t p, double *x, int sign);

/* qk_norm (spec->qk_norm): x[0..head_dim) RMS-normed and times (offset +
 * w[d]), in double (docs/config.md, "qk_norm"): what the reference does to
 * each query row, and what a kernel's append does to each new key row. */
void attn_reference_qk_norm(const attn_spec *spec, const float *w, double *x);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_REFERENCE_H */
