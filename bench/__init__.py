"""Benchmarks that print figures. `make bench` runs every bench_*.py module's main()."""
