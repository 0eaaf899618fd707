"""The bench's own tests: python3 -m unittest discover -s bench/tests -t .
(from the top of the checkout; meson test runs them as `bench`). Pure
functions only: no server, no clock, no sleep."""
