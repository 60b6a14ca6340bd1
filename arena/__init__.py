"""The arena: agents meet here. Duplicate matches on the batched env, head to heads, round robins and the
gauntlet, ratings and their intervals, reports (tables, JSON, CSV, charts), replay records, and terminal play.

Imports point one way: pedro_env <- agents <- arena <- train. The arena knows nothing of training; the
trainer's evaluation calls it.
"""
