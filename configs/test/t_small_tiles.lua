-- Small, odd query tiles: many edge tiles with causal, padding and sinks; the prefill path
-- packs and runs the keys a tile at a time (prefill_chunk), the rows' sums carried across.
return { name = "t_small_tiles", heads_q = 2, head_dim = 17, causal = true, padding = true,
  sliding_window = 20, global_tokens = 2, tile = { q = 7, kv = 16 }, prefill_chunk = 16 }
