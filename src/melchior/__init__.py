"""melchior: the layer through which agents on one machine name, find, reach and refuse
one another. It imports nothing from magi_code (a test enforces it)."""
