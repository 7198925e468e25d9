"""The thesis's terrain leveling missions (Cook thesis ch. 4): scenario ``level-grid`` and the
``level-sweep`` study (figs. 4.2-4.5)."""
