"""`python -m serverbench` runs the CLI."""
from serverbench.cli import main

if __name__ == "__main__":
    main()
