"""``pedro-table``: the game in the browser. Play against the agents, watch any saved match, and see what a
policy and the search make of every decision (docs/table.md).

:mod:`table.views` turns the engine's state into the JSON a page draws; :mod:`table.roster` is the
agents on offer; :mod:`table.analysis` asks them about a decision; :mod:`table.sessions` holds the
matches and replays; :mod:`table.app` is the HTTP API and :mod:`table.cli` the command. The page in
``table/static/`` is plain HTML, CSS and JavaScript: it draws what the server sends and decides no rule.
"""
