-- A paged f32 cache of three keys a page (fewer than any kernel's block of
-- keys), key-major pools: GQA, causal, a window with global tokens (whose
-- pages stay).
return { name = "t_paged_p3", heads_q = 6, heads_kv = 2, head_dim = 48, causal = true, sliding_window = 40,
  global_tokens = 4, paged = { page = 3 } }
