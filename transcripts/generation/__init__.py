"""Generation: start runs for a generator (start.py), and the worker that streams them into the
ledger (worker.py, tasks.py); generators/ holds the generators themselves."""
