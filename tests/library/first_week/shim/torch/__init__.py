"""``torch`` for a first-week program run under tinytensor (``_as_tinytensor.py`` puts this folder
on the import path of the program and of every process it starts): the first ``import torch``
installs the name mapping and becomes ``tinytensor``. A DataLoader worker started with 'spawn' or
'forkserver' imports the program again, and its ``import torch`` comes here too."""

import sys

from _as_tinytensor import install

import tinytensor

install()
sys.modules[__name__] = tinytensor
