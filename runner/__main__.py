import sys

from runner.job import main

sys.exit(main(sys.argv[1:]))
