"""`melchior` command line: one subcommand per verb of the layer."""

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(f"melchior: unknown command {args[:1]!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
