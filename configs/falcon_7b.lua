-- Falcon-7B: 71 query heads sharing one KV head (MQA), head dim 64, causal.
return {
  name = "falcon_7b",
  heads_q = 71,
  heads_kv = 1,
  head_dim = 64,
  causal = true,
  rope = { style = "neox", theta = 10000 }, -- RoPE on the query rows, the cached keys stored rotated
}
