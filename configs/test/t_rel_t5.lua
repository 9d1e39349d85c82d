-- T5's learned relative position bias (a decoder's: unidirectional buckets) with a causal mask,
-- GQA and padding; 16 buckets up to distance 40, so that the quick shapes reach the exact, the
-- logarithmic and the clamped buckets.
return { name = "t_rel_t5", heads_q = 4, heads_kv = 2, head_dim = 16, causal = true, padding = true, scale = 1.0,
  backward = true,
  rel_bias = { kind = "t5", buckets = 16, max_distance = 40, bidirectional = false } }
