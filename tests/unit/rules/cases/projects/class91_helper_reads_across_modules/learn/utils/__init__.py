"""The package's conversion helpers, re-exported where its other modules import them."""

from learn.utils.convert import as_array, first_valid, to_float
