-- A paged f32 cache of three keys a page (fewer than any kernel's block of
-- keys), key-major pools: GQA, causal, a window with global tokens (whose
-- pages stay), and the strided pattern (8), which a paged cache takes on its key tiles.
return { name = "t_paged_p3", heads_q = 6, heads_kv = 2, head_dim = 48, causal = true, sliding_window = 40,
  global_tokens = 4, sparse = { pattern = "strided", stride = 8 }, paged = { page = 3 } }
