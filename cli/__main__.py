"""``python -m toolwire.cli``."""

from . import main

raise SystemExit(main())
