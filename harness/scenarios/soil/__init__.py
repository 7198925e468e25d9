"""Soil-property mapping with a compact track loader's blade (soil paper): scenarios ``soil-blind-map``,
``soil-homogeneous`` and ``soil-sweep`` on one episode (``soil_episode``); see README.md here."""
