"""League seasons: the season spec, the schedule, the Redis store, the driver that runs
seasons inside the referee, the standings and ratings, and seed verification. (The League
API's season methods are in ``referee.gateway.seasons_api``; the demo and the policy bot
are in ``referee.cli``.)

Module map::

    model.py      SeasonSpec (+ TOML loading), SeasonOptions, seed derivation
    schedule.py   tables (all k-subsets or a balanced design), seats, duplicate deals
    standings.py  standings rows: a pure function of the committed results
    ratings.py    Bradley-Terry Elo (MLE + 95% interval), live Elo, OpenSkill
    store.py      the season in Redis: create / start / pause / resume / cancel, counters
    driver.py     ``run_driver``: enqueues matches, consumes results, finishes seasons
    embargo.py    sealed boards: no spectator sees a board a table is still playing
    verify.py     re-deal every match from the revealed seed and compare with the records
"""
