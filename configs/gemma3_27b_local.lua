-- Gemma-3-27B sliding-window layers (52 of 62): 32 query heads, 16 KV heads (GQA), head dim 128, causal,
-- a 1024-key sliding window; scores scaled by query_pre_attn_scalar 168; RoPE with the local base
-- (rope_local_base_freq 10000, unscaled); q_norm and k_norm as qk_norm, Gemma's (1 + w) weights.
-- From `attngen import-hf` of its config.json (tests/hf/gemma3_27b.json).
return {
  name = "gemma3_27b_local",
  heads_q = 32,
  heads_kv = 16,
  head_dim = 128,
  causal = true,
  sliding_window = 1024, -- keys including the current one: window.left = 1023
  scale = 168 ^ -0.5, -- 1 / sqrt(query_pre_attn_scalar)
  rope = { style = "neox", theta = 10000 }, -- RoPE on the query rows, the cached keys stored rotated
  qk_norm = { eps = 1e-6, offset = 1 }, -- rms_norm_eps; weights at run time (args->q_norm_w, k_norm_w)
}
