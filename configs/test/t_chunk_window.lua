-- Chunks of 40 keys, which divide neither tile (16 x 32), with a two-sided window and no causal
-- mask, one global token, MQA.
return { name = "t_chunk_window", heads_q = 3, heads_kv = 1, head_dim = 12, chunk = 40,
  window = { left = 25, right = 6 }, global_tokens = 1, tile = { q = 16, kv = 32 } }
