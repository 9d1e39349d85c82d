-- The backward pass (backward = true) of a causal GQA config with padding
-- and a boolean mask: dQ, dK and dV against the float64 reference on the
-- quick shapes, on AVX-512, AVX2 and the scalar variant.
return {
  name = "t_bwd_causal_gqa",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 16,
  head_dim_v = 24,
  causal = true,
  padding = true,
  mask = "bool",
  rope = { style = "gptj", dim = 12, theta = 10000 }, -- dQ rotated back; a partial rotary dim
  backward = true,
  tile = { q = 8, kv = 16 },
  isa = { "avx512", "avx2", "neon", "scalar" },
}
