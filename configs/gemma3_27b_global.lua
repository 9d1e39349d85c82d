-- Gemma-3-27B full-attention layers (every sixth: 10 of 62): 32 query heads, 16 KV heads (GQA), head dim
-- 128, causal; scores scaled by query_pre_attn_scalar 168; RoPE with rope_theta 1000000 and linear
-- scaling by 8; q_norm and k_norm as qk_norm, Gemma's (1 + w) weights.
-- From `attngen import-hf` of its config.json (tests/hf/gemma3_27b.json).
return {
  name = "gemma3_27b_global",
  heads_q = 32,
  heads_kv = 16,
  head_dim = 128,
  causal = true,
  scale = 168 ^ -0.5, -- 1 / sqrt(query_pre_attn_scalar)
  rope = { style = "neox", theta = 1000000, scaling = { type = "linear", factor = 8 } },
  qk_norm = { eps = 1e-6, offset = 1 }, -- rms_norm_eps; weights at run time (args->q_norm_w, k_norm_w)
}
