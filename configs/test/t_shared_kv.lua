-- shared_kv at a small head dim: V is the first 24 of each K row's 40
-- values, with GQA, a sliding window, a boolean mask, the weights and small
-- tiles, on an f32 cache.
return {
  name = "t_shared_kv",
  heads_q = 6,
  heads_kv = 2,
  head_dim = 40,
  head_dim_v = 24,
  shared_kv = true,
  causal = true,
  sliding_window = 20,
  mask = "bool",
  weights = true,
  tile = { q = 24, kv = 32 },
}
