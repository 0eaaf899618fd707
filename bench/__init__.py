"""sluice's benchmarks, as a package: bench/run is the one entry; it runs
`python3 -m bench` from the top of the checkout (bench/README.md says what
each module holds and how to add a scenario).

Python standard library only, as Debian's python3 has it."""
