-- Attention weights on the decode path (up to 32 query rows; a group of 2 would take the streaming
-- path without weights): a bias tensor, ALiBi and a left window, an f16 KV cache.
return { name = "t_weights_decode", heads_q = 4, heads_kv = 2, head_dim = 64, causal = true,
  window = { left = 50 }, mask = "bias", alibi = true, dtype = { kv = "f16" }, decode_max_q = 32, weights = true }
