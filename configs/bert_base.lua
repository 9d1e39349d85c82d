-- BERT-base: 12 heads, head dim 64, bidirectional, padded batches (per-sequence key lengths).
return {
  name = "bert_base",
  heads_q = 12,
  head_dim = 64,
  padding = true,
}
