-- Strided pattern with a stride of 40, which divides neither tile (16 x 32), inside a sliding
-- window of 100 keys, MQA, odd head dim, and ALiBi, whose distances keep the pattern on the key
-- tiles' per-key tests instead of gathered panels; the keys packed and run a tile at a time.
return { name = "t_sparse_strided_window", heads_q = 3, heads_kv = 1, head_dim = 13, causal = true,
  sparse = { pattern = "strided", stride = 40 }, sliding_window = 100, alibi = true, tile = { q = 16, kv = 32 },
  prefill_chunk = 32 }
