"""The compiled rules: numba kernels that deal, step, list legal actions and encode observations.

Every kernel loops over the games of a batch, one game at a time, in compiled code; the same kernels
serve a batch of one (the AEC env) and a batch of a million. With ``NUMBA_DISABLE_JIT=1`` they run as
plain Python (slowly), for a debugger. One module a part of the rules, each importing the layouts it
reads from their one owner (numba freezes those module globals into the compiled code, so this costs
nothing at run time):

- :mod:`~pedro_env.kernels.inputs`: the kernels' inputs (state fields, config params, statics);
- :mod:`~pedro_env.kernels.bits`: card sets as uint64 bits, the state buffer's typed views;
- :mod:`~pedro_env.kernels.dealing`: hashed decks and dealers, a deal laid out, a match started;
- :mod:`~pedro_env.kernels.bidding`: bids, passes and naming trumps;
- :mod:`~pedro_env.kernels.exchange`: discard and draw;
- :mod:`~pedro_env.kernels.tricks`: following suit, a card played, tricks won;
- :mod:`~pedro_env.kernels.scoring`: the deal's points, made or set, rewards, the match's end;
- :mod:`~pedro_env.kernels.observations`: legal-action masks and observations;
- :mod:`~pedro_env.kernels.steps`: the step loop and the environments' fused steps;
- :mod:`~pedro_env.kernels.cache`: where the compiled code is kept, stamped with every source it depends on.

How the envs keep a call cheap (entry points without dispatch, loops without reference counting, no
literal arguments between kernels): docs/engine.md.
"""

from pedro_env.kernels import cache  # noqa: F401 - installs the cache stamping before any kernel is compiled
