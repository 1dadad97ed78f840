"""The worker: the process that claims queued tasks (process.py), its liveness beats
(liveness.py), the periodic sweeps (sweeps.py) and the supervisor `manage.py serve` keeps it
running with (supervisor.py). The task bodies are the services' own."""
