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

/* splitmix64 -> uniform in [-1.7, 1.7) */
static float attn_tool_rnd(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (3.4 / 9007199254740992.0) - 1.7);
}

/* n random floats from seed, held as a serving engine would hold a tensor:
   2 MiB aligned and, where the kernel offers transparent huge pages on
   request, backed by them (a KV cache read with a stride of a page otherwise
   costs a TLB miss per row).  Released with free(); NULL when out of memory. */
static float *attn_tool_random_floats(size_t n, uint64_t seed)
{
    const size_t bytes = (n * sizeof(float) + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
    float *p = NULL;
    size_t i;
    if (posix_memalign((void **)&p, (size_t)2 << 20, bytes ? bytes : ((size_t)2 << 20)) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    for (i = 0; i < n; i++) p[i] = attn_tool_rnd(&seed);
    return p;
}

#endif
