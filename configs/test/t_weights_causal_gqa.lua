-- Attention weights (weights = true) with a causal mask, padding and GQA, in small tiles, packed
-- and run a key tile at a time (prefill_chunk).
return { name = "t_weights_causal_gqa", heads_q = 6, heads_kv = 2, head_dim = 40, causal = true, padding = true,
  tile = { q = 16, kv = 32 }, weights = true, prefill_chunk = 32 }
