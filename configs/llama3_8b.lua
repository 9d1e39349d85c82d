-- Llama-3-8B: 32 query heads, 8 KV heads (GQA), head dim 128, causal; RoPE (rope_theta 500000,
-- transformers' rotate_half pairs) on the query rows, the cached keys stored rotated.
return {
  name = "llama3_8b",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  rope = { style = "neox", theta = 500000 },
}
