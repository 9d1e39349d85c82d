-- RoPE (neox pairs) on the first 48 of 64 dims, with Llama 3's frequency scaling (a short original
-- context, so that all three bands of the blend are in use): GQA, causal, padded batches, f32. The
-- prefill path and both decode kernels rotate each query row at its position. qk_norm in Gemma's
-- (1 + w) form: each query row (and each appended key row) RMS-normed before it is rotated.
return { name = "t_rope", heads_q = 8, heads_kv = 2, head_dim = 64, causal = true, padding = true,
  rope = { dim = 48, theta = 10000, scaling = { type = "llama3", factor = 4, low_freq_factor = 1,
    high_freq_factor = 4, original_max_position = 256 } }, qk_norm = { eps = 1e-6, offset = 1 } }
