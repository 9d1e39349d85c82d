-- Dropout on the decode path, with the weights written (t_weights_decode with dropout = true: at
-- dropout_p = 0 the two agree bit for bit): a bias tensor, ALiBi and a left window, an f16 KV cache.
return { name = "t_dropout_decode", heads_q = 4, heads_kv = 2, head_dim = 64, causal = true,
  window = { left = 50 }, mask = "bias", alibi = true, dtype = { kv = "f16" }, decode_max_q = 32, weights = true,
  dropout = true }
