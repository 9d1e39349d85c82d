/*
 * attn_cpu_profiles.h - the CPU profiles attn_cpu() picks from, first match
 * first.  Generated from generator/cpu/NAME.lua by scripts/gen_cpu_profiles.lua
 * (make cpu-profiles); do not edit: a new CPU is a new module there.
 * Included by attn_runtime.c only.
 */
#ifndef ATTN_CPU_PROFILES_H
#define ATTN_CPU_PROFILES_H

typedef struct attn_cpu_entry {
    /* which CPUs: cpuid's vendor string (NULL: any), display family and
       model ranges, an attn_isa the CPU must run (-1: none) */
    const char *vendor;
    int family_lo, family_hi, model_lo, model_hi, isa;
    /* the profile's name (its module) */
    const char *name;
    /* L1 data cache of a core, where the OS does not say */
    int l1d_bytes;
    /* L2 cache of a core, where the OS does not say */
    int l2_bytes;
    /* the blocked decode kernel's prefetch of its next block: none, into L1 or into L2 */
    int decode_prefetch;
    /* the streaming decode kernel reads an f32 cache two keys a step */
    int decode_key_pairs;
    /* the blocked decode kernel splits rows of two P*V calls in even halves */
    int decode_even_rows;
    /* the blocked decode kernel scores up to a quarter vector of rows in half-width pairs */
    int decode_half_pairs;
    /* the most rows a kv head the streaming decode kernel takes */
    int decode_stream_rows;
    /* the same where the blocked kernel scores in half-width pairs (and decode_half_pairs is on) */
    int decode_stream_rows_half_pairs;
    /* the dispatch takes an avx512bf16 variant (vdpbf16ps) over an avx512 one */
    int bf16_dot;
} attn_cpu_entry;

static const attn_cpu_entry attn_cpu_profiles[] = {
    /* AMD Zen 5 and later: generator/cpu/zen5.lua */
    {
      .vendor = "AuthenticAMD", .family_lo = 0x1a, .family_hi = 0xfff, .model_lo = 0x0,
      .model_hi = 0xfff, .isa = ATTN_ISA_AVX512, .name = "zen5", .l1d_bytes = 49152,
      .l2_bytes = 1048576, .decode_prefetch = ATTN_PREFETCH_L2, .decode_key_pairs = 0,
      .decode_even_rows = 1, .decode_half_pairs = 1, .decode_stream_rows = 4,
      .decode_stream_rows_half_pairs = 1, .bf16_dot = 1
    },
    /* AMD Zen 4: generator/cpu/zen4.lua */
    {
      .vendor = "AuthenticAMD", .family_lo = 0x19, .family_hi = 0x19, .model_lo = 0x0,
      .model_hi = 0xfff, .isa = ATTN_ISA_AVX512, .name = "zen4", .l1d_bytes = 32768,
      .l2_bytes = 1048576, .decode_prefetch = ATTN_PREFETCH_L2, .decode_key_pairs = 1,
      .decode_even_rows = 1, .decode_half_pairs = 1, .decode_stream_rows = 1,
      .decode_stream_rows_half_pairs = 1, .bf16_dot = 1
    },
    /* Intel CPUs: generator/cpu/intel.lua */
    {
      .vendor = "GenuineIntel", .family_lo = 0x0, .family_hi = 0xfff, .model_lo = 0x0,
      .model_hi = 0xfff, .isa = -1, .name = "intel", .l1d_bytes = 49152, .l2_bytes = 2097152,
      .decode_prefetch = ATTN_PREFETCH_NONE, .decode_key_pairs = 0, .decode_even_rows = 0,
      .decode_half_pairs = 0, .decode_stream_rows = 4, .decode_stream_rows_half_pairs = 4,
      .bf16_dot = 0
    },
    /* every CPU no other profile matches: generator/cpu/generic.lua */
    {
      .vendor = NULL, .family_lo = 0x0, .family_hi = 0xfff, .model_lo = 0x0, .model_hi = 0xfff,
      .isa = -1, .name = "generic", .l1d_bytes = 32768, .l2_bytes = 1048576,
      .decode_prefetch = ATTN_PREFETCH_L1, .decode_key_pairs = 0, .decode_even_rows = 0,
      .decode_half_pairs = 0, .decode_stream_rows = 4, .decode_stream_rows_half_pairs = 4,
      .bf16_dot = 1
    }
};

#endif /* ATTN_CPU_PROFILES_H */
