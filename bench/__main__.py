"""`python -m bench [--quick] [--only GROUP ...]`: see `bench.main`."""

from bench.main import main

if __name__ == "__main__":
    main()
