-- shared_kv on llama.cpp's q4_0 blocks: V is the first of each K row's 2
-- blocks (D = 64, Dv = 32), GQA, chunked local attention and a softcap, the latent rows in pages of
-- 5 keys (HND), as a paged MLA cache keeps them.
return {
  name = "t_shared_kv_q4",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 64,
  head_dim_v = 32,
  shared_kv = true,
  causal = true,
  chunk = 24,
  softcap = 30,
  dtype = { kv = "q4_0" },
  paged = { page = 5, order = "HND" },
}
