-- Chunked attention (Llama 4) under causal: chunks of 16 keys, smaller than the tiles (24 x 32),
-- global tokens exempt from them, padded batches, GQA with 3 query heads per kv head.
return { name = "t_chunk", heads_q = 6, heads_kv = 2, head_dim = 24, causal = true, chunk = 16,
  global_tokens = 3, padding = true, tile = { q = 24, kv = 32 } }
