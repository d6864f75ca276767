"""Pure Python of the webhooks: signatures and the retry schedule (no Django here)."""
