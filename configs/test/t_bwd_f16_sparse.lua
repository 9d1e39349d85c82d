-- The backward pass over f16 storage (Q, K, V, O and dO in f16, the
-- gradients in f16 too) with the Sparse Transformer's fixed pattern (made
-- causal, as the schema does for sparse), GQA and padding: dQ, dK and dV
-- against the float64 reference on the quick shapes, on AVX-512, AVX2 and
-- the scalar variant (NEON under qemu).
return {
  name = "t_bwd_f16_sparse",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 20,
  head_dim_v = 12,
  sparse = { pattern = "fixed", block = 8, summary = 2 },
  padding = true,
  dtype = "f16",
  qk_norm = { eps = 1e-6, offset = 1 }, -- dQ back through the norm (Gemma's 1 + w)
  backward = true,
  grad_dtype = "storage",
  tile = { q = 8, kv = 16 },
  isa = { "avx512", "avx2", "neon", "scalar" },
}
