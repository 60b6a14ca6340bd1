"""Self-play PPO: the trainer, its configs, the opponent league, the teacher, run directories and ``pedro-train``.

Imports point one way: pedro_env <- agents <- arena <- train.
"""
