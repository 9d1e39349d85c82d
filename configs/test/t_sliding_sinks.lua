-- Causal sliding window with attention sinks (global tokens).
return { name = "t_sliding_sinks", heads_q = 4, heads_kv = 2, head_dim = 32, causal = true,
  sliding_window = 16, global_tokens = 3 }
