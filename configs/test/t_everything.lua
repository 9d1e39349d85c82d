-- Every feature at once: GQA, causal sliding window, sinks, padding, bias, softcap, ALiBi; the
-- prefill path's keys packed and run a tile at a time (prefill_chunk).
return { name = "t_everything", heads_q = 4, heads_kv = 2, head_dim = 72, causal = true,
  sliding_window = 40, global_tokens = 4, padding = true, mask = "bias", softcap = 30.0,
  alibi = true, prefill_chunk = 128 }
