import sys

from verify.cli import main

sys.exit(main())
