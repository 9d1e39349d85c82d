-- The backward pass with the score terms and masks together: top-left
-- causal window with global tokens, softcap, ALiBi, dropout and sinks, an
-- MQA head layout, a bias tensor not needed here (t_bwd_bf16 has one); D = Dv, so the
-- vector variants take the products on the lib/ micro-kernels (t_bwd_causal_gqa, D != Dv, the
-- backward's own blocked products).
return {
  name = "t_bwd_masks",
  heads_q = 4,
  heads_kv = 1,
  head_dim = 24,
  head_dim_v = 24,
  causal = "top_left",
  window = { left = 9, right = 0 },
  global_tokens = 3,
  softcap = 20,
  alibi = true,
  dropout = true,
  sinks = true,
  backward = true,
  tile = { q = 8, kv = 16 },
  isa = { "avx512", "avx2", "neon", "scalar" },
}
