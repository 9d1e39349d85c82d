-- Logit soft-capping with a small cap and a causal window.
return { name = "t_softcap_window", heads_q = 2, head_dim = 48, softcap = 2.5, causal = true,
  window = { left = 9, right = 0 } }
