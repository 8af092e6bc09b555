# examples/python: the ports' modules are imported by name from this directory.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
