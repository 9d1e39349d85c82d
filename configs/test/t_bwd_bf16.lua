-- The backward pass on bf16 storage with gradients stored as bf16
-- (grad_dtype = "storage"), a bias tensor, padding, chunks and sinks (dsinks
-- from bf16 O and dO, rows that see no key); and a keep-mask with a strided
-- sparse pattern on f16 Q/K/V (t_bwd_masks has the rest).
return {
  name = "t_bwd_bf16",
  heads_q = 2,
  head_dim = 32,
  mask = "bias",
  padding = true,
  chunk = 12,
  sinks = true,
  dtype = "bf16",
  backward = true,
  grad_dtype = "storage",
  tile = { q = 16, kv = 16 },
  isa = { "avx512", "avx2", "neon", "scalar" },
}
