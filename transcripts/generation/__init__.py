"""Generation: the ways to start a run for a generator (start.py), queueing it and the tasks a
worker runs for it (tasks.py), the body that generates one run into the ledger (runner.py) and
its leases (leases.py); generators/ holds the generators themselves. The worker process that
runs the tasks is `transcripts.worker`."""
