"""The scaled timings of the integration, chaos, load and deploy runs: D=2s, R=1.5s, P=0.3s, so
scenarios take seconds."""
D, R, P = 2.0, 1.5, 0.3
TIMINGS = ["--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "300ms"]
