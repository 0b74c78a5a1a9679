"""The settlement pipeline every CLI-style host shares, with its spill, staged values
and reason log. Imports only ``facts`` among the rooms of ``hosts``."""
