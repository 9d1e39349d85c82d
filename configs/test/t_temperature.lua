-- Llama 4's attention temperature (a short floor, so that it changes along the test shapes) with
-- sinks, a sliding window and a bf16 KV cache: the prefill path and both decode kernels
-- (streaming and blocked) scale each query row by its position's factor.
return { name = "t_temperature", heads_q = 8, heads_kv = 4, head_dim = 64, causal = true, sliding_window = 40,
  sinks = true, temperature = { scale = 0.1, floor = 16 }, dtype = { kv = "bf16" } }
