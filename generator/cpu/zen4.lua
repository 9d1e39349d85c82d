--- AMD Zen 4 (family 19h with AVX-512; Zen 3, the same family, has none and
-- takes the generic profile): each 512-bit instruction runs in two 256-bit
-- halves, and L1d is 32 KiB.  Measured on a 2-core Zen 4 VM (1 MiB of L2,
-- one thread reads 29-32 GB/s, FMA peak 117 GFLOP/s).
return {
  name = "zen4",
  what = "AMD Zen 4",
  match = { vendor = "AuthenticAMD", family = { 0x19, 0x19 }, isa = "avx512" },
  l1d_bytes = 32 * 1024,
  l2_bytes = 1024 * 1024,
  -- into L2: a block overruns the 32 KiB L1 (Llama-3-8B, 32768 keys, Lq 2: L1 32.4, none 25.3-25.7, L2 16.9-17.8 ms)
  decode_prefetch = "l2",
  -- two keys a step: the one-key step is bound by its passes over Q and O (Llama-3-8B, Lq 1, 32768 keys: 19 -> 14 ms)
  decode_key_pairs = true,
  -- 8 rows as 4 + 4, not 6 + 2: a call of 2 rows waits on its loads of V (Llama-3-8B, Lq 2: 15.0 -> 14.3-14.5 ms)
  decode_even_rows = true,
  -- up to a quarter vector of rows in half-width pairs (Llama-3-8B, Lq 1, 32768 keys: 10.9-11.2 -> 9.7-9.8 ms)
  decode_half_pairs = true,
  -- 1 row a kv head: the blocked kernel reads 2-4 faster (Llama-3-8B, Lq 1, 4096 keys: 1.28 -> 1.02 ms)
  decode_stream_rows = 1,
  decode_stream_rows_half_pairs = 1,
  -- vdpbf16ps where the kernel has an avx512bf16 variant (Zen 5's choice; not timed against f32 products on Zen 4)
  bf16_dot = true,
}
