-- Qwen3-8B: 32 query heads, 8 KV heads (GQA), head dim 128, causal; RoPE (rope_theta 1000000,
-- rotate_half pairs); q_norm and k_norm as qk_norm (RMS norm times w) before it.
-- From `attngen import-hf` of its config.json (tests/hf/qwen3_8b.json).
return {
  name = "qwen3_8b",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  rope = { style = "neox", theta = 1000000 },
  qk_norm = { eps = 1e-6 }, -- rms_norm_eps; weights at run time (args->q_norm_w, k_norm_w)
}
