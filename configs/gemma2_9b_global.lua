-- Gemma-2-9B global (odd) layers: 16 query heads, 8 KV heads, head dim 256, causal over the whole context, logit softcap 50.
return {
  name = "gemma2_9b_global",
  heads_q = 16,
  heads_kv = 8,
  head_dim = 256,
  causal = true,
  softcap = 50.0,
  scale = 1 / 16, -- query_pre_attn_scalar = 256
  rope = { style = "neox", theta = 10000 }, -- RoPE on the query rows, the cached keys stored rotated
}
