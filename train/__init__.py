"""Training and evaluation: matches between agents, tournaments and ratings (and, later, self-play PPO)."""
