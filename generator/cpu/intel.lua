--- Intel CPUs (cpuid vendor "GenuineIntel", any family): measured on a
-- Sapphire Rapids class Xeon VM (AVX-512 with BF16, one thread reads about
-- 16-19 GB/s).
return {
  name = "intel",
  what = "Intel CPUs",
  match = { vendor = "GenuineIntel" },
  -- Sapphire Rapids: 48 KiB L1d, 2 MiB L2 a core
  l1d_bytes = 48 * 1024,
  l2_bytes = 2048 * 1024,
  -- no prefetch: the hardware prefetchers alone, 10-35% faster (Llama-3-8B, 32768 keys, Lq 2 27.6-35.8 -> 25.2-27.3 ms)
  decode_prefetch = "none",
  -- one key a step: the read order the hardware prefetchers follow
  decode_key_pairs = false,
  -- the widest P*V call first (not measured against even halves here)
  decode_even_rows = false,
  -- dot products: the half-width pairs were measured faster only on AMD Zen 4 and 5
  decode_half_pairs = false,
  -- the streaming kernel takes every row it holds (Lq 1: 15.2-15.6 ms with its prefetch into L2)
  decode_stream_rows = 4,
  decode_stream_rows_half_pairs = 4,
  -- vdpbf16ps at half the f32 FMA's rate: bf16 products 81-85 GFLOP/s, f32 products on the same tensors 146-148
  bf16_dot = false,
}
