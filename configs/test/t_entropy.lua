-- Each row's attention entropy (entropy = true) on the prefill and the blocked decode path: a causal
-- sliding window, GQA, padding, ALiBi, an f16 KV cache and the keys run a chunk at a time.
return { name = "t_entropy", heads_q = 6, heads_kv = 2, head_dim = 40, causal = true, sliding_window = 37,
  padding = true, alibi = true, dtype = { kv = "f16" }, prefill_chunk = 128, entropy = true }
