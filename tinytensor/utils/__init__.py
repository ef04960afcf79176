"""Training helpers: ``progress_bar`` (alias ``train_bar``) and ``EarlyStopping``.

tqdm, which draws the bars, is imported only when a bar is first used.
"""

from .early_stopping import EarlyStopping
from .progress import progress_bar, train_bar

__all__ = ["EarlyStopping", "progress_bar", "train_bar"]
