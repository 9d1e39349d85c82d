-- Mistral-7B v0.1: 32 query heads, 8 KV heads, head dim 128, causal, sliding window of 4096 keys;
-- RoPE (rope_theta 10000, rotate_half pairs) on the query rows, the cached keys stored rotated.
return {
  name = "mistral_7b",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  sliding_window = 4096, -- keys including the current one: window.left = 4095
  rope = { style = "neox", theta = 10000 },
}
