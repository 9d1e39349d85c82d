--- The profile of every CPU no other module matches (older AMD cores, AVX2
-- only; AArch64; anything else): the choices that measured right or
-- harmless on the 2-core AVX2 EPYC, the only such machine measured.
return {
  name = "generic",
  what = "every CPU no other profile matches",
  match = {},
  -- sizes where the OS does not tell them (the runtime reads sysconf or sysfs first)
  l1d_bytes = 32 * 1024,
  l2_bytes = 1024 * 1024,
  -- AVX2 EPYC, Llama-3-8B, 32768 keys: Lq 2 28.9-30.2 ms with the prefetch into L1, 34.6-35.2 without
  decode_prefetch = "l1",
  -- one key a step keeps the read order the hardware prefetchers follow (Zen 5 f32: 7.8 ms, 10.0 two keys)
  decode_key_pairs = false,
  -- the widest P*V call first; even halves measured only on Zen 4 and 5
  decode_even_rows = false,
  -- the half-width pairs pay only where 512-bit instructions run in halves or whole (Zen 4, 5)
  decode_half_pairs = false,
  -- the streaming kernel takes every row it holds
  decode_stream_rows = 4,
  decode_stream_rows_half_pairs = 4,
  -- vdpbf16ps where the CPU has it: only Intel CPUs measured it slower than f32 products
  bf16_dot = true,
}
