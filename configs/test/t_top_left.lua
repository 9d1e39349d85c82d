-- Top-left causal (PyTorch's is_causal: query row i at position i) on padded batches, with a
-- sliding window, sinks and ALiBi (all of them at the top-left positions), GQA, small tiles; RoPE
-- (gptj pairs) from the caller's cos / sin table, which the top-left positions 0..Lq-1 always index.
return { name = "t_top_left", heads_q = 4, heads_kv = 2, head_dim = 20, causal = "top_left",
  sliding_window = 12, global_tokens = 2, padding = true, alibi = true, tile = { q = 16, kv = 32 },
  rope = { style = "gptj", table = true } }
