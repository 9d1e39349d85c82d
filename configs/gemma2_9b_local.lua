-- Gemma-2-9B local (even) layers: 16 query heads, 8 KV heads, head dim 256, causal, 4096-key sliding window, logit softcap 50.
return {
  name = "gemma2_9b_local",
  heads_q = 16,
  heads_kv = 8,
  head_dim = 256,
  causal = true,
  sliding_window = 4096,
  softcap = 50.0,
  scale = 1 / 16, -- query_pre_attn_scalar = 256: scores are scaled by 256^-0.5
  rope = { style = "neox", theta = 10000 }, -- RoPE on the query rows, the cached keys stored rotated
}
