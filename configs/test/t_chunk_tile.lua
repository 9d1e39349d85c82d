-- Chunks as large as the tiles (32 x 32), top-left causal, a sliding window inside the chunk.
return { name = "t_chunk_tile", heads_q = 2, head_dim = 16, causal = "top_left", chunk = 32,
  sliding_window = 20, tile = { q = 32, kv = 32 } }
