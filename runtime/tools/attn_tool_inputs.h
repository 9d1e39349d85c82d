/*
 * attn_tool_inputs.h - the random inputs of the timing programs (attn_bench,
 * attn_tune), so that both time kernels on the same numbers in the same kind
 * of memory.  Included by one translation unit each; not vendored.
 */
#ifndef ATTN_TOOL_INPUTS_H
#define ATTN_TOOL_INPUTS_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "attn_runtime.h"

/* splitmix64 -> uniform in [-1.7, 1.7) */
static float attn_tool_rnd(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (3.4 / 9007199254740992.0) - 1.7);
}

/* bytes of memory held as a serving engine would hold a tensor: 2 MiB
   aligned and, where the kernel offers transparent huge pages on request,
   backed by them (a KV cache read with a stride of a page otherwise costs a
   TLB miss per row).  Released with free(); NULL when out of memory. */
static void *attn_tool_tensor_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    const size_t rounded = (bytes + huge - 1) & ~(huge - 1);
    void *p = NULL;
    if (bytes > SIZE_MAX - huge) return NULL;
    if (posix_memalign(&p, huge, rounded ? rounded : huge) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

/* n random floats from seed, in such memory. */
static float *attn_tool_random_floats(size_t n, uint64_t seed)
{
    float *p;
    size_t i;
    if (n > SIZE_MAX / sizeof(float)) return NULL;
    p = (float *)attn_tool_tensor_alloc(n * sizeof(float));
    if (!p) return NULL;
    for (i = 0; i < n; i++) p[i] = attn_tool_rnd(&seed);
    return p;
}

/* The n floats of src stored as dtype (rounded to nearest even) in such
   memory; for f32, src itself (nothing allocated: see attn_tool_free_stored). */
static void *attn_tool_stored(attn_dtype dtype, float *src, size_t n)
{
    /* a block type (q8_0, q4_0): n values are n / 32 blocks */
    const size_t values = (size_t)(attn_dtype_values(dtype) > 0 ? attn_dtype_values(dtype) : 1);
    void *p;
    if (dtype == ATTN_DTYPE_F32 || !src) return src;
    if (n / values > SIZE_MAX / attn_dtype_size(dtype)) return NULL;
    p = attn_tool_tensor_alloc(n / values * attn_dtype_size(dtype));
    if (!p) return NULL;
    attn_f32_to_dtype_array(dtype, src, p, n);
    return p;
}

/* Frees what attn_tool_stored returned for src. */
static void attn_tool_free_stored(void *stored, const float *src)
{
    if (stored != (const void *)src) free(stored);
}

/* qk_norm's weights of a spec with qk_norm (NULL otherwise, or when out of
   memory): q_norm_w then k_norm_w, [head_dim] each, random in 0.5..1.5 as
   the factor (offset + w) the rows are multiplied by.  Released with free().
   (The tuner's; the bench's cases make their own, so it may go unused.) */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static float *attn_tool_qk_norm_weights(const attn_spec *spec, attn_args *args)
{
    float *w;
    int d;
    if (spec->family != ATTN_FAMILY_SDPA || !spec->qk_norm) return NULL;
    w = (float *)malloc(sizeof(float) * (size_t)(2 * spec->head_dim));
    if (!w) return NULL;
    {
        uint64_t seed = 5;
        for (d = 0; d < 2 * spec->head_dim; d++)
            w[d] = (spec->qk_norm_offset ? 0.0f : 1.0f) + attn_tool_rnd(&seed) / 3.4f;
    }
    args->q_norm_w = w;
    args->k_norm_w = w + spec->head_dim;
    return w;
}

#endif
