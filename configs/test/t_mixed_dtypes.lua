-- Three storage types at once: bf16 Q, f16 K/V, f16 O; GQA 4/2 with a head dim below a vector;
-- prefill_chunk = 0: every key packed at once, however long the cache.
return { name = "t_mixed_dtypes", heads_q = 4, heads_kv = 2, head_dim = 3, causal = true,
  dtype = { q = "bf16", kv = "f16", o = "f16" }, prefill_chunk = 0 }
