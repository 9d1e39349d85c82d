-- GPT-2 (124M): 12 heads, head dim 64, causal.
return {
  name = "gpt2",
  heads_q = 12,
  head_dim = 64,
  causal = true,
}
