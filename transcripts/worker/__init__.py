"""The generation worker: the process that claims queued runs, its liveness beats, the sweeps
and the supervisor."""
