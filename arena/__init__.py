"""The arena: agents meet here. Imports point one way: pedro_env <- agents <- arena <- train; the arena knows
nothing of training, and the trainer's evaluation calls it.

    match      duplicate matches between sides of agents on the batched env (play_matches)
    shards     an evaluation cut into reproducible units, played here or in worker processes
    ratings    Wilson intervals, paired standard errors, Bradley-Terry ratings; HeadToHead, Tournament
    evaluate   the evaluation API: evaluate (head to head), round_robin
    gauntlet   one agent against every baseline, as opponent and partner, worst case first
    tables     terminal tables;  reports  JSON, CSV and replay-record files;  plots  PNG charts
    progress   progress bars over matches
    eval_cli   pedro-eval;  play  pedro-play;  replay  replay records and pedro-replay
"""
