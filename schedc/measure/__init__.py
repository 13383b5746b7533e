"""Readers of measurements made outside schedc (nccl-tests logs), for calibration and
predicted-against-measured reports. A front end like `schedc.language`: base imports only."""
