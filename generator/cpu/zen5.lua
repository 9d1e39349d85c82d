--- AMD Zen 5 and later (family 1Ah and up, with AVX-512): 512-bit
-- instructions run whole, L1d is 48 KiB.  Measured on the 2-core Zen 5
-- EPYC VM attngen is developed on (1 MiB of L2).
return {
  name = "zen5",
  what = "AMD Zen 5 and later",
  match = { vendor = "AuthenticAMD", family = { 0x1a, 0xfff }, isa = "avx512" },
  l1d_bytes = 48 * 1024,
  l2_bytes = 1024 * 1024,
  -- into L2, as Zen 4: as fast or faster (Llama-3-8B, Lq 2, 32768 keys: 15.7-18.1 -> 12.2-14.4 ms)
  decode_prefetch = "l2",
  -- one key a step from an f32 cache: the prefetchers' read order (7.8 ms, 10.0 two keys a step)
  decode_key_pairs = false,
  -- 8 rows as 4 + 4 (Llama-3-8B, Lq 2, 32768 keys, prefetch into L2: 12.3-12.7 -> 11.4-12.0 ms)
  decode_even_rows = true,
  -- up to a quarter vector of rows in half-width pairs (Gemma-2-9B, Lq 1, 32768 keys: 29-31 -> 22-24 ms)
  decode_half_pairs = true,
  -- all 4 rows stream where the blocked kernel has no half-width pairs (its dot products measured no faster)
  decode_stream_rows = 4,
  -- 1 row where it has them (Llama-3-8B, Lq 1, 32768 keys: 13.4-14.1 -> 11.5-12.0 ms)
  decode_stream_rows_half_pairs = 1,
  -- vdpbf16ps: prefill about 375 GFLOP/s (D 128, L 4096, one thread), 1.8 times the f32 kernel
  bf16_dot = true,
}
